"""Tools: the @tool decorator (schema, injection, metadata), the Calculator, the registry."""

from __future__ import annotations

import asyncio
import builtins
import inspect
import math
import os
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from tether import Agent, ModelResponse, ReAct, ScriptedModel, StopReason, ToolCall, tool
from tether.tools import (
    Calculator,
    FunctionTool,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolDefinitionError,
    ToolMeta,
    ToolRegistry,
)
from tether.tools.calculator import MAX_EXPRESSION_CHARS, CalculatorError, evaluate


def turn(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=calls)


def ctx(call_id: str = "c1") -> ToolContext:
    return ToolContext(session_id="s1", call_id=call_id, step=1)


# -- @tool: the schema comes from the signature ---


def test_schema_is_built_from_the_signature() -> None:
    @tool
    def search(query: str, limit: int = 5, exact: bool = False,
               tags: list[str] | None = None, ratio: float = 0.5) -> str:
        """Search the catalogue.

        Returns the matching items, best first.
        """
        return query

    assert isinstance(search, FunctionTool)
    spec = search.spec
    assert spec.name == "search"
    params = spec.parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["query"]
    props = params["properties"]
    assert list(props) == ["query", "limit", "exact", "tags", "ratio"]
    assert props["query"] == {"type": "string"}
    assert props["limit"] == {"type": "integer", "default": 5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["tags"]["default"] is None
    assert {"type": "array", "items": {"type": "string"}} in props["tags"]["anyOf"]
    assert "title" not in params
    assert all("title" not in p for p in props.values())


def test_docstring_becomes_the_description() -> None:
    @tool
    def weather(city: str) -> str:
        """Current weather for a city.

        Give the city's English name.
        """
        return city

    assert weather.spec.description == ("Current weather for a city.\n\n"
                                        "Give the city's English name.")
    assert weather.__doc__ == weather.spec.description
    assert inspect.getdoc(weather) == weather.spec.description


def test_name_can_be_overridden() -> None:
    @tool(name="find_orders")
    def lookup(customer: str) -> str:
        """Find orders."""
        return customer

    assert lookup.name == "find_orders"
    assert lookup.spec.name == "find_orders"
    assert repr(lookup) == "<tool find_orders>"


def test_no_parameters_gives_an_empty_closed_object() -> None:
    @tool
    def now() -> str:
        """The time."""
        return "noon"

    params = now.spec.parameters
    assert params["properties"] == {}
    assert params.get("required", []) == []
    assert params["additionalProperties"] is False
    assert now.validate({}) == {}
    with pytest.raises(ToolArgumentError) as err:
        now.validate({"x": 1})
    assert err.value.field == "x"


def test_decorated_function_is_a_tool_and_still_callable_directly() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert isinstance(add, Tool)
    assert add(2, 3) == 5
    assert add(a=4, b=5) == 9


@pytest.mark.parametrize("doc", [None, "", "   \n  "])
def test_missing_docstring_is_a_definition_error(doc: str | None) -> None:
    def nodoc(x: int) -> int:
        return x

    nodoc.__doc__ = doc
    with pytest.raises(ToolDefinitionError, match="docstring") as err:
        tool(nodoc)
    assert "'nodoc'" in str(err.value)
    assert "description" in str(err.value)


def test_missing_annotation_is_a_definition_error_naming_the_parameter() -> None:
    with pytest.raises(ToolDefinitionError) as err:
        @tool
        def f(a: int, b) -> int:  # type: ignore[no-untyped-def]
            """Doc."""
            return a

    message = str(err.value)
    assert "'b'" in message
    assert "type annotation" in message
    assert "'f'" in message


def test_var_positional_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError, match=r"\*args") as err:
        @tool
        def f(*args: int) -> int:
            """Doc."""
            return sum(args)

    assert "declare each argument" in str(err.value)


def test_var_keyword_is_a_definition_error() -> None:
    with pytest.raises(ToolDefinitionError, match="kwargs"):
        @tool
        def f(a: int, **kwargs: int) -> int:
            """Doc."""
            return a


def test_positional_only_parameter_is_a_definition_error() -> None:
    # the runtime passes arguments by name, so such a tool would fail on every call
    with pytest.raises(ToolDefinitionError, match="positional-only") as err:
        @tool
        def f(a: int, /) -> int:
            """Doc."""
            return a

    assert "'a'" in str(err.value)


def test_definition_error_is_a_type_error() -> None:
    assert issubclass(ToolDefinitionError, TypeError)


