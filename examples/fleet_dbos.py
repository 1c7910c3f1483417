"""Past one machine: two worker processes drain a queue of sessions; one is killed -9 mid-run and
started again, and DBOS hands its unfinished sessions back, which tether resumes from their
journals — no effect twice. One session waits for a person, holding no worker meanwhile.

    pip install -e '.[dbos]'
    python examples/fleet_dbos.py            # SQLite files in a temporary directory
    FLEET_DB=postgresql://user@host/db python examples/fleet_dbos.py

``build`` is the fleet's agent factory: every worker runs ``python -m tether.durable.worker
--agent fleet_dbos:build --db URL --executor-id NAME`` and builds its own Agent from it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tether import (
    Agent,
    Decision,
    Effect,
    ModelRequest,
    ModelResponse,
    ReAct,
    ScriptedModel,
    ToolCall,
    tool,
)
from tether.durable import Fleet
from tether.policy import Action, Context, Resource, Subject

HERE = Path(__file__).resolve().parent


def build() -> Agent:
    """Each session appends N lines to the effects file ("send 5 notices"); a task that says
    "approve" needs a person's approval for its second notice."""
    effects = os.environ["FLEET_EFFECTS"]

    @tool(side_effect=True)
    def send_notice(n: int, session_id: str) -> str:
        """Send notice n (here: append a line to the effects file)."""
        with open(effects, "a") as out:
            out.write(f"{session_id} {n}\n")
        return f"notice {n} sent"

    def respond(request: ModelRequest) -> ModelResponse | str:
        task = next(str(m.content) for m in request.messages if m.role == "user")
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < int(task.split()[1]):
            return ModelResponse(tool_calls=(ToolCall(f"c{done}", "send_notice", {"n": done}),))
        return f"sent {done} notices"

    class Policy:
        def evaluate(self, subject: Subject, action: Action, resource: Resource,
                     context: Context) -> Decision:
            if "approve" in context.request and action.arguments["n"] == 1:
                return Decision(Effect.REQUIRE_APPROVAL, "the second notice needs a person", "demo")
            return Decision(Effect.ALLOW, "ok", "demo")

    return Agent(model=ScriptedModel(respond), reasoning=ReAct(), tools=[send_notice],
                 policy=Policy(), store=os.environ["FLEET_STORE"], name="notices")


def start_worker(database: str, executor_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "tether.durable.worker", "--agent",
                             "fleet_dbos:build", "--db", database, "--executor-id", executor_id,
                             "--concurrency", "4", "--poll", "0.1"],
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], 60)[0]:
        raise RuntimeError(f"worker {executor_id} did not start")
    print(f"  {proc.stdout.readline().strip()} (pid {proc.pid})")
    return proc


def wait_for(check: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the fleet did not get there in time")
        time.sleep(0.1)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tether-fleet-") as tmp:
        demo(tmp)


def demo(tmp: str) -> None:
    database = os.environ.get("FLEET_DB") or f"sqlite:///{tmp}/dbos.db"
    os.environ.setdefault("FLEET_STORE", database if database.startswith("postgres")
                          else f"sqlite:///{tmp}/journal.db")
    os.environ["FLEET_EFFECTS"] = effects = f"{tmp}/effects.txt"
    Path(effects).touch()
    sent = lambda: Path(effects).read_text().split("\n")[:-1]  # noqa: E731
    workers: dict[str, subprocess.Popen[str]] = {}
    with Fleet("fleet_dbos:build", database) as fleet:
        fleet.client  # noqa: B018  (DBOS's tables exist before the workers start)
        print("start two workers")
        for name in ("w1", "w2"):
            workers[name] = start_worker(database, name)
        try:
            sessions = [fleet.enqueue("send 5 notices") for _ in range(20)]
            waiting = fleet.enqueue("send 3 notices, approve the second")
            print(f"enqueued {len(sessions) + 1} sessions")
            wait_for(lambda: len(sent()) >= 30)
            print(f"kill -9 w1 after {len(sent())} notices")
            os.kill(workers["w1"].pid, signal.SIGKILL)
            workers.pop("w1").wait()
            print("start w1 again: DBOS recovers its unfinished sessions")
            workers["w1"] = start_worker(database, "w1")
            wait_for(lambda: all(fleet.status(s) in ("finished", "uncertain_effect")
                                 for s in sessions))
            wait_for(lambda: fleet.status(waiting) == "needs_approval")
            print("statuses:", dict(Counter(fleet.status(s) for s in sessions)))
            print("waiting for a person:", fleet.waiting())
            [request] = fleet.recipe.approval_store.pending(waiting)
            fleet.approve(waiting, request.id, approver="ops", note="looked fine")
            wait_for(lambda: fleet.status(waiting) == "finished")
            print("approved, then:", fleet.status(waiting))
            lines = sent()
            print(f"notices sent: {len(lines)}, sent twice: {len(lines) - len(set(lines))}")
        finally:
            for proc in workers.values():
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == "__main__":
    main()
