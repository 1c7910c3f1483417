"""``tether mcp serve`` and ``tether mcp proxy``: govern what MCP clients do, from a shell.

Why: an MCP client (an IDE, a desktop assistant, another agent) is configured with a command to
spawn (stdio) or a URL (streamable HTTP). So serving tether tools, and putting a governing proxy
in front of an existing MCP server, are commands: ``tether mcp serve myapp.tools:tools`` and
``tether mcp proxy --policy policy.yaml -- npx -y @modelcontextprotocol/server-filesystem /data``.
Both run ``tether.serve.server``: each client's calls decided by the policy, counted against its
own budget, journaled in the store, approvals decided with ``tether approvals approve``.

Decision: both commands take the same governance options — ``--policy``, ``--store`` (as the
other commands: ``$TETHER_STORE``, else ``sqlite:///tether.db``; created if missing, since a
server writes the journal), ``--budget-tool-calls`` per client, and ``--client`` / ``--role`` /
``--tenant`` for the policy's Subject — and everything that can be wrong (the tools, the policy,
the store, the upstream, the port, a policy naming tools or arguments not served) is reported
before a client is answered. Messages go to stderr only: on stdio, stdout is the protocol
channel.

Exit codes: 0 the server ran until its client disconnected (stdio) or it was interrupted; 1 the
proxy's upstream died and could not be restarted; 2 it could not start (bad usage, tools that do
not load, a policy that does not load or names tools or arguments not served, a store that
cannot be opened, an upstream that does not start or does not offer a tool named by
``--read-only``, a port that cannot be bound).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from tether.cli.common import EXIT_FINDING, EXIT_OK, EXIT_USAGE, STORE_HELP, error, note, usage
from tether.cli.mcp_oauth import oauth_of, oauth_options
from tether.cli.pins import register as register_pins
from tether.cli.served import load_served
from tether.cli.served import load_tools as load_tools  # where `tether tools` and tests find it
from tether.errors import install_command

if TYPE_CHECKING:
    from tether.policy.base import Policy
    from tether.runtime.chokepoint.gateway import Gateway
    from tether.serve.clients import Governance
    from tether.serve.oauth import OAuth

TOOLS_HELP = ("the tools to serve: MODULE:ATTRIBUTE (e.g. myapp.tools:tools) or "
              "path/to/file.py:ATTRIBUTE, naming a list of tether tools, an object with a "
              "'tools' attribute (such as an Agent, whose policy is used unless --policy is "
              "given), or a function taking no arguments that returns one of these")
DEFAULT_HTTP_PORT = 8000


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _tool_name(text: str) -> str:
    if not text or text != text.strip() or "," in text or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"expected one tool's name as the upstream lists it, got {text!r}; repeat "
            "--read-only for each tool")
    return text


def _governance_options(parser: argparse.ArgumentParser, *, policy_required: bool) -> None:
    parser.add_argument("--policy", metavar="FILE", required=policy_required,
                        help="the YAML policy that decides every call" + (
                            "" if policy_required else " (default: the policy of the object "
                            "named, if it has one; else every call is allowed)"))
    parser.add_argument("--store", metavar="URL", help=STORE_HELP + "; journals and approvals")
    parser.add_argument("--budget-tool-calls", metavar="N", type=_positive,
                        help="tool calls each client may make (default: unlimited)")
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="stdio (default: the client spawns this command) or http "
                        "(streamable HTTP on 127.0.0.1)")
    parser.add_argument("--port", metavar="P", type=int,
                        help=f"the HTTP port on 127.0.0.1 (default {DEFAULT_HTTP_PORT}; 0: any "
                        "free port, printed at start)")
    parser.add_argument("--client", metavar="NAME", default="mcp-client",
                        help="the policy's subject (user) for these clients "
                        "(default: mcp-client)")
    parser.add_argument("--role", metavar="ROLE", action="append", default=[],
                        help="a role of the subject (repeatable)")
    parser.add_argument("--tenant", metavar="ID", help="the subject's tenant")
    parser.add_argument("--name", metavar="NAME", help="the server name shown to clients")
    parser.add_argument("--skip-policy-name-check", action="store_true",
                        help="serve a policy whose rules name tools or arguments these tools do "
                        "not have (one shared by servers whose tools differ); by default that "
                        "is refused, since such a rule never matches")
    parser.add_argument("--roll-calls", metavar="N", type=_positive,
                        help="roll each client's journal into a new linked segment (a session "
                        "of its own) every N calls (default: never)")
    parser.add_argument("--roll-after", metavar="SECONDS", type=_seconds,
                        help="roll each client's journal into a new linked segment once the "
                        "current one is this old (default: never)")
    oauth_options(parser)


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "mcp", help="serve tools over MCP, or govern another MCP server",
        description="Serve tether tools to MCP clients, or proxy another MCP server, with "
        "every call decided by a policy, budgeted per client and journaled.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="mcp commands", metavar="COMMAND")
    register_pins(sub)

    serve = sub.add_parser(
        "serve", help="serve tether tools over MCP",
        description="Serve tether tools over MCP (stdio or streamable HTTP). Each client's "
        "calls are decided by the policy, counted against its own budget and journaled.")
    serve.add_argument("tools", metavar="MODULE:TOOLS", help=TOOLS_HELP)
    _governance_options(serve, policy_required=False)
    serve.set_defaults(run=run_serve)

    proxy = sub.add_parser(
        "proxy", help="govern another MCP server",
        description="Serve the tools of an upstream MCP server (spawned from the command "
        "after --) through tether: each call decided by the policy (a refused call never "
        "reaches the upstream), budgeted per client and journaled.",
        usage="tether mcp proxy --policy FILE [options] -- COMMAND [ARG ...]")
    _governance_options(proxy, policy_required=True)
    proxy.add_argument("--pins", metavar="FILE",
                       help="a JSON pin file for the upstream's tool definitions (default: pins "
                       "kept in memory, made afresh at each start)")
    proxy.add_argument("--require-approval-for-new", action="store_true",
                       help="block tools never pinned before until a person approves them")
    proxy.add_argument("--trusted", action="store_true",
                       help="believe the upstream's read-only and closed-world hints")
    proxy.add_argument("--read-only", metavar="TOOL", action="append", default=[],
                       type=_tool_name,
                       help="an upstream tool (named as the upstream lists it) you reviewed and "
                       "vouch has no side effect (repeatable): the policy sees it as read-only "
                       "whatever the upstream's hints say, unless they call it destructive; its "
                       "output stays untrusted, and pinning blocks it if it is redefined. A "
                       "name the upstream does not offer stops the proxy at start")
    proxy.add_argument("--env", metavar="NAME[=VALUE]", action="append", default=[],
                       help="an environment variable for the upstream (NAME alone passes this "
                       "process's value); the upstream gets only PATH, HOME, ... otherwise")
    proxy.add_argument("--call-timeout", metavar="SECONDS", type=_seconds, default=30.0,
                       help="bound on each upstream call (default 30)")
    proxy.add_argument("--no-relay", action="store_true",
                       help="decline the upstream's sampling and elicitation requests (journaled) "
                       "instead of relaying them to the client that made the call (default: "
                       "relay, journaled, when that client declared the capability)")
    proxy.add_argument("--upstream-protocol", choices=("auto", "2025-11-25", "2026-07-28"),
                       default="auto",
                       help="the MCP revision spoken to the upstream (default auto: 2026-07-28 "
                       "if it answers server/discover, else the 2025-11-25 handshake); the "
                       "proxy's own clients may speak either")
    proxy.add_argument("upstream", nargs="*", metavar="COMMAND",
                       help="the upstream MCP server's command, after --")
    proxy.set_defaults(run=run_proxy)


# -- loading ------------------------------------------------------------------------------------

def _governance(args: argparse.Namespace, policy: Policy,
                oauth: OAuth | None = None) -> Governance | None:
    from tether.cli.common import store_url
    from tether.cli.telemetry import environment_sinks
    from tether.runtime.accounting.budget import Budget
    from tether.serve.clients import Governance
    from tether.store.base import StoreError
    from tether.store.opening import open_store
    from tether.urls import redact_text, redact_url

    url = store_url(args.store)
    try:
        store = open_store(url)
    except (StoreError, OSError) as exc:
        error(f"cannot open the store {redact_url(url)}: {redact_text(str(exc), url)}; pass "
              "--store sqlite:///path/to/tether.db")
        return None
    if url.startswith("memory:"):
        note("memory:// keeps journals and approval requests in this process only; "
             "`tether approvals approve` cannot reach them")
    return Governance(policy=policy, store=store,
                      budget=Budget(max_tool_calls=args.budget_tool_calls),
                      client=args.client, roles=tuple(args.role), tenant_id=args.tenant,
                      roll_calls=args.roll_calls, roll_seconds=args.roll_after,
                      telemetry=environment_sinks(), oauth=oauth)


def _load_policy(path: str) -> Policy | None:
    from tether.policy.yaml_policy import load_policy
    from tether.policy.yaml_source import PolicyLoadError

    try:
        return load_policy(path)
    except (PolicyLoadError, OSError) as exc:
        error(f"cannot load the policy: {exc}")
        return None


def _port(args: argparse.Namespace) -> int | None:
    if args.transport == "stdio":
        if args.port is not None:
            error("--port applies to --transport http; a stdio server is spawned by its client")
            return None
        return 0
    port = DEFAULT_HTTP_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        error(f"--port must be 0-65535, got {port}")
        return None
    return int(port)


def _sdk_missing() -> bool:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        error(f"the MCP server needs the official MCP SDK ({exc}); install it with: "
              f"{install_command('mcp')}")
        return True
    return False


# -- running ------------------------------------------------------------------------------------

def _announce(what: str, governance: Governance, policy_name: str,
              args: argparse.Namespace) -> Callable[[str], None]:
    from tether.cli.common import store_url
    from tether.urls import redact_url

    budget = governance.budget.max_tool_calls
    limit = (f"{budget} tool call{'' if budget == 1 else 's'} per client" if budget
             else "no tool-call limit")
    journal = redact_url(store_url(args.store))

    def ready(where: str) -> None:
        how = "on stdio" if where == "stdio" else f"at {where}"
        who = ("" if governance.oauth is None
               else f"; bearer tokens from {governance.oauth.issuer} required")
        note(f"{what} {how}; policy {policy_name}; {limit}; journal in {journal}{who}")

    return ready


def _on_client(key: str, gateway: Gateway) -> None:
    note(f"client {key}: tether session {gateway.id}")


def run_serve(args: argparse.Namespace) -> int:
    from tether.cli.recipe import RecipeError

    port = _port(args)
    usable, oauth = oauth_of(args)
    if port is None or not usable or _sdk_missing():
        return EXIT_USAGE
    try:
        served = load_served(args.tools)
    except RecipeError as exc:
        error(str(exc))
        return EXIT_USAGE
    tools, check = served.tools, not args.skip_policy_name_check
    policy: Policy | None
    if args.policy:
        policy, policy_name = _load_policy(args.policy), args.policy
    elif served.policy is not None:
        policy, policy_name = served.policy, f"of {args.tools}"
        check = check and served.check_policy_names
    else:
        from tether.policy.base import AllowAll

        policy, policy_name = AllowAll(), "allow-all"
        note("no --policy: every call is allowed (and still budgeted and journaled)")
    if policy is None:
        return EXIT_USAGE
    from tether.policy.names import PolicyNameError
    from tether.serve.server import check_served_names, serve

    try:
        if check:
            check_served_names(policy, tools, advice=(
                f"Fix the names (`tether policy lint {args.policy} --tools {args.tools}` makes "
                "this check without serving)" if args.policy else "Fix the names")
                + "; a policy shared by servers whose tools differ can opt out with "
                "--skip-policy-name-check")
    except PolicyNameError as exc:
        error(str(exc))
        return EXIT_USAGE
    governance = _governance(args, policy, oauth)
    if governance is None:
        return EXIT_USAGE

    names = ", ".join(t.name for t in tools)
    ready = _announce(f"serving {len(tools)} tools ({names})", governance, policy_name, args)
    return _run(serve(tools, governance, transport=args.transport, port=port, host=args.host,
                      name=args.name or "tether", on_ready=ready, on_client=_on_client,
                      check_policy_names=False),  # checked above, or opted out
                governance, args.transport, port, args.host)


def run_proxy(args: argparse.Namespace) -> int:
    port = _port(args)
    usable, oauth = oauth_of(args)
    if port is None or not usable or _sdk_missing():
        return EXIT_USAGE
    if not args.upstream:
        error("give the upstream MCP server's command after '--', e.g. tether mcp proxy "
              "--policy policy.yaml -- npx -y @modelcontextprotocol/server-filesystem /data")
        return EXIT_USAGE
    env = _upstream_env(args.env)
    if env is None:
        return EXIT_USAGE
    policy = _load_policy(args.policy)
    if policy is None:
        return EXIT_USAGE
    from tether.mcp.errors import MCPError
    from tether.mcp.pins import JSONFilePinStore
    from tether.serve.proxy import proxy, upstream_server

    try:
        upstream = upstream_server(args.upstream, env=env, trusted=args.trusted,
                                   call_timeout=args.call_timeout, relay=not args.no_relay,
                                   protocol=args.upstream_protocol,
                                   read_only=args.read_only)
        pins = None if args.pins is None else JSONFilePinStore(args.pins)
    except (ValueError, MCPError) as exc:
        error(str(exc))
        return EXIT_USAGE
    governance = _governance(args, policy, oauth)
    if governance is None:
        return EXIT_USAGE
    ready = _announce(f"proxying {upstream.where()}", governance, args.policy, args)
    return _run(proxy(upstream, governance, transport=args.transport, port=port,
                      host=args.host, pins=pins,
                      require_approval_for_new=args.require_approval_for_new, name=args.name,
                      on_ready=ready, on_client=_on_client,
                      check_policy_names=not args.skip_policy_name_check),
                governance, args.transport, port, args.host)


def _upstream_env(given: list[str]) -> dict[str, str] | None:
    env: dict[str, str] = {}
    for item in given:
        name, sep, value = item.partition("=")
        if not name:
            error(f"--env {item!r}: give NAME=VALUE, or NAME to pass this process's value")
            return None
        if not sep:
            if name not in os.environ:
                error(f"--env {name}: {name} is not set in this environment; give "
                      f"{name}=VALUE")
                return None
            value = os.environ[name]
        env[name] = value
    return env


def _run(main: Coroutine[Any, Any, None], governance: Governance, transport: str,
         port: int, host: str = "127.0.0.1") -> int:
    import asyncio
    import signal
    import threading

    from tether.errors import InvalidArgument
    from tether.mcp.errors import MCPConnectionError
    from tether.mcp.supervise import UpstreamLost
    from tether.policy.names import PolicyNameError

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C: the upstream is closed, not orphaned

    previous = None  # on stdio, SIGTERM keeps its default: a thread blocked reading stdin
    if transport == "http" and threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, stop)  # would hold up a graceful exit
    try:
        asyncio.run(main)
    except KeyboardInterrupt:
        return EXIT_OK
    except UpstreamLost as exc:
        error(str(exc))
        return EXIT_FINDING
    except MCPConnectionError as exc:
        error(f"the upstream MCP server did not start: {exc}")
        return EXIT_USAGE
    except (PolicyNameError, InvalidArgument) as exc:  # the policy, or --read-only, against
        error(str(exc))  # the upstream's tools
        return EXIT_USAGE
    except OSError as exc:
        if transport == "http":
            error(f"cannot serve on {host}:{port}: {exc}; choose another --port")
        else:
            error(f"cannot serve on stdio: {exc}")
        return EXIT_USAGE
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        governance.store.close()
    return EXIT_OK
