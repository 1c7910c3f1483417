"""``tether run MODULE:AGENT "task"``: run an agent from a shell and watch it as it happens.

Why: the first thing a newcomer wants after the quickstart is to point an agent at a task and
see what the runtime does with it — each model turn, each tool call and the decision on it, what
was spent against each limit — without writing a script. An operator trying a recipe before it
ships wants the same view.

Decision: the command only watches. It runs the session as any caller does, subscribed to its
journal, and prints each event worth a line as it is appended — a model turn, a decision, a
result, an overrun — and the spend against each limit after each model turn. With ``rich``
installed and a terminal on stdout the lines are coloured; otherwise they are the same lines,
plain, so the output pipes and logs. The recipe is found as ``tether resume`` finds it; its
journal goes to the recipe's store, else ``--store`` / ``TETHER_STORE`` /
``sqlite:///tether.db`` (made if it does not exist yet).

Exit codes: 0 the run finished; 1 it stopped or paused (a limit, a denial, an approval, an
error); 2 the command could not run (bad usage, no recipe, a budget that cannot be read);
128 + N signal N (SIGINT, SIGTERM, SIGHUP) interrupted it: the session paused, and one line on
stderr gives the commands that continue it (``tether.cli.interrupts``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    store_hint,
)
from tether.cli.interrupts import Interrupts, report
from tether.cli.next_steps import continue_commands, run_metadata
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.runtime.accounting.budget import Budget
    from tether.runtime.lifecycle.session import Session
    from tether.runtime.record.result import Result
    from tether.types import Event

LIMITS = {"tokens": "max_tokens", "cost": "max_cost_usd", "steps": "max_steps",
          "tool_calls": "max_tool_calls", "seconds": "max_seconds"}
Write = Callable[[str, str], None]  # (kind, text): one line


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "run", help="run an agent on a task and watch it",
        description="Run an Agent recipe on a task, printing each model turn, tool call, "
        "decision and result and the spend as they happen, then the answer and the session id.")
    parser.add_argument("agent", metavar="MODULE:AGENT",
                        help="the Agent (or a function returning one): myapp.agents:support or "
                        "path/to/file.py:agent")
    parser.add_argument("task", help="the task, in quotes")
    add_store_option(parser)
    parser.add_argument("--budget", metavar="LIMITS", type=parse_budget,
                        help="this run's limits, e.g. tokens=5000,cost=0.10,steps=20,"
                        "tool_calls=10,seconds=120 (default: the recipe's budget)")
    parser.add_argument("--user", metavar="ID", help="the user the run acts for")
    parser.add_argument("--tenant", metavar="ID", help="the tenant the run acts for")
    parser.set_defaults(run=run_agent)


def parse_budget(text: str) -> Budget:
    """``tokens=5000,cost=0.10,...`` as a Budget."""
    from tether.runtime.accounting.budget import Budget

    limits: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = (s.strip() for s in part.partition("="))
        if name not in LIMITS or not value:
            raise argparse.ArgumentTypeError(
                f"cannot read {part!r}: give NAME=VALUE pairs, NAME one of "
                f"{', '.join(LIMITS)} (e.g. tokens=5000,cost=0.10)")
        kind: Callable[[str], Any] = {"cost": Decimal, "seconds": float}.get(name, int)
        try:
            limits[LIMITS[name]] = kind(value)
        except (ValueError, ArithmeticError):
            raise argparse.ArgumentTypeError(f"{name} must be a number, not {value!r}") from None
    try:
        return Budget(**limits)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_agent(args: argparse.Namespace) -> int:
    # a signal pauses the run (tether.cli.interrupts)
    with Interrupts(process_exits=getattr(args, "process_exits", False)) as interrupts:
        return _run_agent(args, interrupts)


def _run_agent(args: argparse.Namespace, interrupts: Interrupts) -> int:
    from tether.cli.resume import bound_recipe

    agent = bound_recipe(args, create=True)
    if agent is None:
        return EXIT_USAGE
    try:
        session = agent.session(args.task, budget=args.budget, user_id=args.user,
                                tenant_id=args.tenant, metadata=run_metadata(args.agent))
    except ValueError as exc:  # e.g. a cost limit for a model without a price
        error(str(exc))
        return EXIT_USAGE
    store = agent.journal_store
    where = store_hint(store.url if store else None)  # named: the lines work in a new shell
    interrupts.resume_options = f" --agent {args.agent}{where}"
    watch = Watch(session, writer())
    result = asyncio.run(interrupts.run(session, watch.run))
    if interrupts.signal is not None and (result is None or session.paused):
        return report(interrupts.signal, session, args)
    assert result is not None
    watch.line("result", f"{result.stop_reason.value}: "
                         f"{result.answer.strip() or '(the model gave no answer)'}")
    if result.notice:
        watch.line("notice", result.notice)
    if session.paused:  # the commands to type, filled in (tether.cli.next_steps)
        for command in continue_commands(session, args.agent, where):
            watch.line("next", command)
    watch.line("session", f"{result.session_id}  (tether audit show {result.session_id[:8]}"
                          f"{where})")
    return EXIT_OK if result.ok else EXIT_FINDING


class Watch:
    """Prints one running session: its journal's events as they are appended, and the spend."""

    def __init__(self, session: Session, write: Write) -> None:
        self.session = session
        self._write = write

    async def run(self) -> Result:
        unsubscribe = self.session.events.subscribe(self.event)
        try:
            return await self.session.arun()
        finally:
            unsubscribe()

    def line(self, kind: str, text: str) -> None:
        self._write(kind, text)

    def event(self, event: Event) -> None:
        render = RENDER.get(event.type)
        if render is not None:
            self.line(event.type.split(".")[0], render(event.data))
        if event.type == EventType.MODEL_RESPONSE:
            self.line("spend", self.spend())

    def spend(self) -> str:
        return self.session.spend().against(self.session.budget)


