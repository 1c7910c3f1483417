"""A plain signature is described and checked without pydantic, and exactly as pydantic would:
the same schema for every generated signature, and an accepted argument set only where pydantic
accepts it with the same result. Whatever the fast path declines still goes to pydantic (its
coercions and its error messages), and a run with plain tools never imports it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Literal, Optional, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, ValidationError, create_model

from tether import tool
from tether.tools.base import ToolArgumentError
from tether.tools.signature import PlainSignature, describe

SCALARS: list[Any] = [int, str, float, bool]


def annotations() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.sampled_from(SCALARS),
        st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True).map(
            lambda xs: Literal[tuple(xs)]),
        st.lists(st.integers(-3, 3), min_size=1, max_size=3, unique=True).map(
            lambda xs: Literal[tuple(xs)]))
    return st.recursive(leaves, lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t])), max_leaves=3)  # noqa: UP045


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6)


def pydantic_model(fields: dict[str, tuple[Any, Any]]) -> Any:
    return create_model("m", __config__=ConfigDict(extra="forbid"), **fields)


def pydantic_schema(fields: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    schema = pydantic_model(fields).model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


signatures = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d"]),
    st.tuples(annotations(), st.one_of(st.just(...), st.none(), st.integers(), st.text(max_size=3),
                                       st.lists(st.integers(), max_size=2))),
    max_size=4)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(signatures)
def test_the_schema_is_pydantics(fields: dict[str, tuple[Any, Any]]) -> None:
    plain = PlainSignature.of(fields)
    if plain is None:  # a Literal folded with None: pydantic's own path
        return
    assert json.dumps(plain.schema) == json.dumps(pydantic_schema(fields))


def conforming(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of exactly ``annotation``'s type, as a model would send them."""
    simple = {int: st.integers(), str: st.text(max_size=4), float: st.floats(),
              bool: st.booleans()}
    if annotation in simple:
        return simple[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return st.lists(conforming(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=3), conforming(args[1]), max_size=3)
    if origin is Literal:
        return st.sampled_from(args)
    return st.one_of(st.none(), conforming(next(a for a in args if a is not type(None))))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(signatures, st.data())
def test_what_it_accepts_pydantic_accepts_with_the_same_result(
        fields: dict[str, tuple[Any, Any]], data: st.DataObject) -> None:
    plain = PlainSignature.of(fields)
    if plain is None:
        return
    arguments = {name: data.draw(st.one_of(conforming(annotation), json_values))
                 for name, (annotation, default) in fields.items()
                 if default is ... or data.draw(st.booleans())}
    arguments.update(data.draw(st.dictionaries(st.sampled_from(["e"]), json_values)))
    accepted = plain.accept(arguments)
    if accepted is None:
        return
    parsed = pydantic_model(fields).model_validate(arguments)
    expected = {name: getattr(parsed, name) for name in fields}
    assert json.dumps(accepted, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert [type(v) for v in accepted.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize("annotation", [
    tuple[int, ...], int | str, Literal["a"] | None, list, dict[int, str], Any,
    Union[int, str, None]])  # noqa: UP007
def test_other_annotations_are_left_to_pydantic(annotation: Any) -> None:
    assert describe(annotation) is None


@pytest.mark.filterwarnings("ignore:Field name:UserWarning")  # pydantic on "json" shadowing
@pytest.mark.parametrize("name", ["_private", "model_config", "model_x", "json", "self"])
def test_parameter_names_pydantic_treats_apart_stay_pydantics(name: str) -> None:
    """pydantic makes no field of ``_private`` or ``model_config``; the fast path must not
    make one either (found by trying names, not by the generated signatures)."""
    fields = {name: (int, ...), "b": (str, "x")}
    plain = PlainSignature.of(fields)
    if plain is None:
        return
    assert json.dumps(plain.schema) == json.dumps(pydantic_schema(fields))
    assert plain.accept({name: 1}) == {
        n: getattr(pydantic_model(fields).model_validate({name: 1}), n) for n in fields}


def test_what_it_declines_pydantic_still_coerces_or_explains() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add."""
        return a + b

    assert add.validate({"a": "3"}) == {"a": 3, "b": 2}  # pydantic's lax coercion
    assert add.validate({"a": True, "b": 1}) == {"a": 1, "b": 1}
    with pytest.raises(ToolArgumentError, match="valid integer"):
        add.validate({"a": "x"})
    with pytest.raises(ToolArgumentError) as unknown:
        add.validate({"a": 1, "c": 1})
    assert unknown.value.field == "c"
    with pytest.raises(ToolArgumentError) as missing:
        add.validate({})
    assert missing.value.field == "a"
    with pytest.raises(ValidationError):  # and pydantic agrees on all three
        pydantic_model({"a": (int, ...), "b": (int, 2)}).model_validate({"a": "x"})


def test_a_mutable_default_is_a_fresh_copy_each_call() -> None:
    @tool
    def collect(items: list[int] = [1]) -> list[int]:  # noqa: B006
        """Collect."""
        return items

    first = collect.validate({})
    first["items"].append(2)
    assert collect.validate({}) == {"items": [1]}


def test_a_run_with_plain_tools_never_imports_pydantic() -> None:
    program = """
import sys
from tether import Agent, ModelResponse, ReAct, ScriptedModel, ToolCall, tool

@tool
def add(a: int, b: int, note: str | None = None) -> int:
    "Add two integers."
    return a + b

calls = [ModelResponse(tool_calls=(ToolCall(f"c{i}", "add", {"a": i, "b": 1}),)) for i in range(3)]
result = Agent(model=ScriptedModel([*calls, "done"]), reasoning=ReAct(), tools=[add]).run("go")
assert result.answer == "done", result
print(sorted(m for m in sys.modules if m.split(".")[0] == "pydantic"))
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_an_integer_for_a_float_is_pydantics_float_without_pydantic() -> None:
    plain = PlainSignature.of({"seconds": (float, ...)})
    assert plain is not None
    for value in (1000, -7, 2**53 + 1, 10**30):
        accepted = plain.accept({"seconds": value})
        assert accepted is not None and type(accepted["seconds"]) is float
        assert accepted == {"seconds": pydantic_model(
            {"seconds": (float, ...)}).model_validate({"seconds": value}).seconds}
    assert plain.accept({"seconds": 10**400}) is None  # too large: pydantic's to refuse
    assert plain.accept({"seconds": True}) is None  # a bool is no number here
