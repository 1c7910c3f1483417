"""A hung blocking tool never blocks the interpreter's exit.

Each case runs a real interpreter: a sync tool sleeps 1000 s with a 0.3 s timeout. The run must
return on time with a timeout result, and the process must then exit normally (code 0) within a
few seconds instead of waiting for the tool's thread.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

PRELUDE = textwrap.dedent("""
    import asyncio, threading, time
    from tether import Agent, ReAct, ScriptedModel, tool

    @tool(timeout=0.3)
    def hang(seconds: float) -> str:
        \"\"\"Blocks for a long time.\"\"\"
        time.sleep(seconds)
        return "woke up"

    # validation shares the tool's 0.3 s, and this test is about the thread the tool hangs:
    # nothing else may spend that time on a loaded machine (a validator built cold once did,
    # and the tool rightly never ran)
    hang.validate({"seconds": 1000})
    model = ScriptedModel.tool_then_answer("hang", {"seconds": 1000}, "gave up waiting")
    agent = Agent(model=model, reasoning=ReAct(), tools=[hang])

    def report(result, started):
        status = result.trajectory.steps[0].results[0].status
        hung = [t for t in threading.enumerate() if t.name == "tether-tool"]
        print("STATUS", status, flush=True)
        print("ANSWER", result.answer, flush=True)
        print("RUN_SECONDS", round(time.monotonic() - started, 3), flush=True)
        print("HUNG_THREADS", len(hung), flush=True)
""")

ENTRIES = {
    "run": """
        started = time.monotonic()
        report(agent.run("wait for it"), started)
    """,
    "arun": """
        async def main():
            started = time.monotonic()
            report(await agent.arun("wait for it"), started)
        asyncio.run(main())
    """,
    "session": """
        started = time.monotonic()
        session = agent.session("wait for it", user_id="u1")
        report(session.run(), started)
        print("EVENTS", len(session.replay()), flush=True)
    """,
}


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_hung_sync_tool_does_not_block_interpreter_exit(entry: str) -> None:
    script = PRELUDE + textwrap.dedent(ENTRIES[entry])
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 5, f"the interpreter took {elapsed:.1f}s to exit"
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["STATUS"] == "timeout"
    assert lines["ANSWER"] == "gave up waiting"
    assert float(lines["RUN_SECONDS"]) < 2
    # the tool's thread really was still hung when the program ended
    assert lines["HUNG_THREADS"] == "1"
    if entry == "session":
        assert int(lines["EVENTS"]) > 0
    assert "Traceback" not in proc.stderr