def _call(data: Mapping[str, Any]) -> str:
    from tether.journal.views.timeline import call_text

    return f"{call_text(data.get('tool', '?'), data.get('arguments'))} [{data.get('call_id')}]"


def _decision(data: Mapping[str, Any]) -> str:
    decision = data.get("decision") or {}
    why = f": {decision['reason']}" if decision.get("reason") else ""
    return f"{_call(data)} -> {decision.get('effect')} by {decision.get('policy_id')}{why}"


def _response(data: Mapping[str, Any]) -> str:
    response = data.get("response") or {}
    text = " ".join(str(response.get("text") or "").split())
    calls = len(response.get("tool_calls") or ())
    said = f'"{text[:200]}{"..." if len(text) > 200 else ""}"' if text else "(no text)"
    return f"turn {data.get('step')}: {said}" + (f", {calls} tool call(s)" if calls else "")


RENDER: dict[str, Callable[[Mapping[str, Any]], str]] = {
    EventType.MODEL_RESPONSE: _response,
    EventType.TOOL_DECISION: _decision,
    EventType.TOOL_RESULT: lambda d: (f"{d.get('tool')} [{d.get('call_id')}] {d.get('status')}: "
                                      f"{' '.join(str(d.get('content', '')).split())[:200]}"),
    EventType.MODEL_OVERRUN: lambda d: f"overrun: {d.get('detail')}",
    EventType.APPROVAL_REQUESTED: lambda d: f"waits for approval {d.get('approval_id')}",
    EventType.SESSION_WRAP_UP_SKIPPED: lambda d: f"no wrap-up: {d.get('detail')}",
    EventType.OUTPUT_INVALID: lambda d: (
        f"invalid {d.get('type')} (attempt {d.get('attempt')}, "
        f"{d.get('repairs_left')} repairs left): " + "; ".join(
            f"{'.'.join(map(str, e.get('loc') or [])) or '(answer)'}: "
            f"{e.get('msg')}" for e in d.get("errors") or [])[:200]),
    EventType.OUTPUT_VALID: lambda d: f"valid {d.get('type')}",
    EventType.PLAN_AMENDED: lambda d: (
        f"the planner added {len(d.get('added') or [])} ask(s) to the "
        f"request plan, {len(d.get('rejected') or [])} rejected"),
    EventType.CONTEXT_COMPACTED: lambda d: (
        f"turns 1-{d.get('turns')} compacted ({d.get('strategy')}"
        f", ~{d.get('tokens_before')} -> ~{d.get('tokens_after')} "
        "tokens of conversation)"),
}
STYLES = {"model": "cyan", "tool": "yellow", "spend": "dim", "result": "bold green",
          "notice": "bold red", "session": "bold", "approval": "magenta", "context": "cyan",
          "plan": "cyan"}


def writer() -> Write:
    """Print a line: coloured by ``rich`` on a terminal, plain otherwise."""
    if sys.stdout.isatty() and importlib.util.find_spec("rich") is not None:
        from rich.console import Console
        from rich.markup import escape

        console = Console(highlight=False)

        def styled(kind: str, text: str) -> None:
            console.print(f"[{STYLES.get(kind, 'white')}]{kind:>8}[/] {escape(text)}")

        return styled

    def plain(kind: str, text: str) -> None:
        print(f"{kind:>8} {text}", flush=True)

    return plain
