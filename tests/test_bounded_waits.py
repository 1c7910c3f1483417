"""Every wait inside a tool call is bounded: credential issuance, argument validation and the tool
share the tool's timeout and the session's time budget, nothing runs after the deadline, every
worker thread is a daemon, and a policy that hangs is denied at its deadline.

The hanging cases run in a real interpreter, which must return on time and then exit promptly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

from tether import Agent, Budget, Decision, Effect, ReAct, ScriptedModel, StopReason, tool
from tether.policy import Action, Context, Resource, Subject
from tether.tools.base import ToolArgumentError, ToolContext, ToolMeta
from tether.types import ToolSpec


def _run_script(body: str, timeout: float = 30) -> tuple[dict[str, str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True,
                          text=True, timeout=timeout)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return lines, elapsed


def test_a_hung_credential_provider_is_bounded_by_the_tool_timeout_and_never_blocks_exit() -> None:
    out, elapsed = _run_script("""
        import time, threading
        from tether import Agent, Budget, ReAct, ScriptedModel, tool
        from tether.credentials import CredentialBroker

        ran = []

        @tool(timeout=1.0)
        def fetch(credentials) -> str:
            \"\"\"Fetch with a credential.\"\"\"
            ran.append(time.monotonic())
            return "fetched"

        def hang():
            time.sleep(60)
            return "s3cret-value"

        broker = CredentialBroker()
        broker.register("fetch", provider=hang)
        model = ScriptedModel.tool_then_answer("fetch", {}, "gave up")
        agent = Agent(model=model, reasoning=ReAct(), tools=[fetch], credentials=broker)
        started = time.monotonic()
        result = agent.run("fetch it", budget=Budget(max_seconds=1.5))
        print("RUN", round(time.monotonic() - started, 3))
        print("STATUS", result.trajectory.steps[0].results[0].status)
        print("CONTENT", result.trajectory.steps[0].results[0].content)
        print("RAN", len(ran))
        time.sleep(1.0)
        print("RAN_LATER", len(ran))
        print("NON_DAEMON", len([t for t in threading.enumerate()
                                 if not t.daemon and t is not threading.main_thread()]))
    """)
    assert float(out["RUN"]) < 1.5 + 0.5
    assert out["STATUS"] == "timeout" and "did not run" in out["CONTENT"]
    assert out["RAN"] == "0" and out["RAN_LATER"] == "0"  # nothing runs after the deadline
    assert out["NON_DAEMON"] == "0"
    assert elapsed < 10  # the interpreter left without waiting for the hung provider


def test_slow_credentials_leave_the_tool_only_what_remains_of_its_timeout() -> None:
    from tether.credentials import CredentialBroker

    ran: list[float] = []

    @tool(timeout=0.6)
    async def fetch(credentials: Any) -> str:
        """Fetch."""
        import asyncio

        ran.append(time.monotonic())
        await asyncio.sleep(0.4)
        return "fetched"

    def slow() -> str:
        time.sleep(0.4)
        return "s3cret-value"

    broker = CredentialBroker()
    broker.register("fetch", provider=slow)
    agent = Agent(model=ScriptedModel.tool_then_answer("fetch", {}, "ok"), reasoning=ReAct(),
                  tools=[fetch], credentials=broker)
    started = time.monotonic()
    result = agent.run("fetch")
    (step, _) = result.trajectory.steps
    assert step.results[0].status == "timeout"  # 0.4 s for the token + 0.4 s > 0.6 s
    assert time.monotonic() - started < 1.2
    assert len(ran) == 1


def test_slow_validation_counts_against_the_tool_timeout() -> None:
    ran: list[int] = []

    class SlowValidation:
        name = "slowval"
        meta = ToolMeta(timeout=0.2)
        spec = ToolSpec("slowval", "Validates slowly.", {"type": "object", "properties": {}})

        def validate(self, arguments: Any) -> dict[str, Any]:
            time.sleep(0.3)
            if arguments:
                raise ToolArgumentError("", "takes no arguments")
            return {}

        async def invoke(self, arguments: dict[str, Any], context: ToolContext) -> Any:
            ran.append(1)
            return "ran"

    agent = Agent(model=ScriptedModel.tool_then_answer("slowval", {}, "ok"), reasoning=ReAct(),
                  tools=[SlowValidation()])
    result = agent.run("go")
    (step, _) = result.trajectory.steps
    assert step.results[0].status == "timeout" and ran == []
    assert "validating its arguments" in step.results[0].content


class HangingPolicy:
    """A policy that asks a remote service and never hears back."""

    policy_id = "remote-authz"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        time.sleep(60)
        return Decision(Effect.ALLOW, "never", "remote-authz")


def test_a_hung_policy_is_denied_at_its_deadline() -> None:
    ran: list[int] = []

    @tool
    def ping() -> str:
        """Ping."""
        ran.append(1)
        return "pong"

    agent = Agent(model=ScriptedModel.tool_then_answer("ping", {}, "denied, fine"),
                  reasoning=ReAct(), tools=[ping], policy=HangingPolicy(), policy_timeout=0.3)
    started = time.monotonic()
    result = agent.run("ping")
    assert time.monotonic() - started < 2
    (step, _) = result.trajectory.steps
    assert step.results[0].status == "denied" and ran == []
    assert "did not decide within 0.3s" in step.results[0].content


def test_a_policy_deadline_is_also_the_time_budget() -> None:
    agent = Agent(model=ScriptedModel.tool_then_answer("ping", {}, "x"), reasoning=ReAct(),
                  tools=[_ping()],
                  policy=HangingPolicy(), policy_timeout=30)
    started = time.monotonic()
    result = agent.run("ping", budget=Budget(max_seconds=0.5))
    assert time.monotonic() - started < 2
    assert result.stop_reason in (StopReason.TIME_BUDGET, StopReason.FINISHED)
    assert result.trajectory.steps[0].results[0].status == "denied"


def _ping() -> Any:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    return ping


def test_a_hung_policy_never_blocks_interpreter_exit() -> None:
    out, elapsed = _run_script("""
        import time, threading
        from tether import Agent, Decision, Effect, ReAct, ScriptedModel, tool

        class Hangs:
            def evaluate(self, subject, action, resource, context):
                time.sleep(60)
                return Decision(Effect.ALLOW, "never", "p")

        @tool
        def ping() -> str:
            \"\"\"Ping.\"\"\"
            return "pong"

        agent = Agent(model=ScriptedModel.tool_then_answer("ping", {}, "ok"), reasoning=ReAct(),
                      tools=[ping], policy=Hangs(), policy_timeout=0.3)
        result = agent.run("ping")
        print("STATUS", result.trajectory.steps[0].results[0].status)
    """)
    assert out["STATUS"] == "denied"
    assert elapsed < 10


def test_tethers_own_policies_decide_inline() -> None:
    from tether.policy import AllowAll, DefaultDeny, DenyOverrides, FirstMatch, YamlPolicy
    from tether.policy.deadline import runs_inline

    yaml = YamlPolicy.from_string("version: 1\npolicy_id: p\ndefault: allow\nrules: []\n")
    assert runs_inline(AllowAll()) and runs_inline(yaml)
    assert runs_inline(DenyOverrides(yaml, AllowAll()))
    assert runs_inline(FirstMatch(yaml)) and runs_inline(DefaultDeny(yaml))
    assert not runs_inline(HangingPolicy())
    assert not runs_inline(DenyOverrides(yaml, HangingPolicy()))

    class Promised(HangingPolicy):
        inline = True  # its author promises it does no I/O

    assert runs_inline(Promised())
