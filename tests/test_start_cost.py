"""What a run imports stays what it needs: the quickstart loads neither pydantic, YAML, the
credentials package nor difflib (each loaded when first needed: a tool that is not plain, a YAML
policy, a tool that takes credentials, a misnamed rule), and those still load and work then."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_NEEDED = ("pydantic", "yaml", "tether.credentials", "tether.policy.yaml_policy", "difflib",
              "uuid", "tether.runtime.stream", "tether.tools.selection",
              "tether.runtime.context.selecting", "tether.runtime.context.probing")


def loaded_after(program: str) -> set[str]:
    code = (f"import runpy, sys, io, contextlib\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    {program}\n"
            f"print('\\n'.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_the_quickstart_loads_only_what_it_needs() -> None:
    loaded = loaded_after("runpy.run_path('examples/quickstart.py', run_name='__main__')")
    assert "tether.runtime.lifecycle.session" in loaded  # it did run
    assert not {m for m in loaded for name in NOT_NEEDED
                if m == name or m.startswith(name + ".")}


def test_what_is_left_out_loads_when_first_needed() -> None:
    program = """
import asyncio
from tether import Agent, ReAct, ScriptedModel, ModelResponse, ToolCall, tool
from tether.credentials import CredentialBroker
from tether.policy import YamlPolicy

@tool(tags={"vault"})
def read(path: tuple[str, ...], credentials=None) -> str:
    "Read with a token."
    return "ok" if credentials is not None else "no token"

broker = CredentialBroker()
broker.register("read", secret="s3cret-value-123")
policy = YamlPolicy.from_string('version: 1\\npolicy_id: p\\ndefault: allow\\nrules:\\n'
                                '  - {id: nope, effect: deny, when: {tool: raed}}\\n')
try:
    Agent(model=ScriptedModel(["x"]), reasoning=ReAct(), tools=[read], policy=policy)
except ValueError as exc:  # the misnamed rule is found, with a suggestion (difflib)
    assert "did you mean 'read'" in str(exc), exc
else:
    raise AssertionError("the misnamed rule was not found")
policy = YamlPolicy.from_string('version: 1\\npolicy_id: p\\ndefault: allow\\nrules: []\\n')
agent = Agent(model=ScriptedModel([ModelResponse(tool_calls=(ToolCall("c", "read",
              {"path": ["a"]}),)), "done"]), reasoning=ReAct(), tools=[read],
              credentials=broker, policy=policy)
result = agent.run("go")
assert result.trajectory.steps[0].results[0].content == "ok", result
"""
    subprocess.run([sys.executable, "-c", program], check=True, cwd=ROOT)