def test_decorator_with_options_reports_errors_too() -> None:
    with pytest.raises(ToolDefinitionError, match="docstring"):
        @tool(side_effect=True)
        def f(a: int) -> int:
            return a


# -- @tool: validation ---


@tool
def typed(name: str, count: int, scale: float = 1.0) -> str:
    """A typed tool."""
    return name


def test_validate_fills_defaults() -> None:
    assert typed.validate({"name": "a", "count": 2}) == {"name": "a", "count": 2, "scale": 1.0}


@pytest.mark.parametrize(("arguments", "field"), [
    ({"count": 1}, "name"),
    ({"name": "a", "count": "many"}, "count"),
    ({"name": "a", "count": 1, "scale": "big"}, "scale"),
    ({"name": "a", "count": 1, "extra": True}, "extra"),
    ({"name": ["not", "a", "string"], "count": 1}, "name"),
])
def test_validate_names_the_offending_field(arguments: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolArgumentError) as err:
        typed.validate(arguments)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")


# -- @tool: injected server-side context ---


def test_injected_parameters_are_hidden_from_the_schema() -> None:
    @tool
    def who(city: str, ctx: ToolContext, user_id: str | None, tenant_id: str | None,
            session_id: str, context: ToolContext) -> str:
        """Who asks."""
        return city

    props = who.spec.parameters["properties"]
    assert list(props) == ["city"]
    assert who.spec.parameters["required"] == ["city"]
    assert who.validate({"city": "Oslo"}) == {"city": "Oslo"}


def test_injected_parameters_receive_the_sessions_values() -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def who(city: str, ctx: ToolContext, user_id: str | None, tenant_id: str | None,
            session_id: str) -> str:
        """Who asks."""
        seen.append({"city": city, "ctx": ctx, "user_id": user_id, "tenant_id": tenant_id,
                     "session_id": session_id})
        return "ok"

    model = ScriptedModel([turn(ToolCall("c1", "who", {"city": "Oslo"})),
                           turn(ToolCall("c2", "who", {"city": "Rome"})), "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[who])
    session = agent.session("who?", user_id="u1", tenant_id="t1")
    result = session.run()

    assert result.answer == "done"
    assert [s["city"] for s in seen] == ["Oslo", "Rome"]
    first, second = seen
    assert first["user_id"] == "u1"
    assert first["tenant_id"] == "t1"
    assert first["session_id"] == session.id == result.session_id
    c = first["ctx"]
    assert isinstance(c, ToolContext)
    assert (c.session_id, c.call_id, c.user_id, c.tenant_id) == (session.id, "c1", "u1", "t1")
    assert c.step == 1
    assert second["ctx"].call_id == "c2"
    assert second["ctx"].step == 2


def test_injected_values_are_none_without_a_user_and_differ_per_session() -> None:
    seen: list[tuple[str | None, str | None, str]] = []

    @tool
    async def who(user_id: str | None, tenant_id: str | None, session_id: str) -> str:
        """Who asks."""
        seen.append((user_id, tenant_id, session_id))
        return "ok"

    model = ScriptedModel([turn(ToolCall("c1", "who", {})), "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[who])
    a = agent.session("who?")
    b = agent.session("who?", user_id="u2", tenant_id="t2")
    a.run()
    b.run()
    assert seen == [(None, None, a.id), ("u2", "t2", b.id)]
    assert a.id != b.id


def test_model_cannot_spoof_an_injected_parameter() -> None:
    seen: list[str | None] = []

    @tool
    def who(city: str, user_id: str | None) -> str:
        """Who asks."""
        seen.append(user_id)
        return "ok"

    model = ScriptedModel([
        turn(ToolCall("c1", "who", {"city": "Oslo", "user_id": "admin"})),
        turn(ToolCall("c2", "who", {"city": "Oslo"})), "done"])
    agent = Agent(model=model, reasoning=ReAct(), tools=[who])
    result = agent.run("who?", user_id="u1")

    spoof = result.trajectory.steps[0].results[0]
    assert spoof.status == "rejected"
    assert "'user_id'" in spoof.content
    assert seen == ["u1"]  # only the honest call ran, and it got the real user


# -- @tool: sync and async ---


def test_sync_and_async_tools_both_run() -> None:
    threads: dict[str, threading.Thread] = {}

    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        threads["sync"] = threading.current_thread()
        return text.upper()

    @tool
    async def whisper(text: str) -> str:
        """Lower-case the text."""
        await asyncio.sleep(0)
        threads["async"] = threading.current_thread()
        return text.lower()

    assert not shout.is_async
    assert whisper.is_async
    model = ScriptedModel([
        turn(ToolCall("c1", "shout", {"text": "Hi"}), ToolCall("c2", "whisper", {"text": "Hi"})),
        "done"])
    result = Agent(model=model, reasoning=ReAct(), tools=[shout, whisper]).run("go")
    assert result.stop_reason is StopReason.FINISHED
    contents = [r.content for r in result.trajectory.steps[0].results]
    assert contents == ["HI", "hi"]
    # a blocking tool runs off the event loop's thread, on a daemon thread
    assert threads["sync"] is not threads["async"]
    assert threads["sync"].daemon


async def test_invoke_direct_sync_and_async() -> None:
    @tool
    def double(n: int) -> int:
        """Double."""
        return 2 * n

    @tool
    async def triple(n: int, ctx: ToolContext) -> str:
        """Triple."""
        return f"{3 * n}@{ctx.call_id}"

    assert await double.invoke({"n": 4}, ctx()) == 8
    assert await triple.invoke({"n": 4}, ctx("k9")) == "12@k9"


async def test_sync_tool_exception_propagates_from_invoke() -> None:
    @tool
    def broken() -> str:
        """Broken."""
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await broken.invoke({}, ctx())


# -- @tool: metadata ---


def test_default_metadata_is_the_cautious_one() -> None:
    @tool
    def f() -> str:
        """Doc."""
        return ""

    m = f.meta
    assert m == ToolMeta()
    assert (m.tags, m.risk, m.side_effect, m.egress, m.output_trust, m.timeout,
            m.idempotent, m.owner) == (frozenset(), "low", False, False, "trusted", 30.0,
                                       False, None)


def test_metadata_lands_on_meta() -> None:
    @tool(tags=["payments", "refunds"], risk="high", side_effect=True, egress=True,
          output_trust="untrusted", timeout=2.5, idempotent=True, owner="billing")
    def refund(order_id: str) -> str:
        """Refund an order."""
        return order_id

    m = refund.meta
    assert m.tags == frozenset({"payments", "refunds"})
    assert isinstance(m.tags, frozenset)
    assert m.risk == "high"
    assert m.side_effect is True
    assert m.egress is True
    assert m.output_trust == "untrusted"
    assert m.timeout == 2.5
    assert m.idempotent is True
    assert m.owner == "billing"
    assert m.to_dict() == {"tags": ["payments", "refunds"], "risk": "high", "side_effect": True,
                           "egress": True, "output_trust": "untrusted", "owner": "billing",
                           "idempotent": True}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"risk": "extreme"}, "risk must be one of"),
    ({"risk": "LOW"}, "risk must be one of"),
    ({"output_trust": "maybe"}, "output_trust"),
    ({"timeout": math.nan}, "timeout must be a positive number"),
    ({"timeout": -1.0}, "timeout must be a positive number"),
    ({"timeout": 0}, "timeout must be a positive number"),
])
def test_invalid_metadata_raises(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tool(**kwargs)
    with pytest.raises(ValueError, match=match):
        ToolMeta(**kwargs)


def test_tags_given_as_a_single_string_are_rejected() -> None:
    # frozenset("payments") would be a set of letters: a policy on "payments" would miss it
    with pytest.raises(TypeError, match="tags must be a collection"):
        tool(tags="payments")
    with pytest.raises(TypeError, match="tags must be a collection"):
        ToolMeta(tags="payments")  # type: ignore[arg-type]


# -- Calculator ---


@pytest.mark.parametrize(("expression", "expected"), [
    ("17 * 23", "391"),
    ("17*23", "391"),
    ("  17 * 23  ", "391"),
    ("1 + 2 * 3", "7"),
    ("(1 + 2) * 3", "9"),
    ("2 ** 3 ** 2", "512"),
    ("-2 ** 2", "-4"),
    ("-3 + 5", "2"),
    ("--4", "4"),
    ("+7", "7"),
    ("7 / 2", "3.5"),
    ("8 / 2", "4"),
    ("7 // 2", "3"),
    ("-7 // 2", "-4"),
    ("7 % 3", "1"),
    ("2 ** 10", "1024"),
    ("2 ** -1", "0.5"),
    ("0.1 + 0.2", str(0.1 + 0.2)),
    ("1.5 * 4", "6"),
    ("1e3", "1000"),
    ("pi", str(math.pi)),
    ("e", str(math.e)),
    ("2 * pi", str(2 * math.pi)),
    ("sqrt(16)", "4"),
    ("sqrt(2)", str(math.sqrt(2))),
    ("abs(-2.5)", "2.5"),
    ("round(pi, 2)", "3.14"),
    ("round(1234, -2)", "1200"),
    ("max(1, 5, 3)", "5"),
    ("min(4, -1)", "-1"),
    ("floor(2.7) + ceil(2.1)", "5"),
    ("log(e)", "1"),
    ("exp(0)", "1"),
    ("10 ** 300", str(10**300)),
    ("10 ** 400 / 10 ** 399", "10"),
])
async def test_calculator_arithmetic(expression: str, expected: str) -> None:
    calc = Calculator()
    args = calc.validate({"expression": expression})
    assert await calc.invoke(args, ctx()) == expected


@pytest.mark.parametrize(("expression", "fragment"), [
    ("__import__('os').system('x')", "unsupported element"),
    ("().__class__", "unsupported element"),
    ("().__class__.__bases__[0].__subclasses__()", "unsupported element"),
    ("x + 1", "unsupported element 'x'"),
    ("math.pi", "unsupported element"),
    ("(1).real", "unsupported element"),
    ("open('f')", "unsupported element"),
    ("eval('1')", "unsupported element"),
    ("sqrt(x=4)", "unsupported element"),
    ("sqrt(*[16])", "unsupported element"),
    ("[1, 2]", "unsupported element"),
    ("'a' * 3", "unsupported element"),
    ("True + 1", "unsupported element"),
    ("1j", "unsupported element"),
    ("lambda: 1", "unsupported element"),
    ("1 if 1 else 2", "unsupported element"),
    ("1 < 2", "unsupported element"),
    ("1 << 2", "unsupported element"),
    ("~1", "unsupported element"),
    ("9 ** 99999", "exponent larger than"),
    ("2 ** -99999", "exponent larger than"),
    ("1 / 0", "division by zero"),
    ("1 // 0", "division by zero"),
    ("1 % 0", "division by zero"),
    ("1.0 / 0.0", "division by zero"),
    ("1 +", "not an arithmetic expression"),
    ("1; import os", "not an arithmetic expression"),
    ("x = 1", "not an arithmetic expression"),
    ("", "not an arithmetic expression"),
    ("1" * (MAX_EXPRESSION_CHARS + 1), "longer than"),
    ("10 ** 309", "too large"),
    ("1e309", "too large"),
    ("-1e309", "too large"),
    ("1e309 - 1e309", "not a real number"),
    ("(-8) ** 0.5", "not a real number"),
    ("sqrt(-1)", "cannot compute"),
    ("log(0)", "cannot compute"),
    ("exp(1000)", "cannot compute"),
    ("2.0 ** 5000", "cannot compute"),
    ("min(5)", "cannot compute"),
    ("sqrt()", "cannot compute"),
    ("sqrt(1, 2)", "cannot compute"),
])
def test_calculator_rejects_with_a_usable_message(expression: str, fragment: str) -> None:
    with pytest.raises(CalculatorError) as err:
        evaluate(expression)
    assert fragment in str(err.value)


def test_unsupported_element_message_says_what_is_allowed() -> None:
    with pytest.raises(CalculatorError) as err:
        evaluate("foo(2)")
    message = str(err.value)
    for word in ("+ - * / // % **", "pi", "sqrt", "round"):
        assert word in message


def test_calculator_never_evaluates_code(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []

    def forbidden(name: str) -> Any:
        def fn(*args: Any, **kwargs: Any) -> Any:
            called.append(name)
            raise AssertionError(f"{name} was called")
        return fn

    monkeypatch.setattr(builtins, "eval", forbidden("eval"))
    monkeypatch.setattr(builtins, "exec", forbidden("exec"))
    monkeypatch.setattr(os, "system", forbidden("os.system"))
    assert evaluate("17 * 23") == 391
    for attack in ("__import__('os').system('x')", "().__class__", "globals()",
                   "__builtins__", "getattr(1, 'real')"):
        with pytest.raises(CalculatorError):
            evaluate(attack)
    assert called == []


def test_calculator_refuses_huge_work_quickly() -> None:
    # The Calculator is async pure CPU on the event loop, so its timeout cannot interrupt it:
    # every expression must be bounded. Run in a subprocess so a regression fails, not hangs.
    script = textwrap.dedent("""
        import time
        from tether.tools.calculator import CalculatorError, evaluate
        for expression in ["(10**10000)**10000", "round(1, -10**9)", "9**9999 * 9**9999 * "
                           "9**9999 * 9**9999 * 9**9999 * 9**9999", "((9**9)**9)**9**9"]:
            start = time.monotonic()
            try:
                evaluate(expression)
            except CalculatorError as exc:
                print("refused", round(time.monotonic() - start, 3), exc)
            else:
                print("computed", expression)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 4, proc.stdout
    for line in lines:
        word, seconds, *_ = line.split()
        assert word == "refused", line
        assert float(seconds) < 0.5, line


async def test_calculator_validate() -> None:
    calc = Calculator()
    assert calc.validate({"expression": "1+1"}) == {"expression": "1+1"}
    with pytest.raises(ToolArgumentError) as err:
        calc.validate({})
    assert err.value.field == "expression"
    with pytest.raises(ToolArgumentError) as err:
        calc.validate({"expression": 17})
    assert err.value.field == "expression"
    with pytest.raises(ToolArgumentError) as err:
        calc.validate({"expression": "1", "precision": 3})
    assert err.value.field == "precision"


def test_calculator_declares_itself() -> None:
    calc = Calculator()
    assert isinstance(calc, Tool)
    assert calc.name == calc.spec.name == "calculator"
    assert calc.meta.idempotent is True
    assert calc.meta.side_effect is False
    assert calc.meta.timeout == 2.0
    assert "math" in calc.meta.tags
    params = calc.spec.parameters
    assert params["required"] == ["expression"]
    assert params["additionalProperties"] is False
    assert repr(calc) == "Calculator()"


def test_calculator_end_to_end() -> None:
    model = ScriptedModel.tool_then_answer("calculator", {"expression": "17 * 23"}, "391")
    result = Agent(model=model, reasoning=ReAct(), tools=[Calculator()]).run("What is 17*23?")
    assert result.answer == "391"
    assert result.stop_reason is StopReason.FINISHED
    (r,) = result.trajectory.steps[0].results
    assert (r.name, r.status, r.content) == ("calculator", "ok", "391")


@pytest.mark.parametrize(("expression", "fragment"), [
    ("1 / 0", "division by zero"),
    ("__import__('os').system('echo pwned')", "unsupported element"),
    ("9 ** 99999", "exponent larger than"),
])
def test_calculator_errors_become_results_and_the_run_goes_on(expression: str,
                                                              fragment: str) -> None:
    model = ScriptedModel([turn(ToolCall("c1", "calculator", {"expression": expression})),
                           turn(ToolCall("c2", "calculator", {"expression": "2 + 2"})),
                           "4"])
    result = Agent(model=model, reasoning=ReAct(), tools=[Calculator()]).run("compute")
    assert result.stop_reason is StopReason.FINISHED
    assert result.answer == "4"
    bad = result.trajectory.steps[0].results[0]
    assert bad.status == "error"
    assert fragment in bad.content
    assert bad.content.startswith("Error: 'calculator' failed: CalculatorError")
    good = result.trajectory.steps[1].results[0]
    assert (good.status, good.content) == ("ok", "4")


# -- Registry ---


@tool
def alpha(x: int) -> int:
    """Alpha."""
    return x


@tool
def beta(x: int) -> int:
    """Beta."""
    return x


def test_registry_resolves_by_name_in_declaration_order() -> None:
    calc = Calculator()
    registry = ToolRegistry([beta, alpha, calc])
    assert registry.names == ("beta", "alpha", "calculator")
    assert len(registry) == 3
    assert list(registry) == [beta, alpha, calc]
    assert registry.get("alpha") is alpha
    assert registry.get("gamma") is None
    assert [s.name for s in registry.specs] == ["beta", "alpha", "calculator"]
    assert ToolRegistry().names == ()


def test_registry_rejects_duplicate_names() -> None:
    @tool(name="alpha")
    def other(y: str) -> str:
        """Another alpha."""
        return y

    with pytest.raises(ValueError, match="two tools are named 'alpha'"):
        ToolRegistry([alpha, other])
    with pytest.raises(ValueError, match="unique"):
        ToolRegistry([alpha, alpha])
    with pytest.raises(ValueError, match="'calculator'"):
        Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=[Calculator(), Calculator()])


def plain(x: int) -> int:
    """Not decorated."""
    return x


@pytest.mark.parametrize("thing", [plain, "calculator", None, 42, Calculator])
def test_registry_rejects_non_tools(thing: Any) -> None:
    with pytest.raises(TypeError, match="is not a tool") as err:
        ToolRegistry([alpha, thing])
    assert "@tool" in str(err.value)
    with pytest.raises(TypeError, match="is not a tool"):
        Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=[thing])


def test_agent_tools_are_frozen_into_the_registry() -> None:
    tools = [alpha]
    agent = Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=tools)
    tools.append(beta)  # changing the caller's list later does not change the recipe
    assert agent.registry.names == ("alpha",)
    assert agent.tools == (alpha,)
