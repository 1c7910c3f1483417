"""``tether audit verify|show|list|export|trust``: read a store's journals as an auditor would.

Why: the journal is tether's evidence. ``verify`` proves each session's hash chain holds — or
names the session, the seq and what was probably done to it — for every session of a store, or
for an exported file with no store at all. ``show`` turns one session into a timeline a person
reads; ``list`` finds sessions a page at a time (``cli/audit_list.py``); ``export`` writes
JSON lines that carry the hashes, so someone else can verify them offline. ``trust``
(``cli/audit_trust.py``) finds tools declared trusted whose recorded results carried planted
canaries.

Decision: these commands only read. ``verify`` checks each session against the event count the
store's index recorded too, so a cut or extended tail is caught, and prints each intact
session's head hash: an anchor to keep elsewhere, which is what catches an attacker who rewrites
every hash. ``show`` verifies before it renders and says so at the top.

Exit codes: 0 every chain checked holds; 1 a chain is broken, or the session asked for does not
exist; 2 the command could not run (bad usage, no store, an unreadable export).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli import audit_anchors, audit_list, audit_sign, audit_trust
from tether.cli.audit_reading import read_session, tenant_sessions
from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    add_tenant_option,
    error,
    full_session_id,
    open_existing,
    parse_time,
    store_hint,
    usage,
)

if TYPE_CHECKING:
    from tether.journal.tamper import Break
    from tether.store.base import Store
    from tether.types import Event


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit", help="verify, show, list and export journals",
        description="Verify, show, list and export session journals.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="audit commands", metavar="COMMAND")

    verify = sub.add_parser(
        "verify", help="check hash chains",
        description="Recompute every stored session's hash chain (or one session's, or an "
        "exported file's) and report the first broken link of each. Exit 1 if any is broken.")
    add_store_option(verify)
    add_tenant_option(verify)
    verify.add_argument("--session", metavar="ID", help="only this session")
    verify.add_argument("--file", metavar="EXPORT",
                        help="verify an export written by `tether audit export` instead of a "
                        "store")
    audit_sign.add_verify_options(verify)
    verify.set_defaults(run=run_verify)

    show = sub.add_parser("show", help="a session's timeline",
                          description="Print one session as a timeline: model turns, calls, "
                          "decisions, results, approvals, pauses and spend.")
    show.add_argument("session", metavar="ID", help="the session id, or any unique start of it")
    add_store_option(show)
    add_tenant_option(show)
    show.add_argument("--json", action="store_true",
                      help="print one JSON object: the session, its chain's verdict, its status "
                      "and its events")
    show.set_defaults(run=run_show)

    audit_list.add(sub)

    export = sub.add_parser("export", help="write events as JSON lines",
                            description="Write events, one JSON object per line with seq, "
                            "type, session_id, timestamp, data, prev_hash and hash, so they can "
                            "be verified offline with `tether audit verify --file`.")
    add_store_option(export)
    add_tenant_option(export)
    export.add_argument("--format", choices=["jsonl", "otlp", "ocsf"], default="jsonl",
                        help="jsonl: the events with their hashes (default); otlp: the "
                        "sessions' OpenTelemetry spans as OTLP/JSON lines, the same spans a live "
                        "OTelSink sends; ocsf: OCSF 1.8.0 security events, one JSON object per "
                        "line, the same a live SIEMSink writes, with a Detection Finding where "
                        "a chain is broken")
    export.add_argument("--shape", choices=["default", "acs"], default="default",
                        help="with --format otlp or ocsf: default (the GenAI conventions' "
                        "spans; OCSF API Activity) or acs (OWASP ACS Trace v0.1.0: its span "
                        "names, and its OCSF classes with a Detection Finding for every "
                        "decision that is not an allow)")
    export.add_argument("--endpoint", metavar="URL",
                        help="with --format otlp: post the spans to this OTLP/HTTP collector "
                        "(e.g. http://127.0.0.1:4318) instead of writing them")
    export.add_argument("--redact-key", metavar="KEY", action="append", default=[],
                        help="with --format ocsf: mask this key's values anywhere in a record "
                        "(repeatable)")
    export.add_argument("--pins", metavar="FILE",
                        help="with --format ocsf: add the records of this MCP pin file")
    export.add_argument("--session", metavar="ID", help="only this session")
    export.add_argument("--since", metavar="WHEN", type=parse_time,
                        help="only sessions written since: 7d, 12h, 2025-01-31, ...")
    export.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    export.set_defaults(run=run_export)
    audit_trust.add(sub)
    audit_sign.add(sub)


# -- verify -------------------------------------------------------------------------------------

def run_verify(args: argparse.Namespace) -> int:
    if args.public_key is None and (args.witness_key or args.checkpoint or args.witness):
        error("--witness-key, --checkpoint and --witness check signed checkpoints: give the "
              "operator's --public-key too")
        return EXIT_USAGE
    if args.public_key is not None and audit_sign.verify_keys(args) is None:
        return EXIT_USAGE
    if args.file is not None:
        if args.store is not None:
            error("give --file or --store, not both: --file verifies an export without a store")
            return EXIT_USAGE
        return _verify_file(args.file, args.session, args)
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        only = None if args.session is None else full_session_id(store, args.session,
                                                                   args.tenant)
        return _verify_store(store, only, args)
    finally:
        store.close()


UNLISTED = ("its events are stored but the store's index does not list the session; it was "
            "written outside tether")


def _verify_store(store: Store, only: str | None, args: argparse.Namespace) -> int:
    from tether.journal.erasure import vouched
    from tether.journal.tamper import Break, diagnose

    tenant = args.tenant
    infos = tenant_sessions(store, tenant)
    if only is not None:
        infos = [i for i in infos if i.session_id == only]
        if not infos:
            events = read_session(store, only, tenant)
            if not events:
                error(f"no session {only!r} in {store.url}; `tether audit list` shows them")
                return EXIT_FINDING
            return _report([(only, events, Break(only, 1, "inserted", UNLISTED))])
    anchors = store.anchors()
    scope = audit_anchors.scope(anchors, infos, only, tenant)
    if not infos and not any(scope is None or a.session_id in scope for a in anchors) \
            and args.public_key is None:  # with a key: a store emptied is for the checkpoints
        print(f"no sessions in {store.url}")
        return EXIT_OK
    results = []
    for info in infos:
        events = store.read(info.session_id)
        results.append((info.session_id, events,
                        diagnose(info.session_id, events, recorded=info.events,
                                 unverifiable=store.unverifiable(info.session_id),
                                 erased=vouched(events, store.read))))
    for stray in store.unlisted() if only is None else ():  # events no index row accounts for
        events = [] if stray.startswith("key ") else read_session(store, stray, tenant)
        if tenant is None or events:
            results.append((stray, events, Break(stray, 1, "inserted", UNLISTED)))
    pruned = {a.session_id for a in anchors if a.kind == "prune"}
    code = max(_report(results), _report_segments(
        results, lambda sid: read_session(store, sid, tenant), pruned=pruned))
    code = max(code, audit_anchors.report_anchors(store, anchors, results, scope))
    from tether.cli.audit_threads import report_threads

    for finding in (threads := report_threads(store, results)):
        print(f"BROKEN  {finding}")
    code = max(code, EXIT_FINDING if threads else EXIT_OK)
    return max(code, audit_sign.report_signed(store, anchors, args))


def _report_segments(results: Sequence[tuple[str, Sequence[Event], Break | None]],
                     read: Callable[[str], Sequence[Event]], *, pruned: Collection[str] = (),
                     selection: bool = False) -> int:
    """Check the links between the segments of rolled journals (a gateway's) among
    ``results``, reading the segments they link to with ``read`` (``check_segments``)."""
    from tether.journal.segments import check_segments, is_segment

    sessions = {sid: events for sid, events, _ in results}
    linked = sum(is_segment(events) for events in sessions.values())
    if not linked:
        return EXIT_OK
    findings = check_segments(sessions, read, pruned=pruned, selection=selection)
    for finding in findings:
        print(f"BROKEN  {finding}")
    print(f"segments: {linked} linked, {len(findings)} finding"
          f"{'' if len(findings) == 1 else 's'}")
    return EXIT_FINDING if findings else EXIT_OK


def _verify_file(path: str, only: str | None, args: argparse.Namespace) -> int:
    from tether.journal.erasure import vouched
    from tether.journal.tamper import Break, diagnose
    from tether.journal.views.export import ExportFormatError, check_trailer, read_export
    from tether.store.anchor_chain import audit_key

    try:
        with open(path, encoding="utf-8") as fh:
            sessions, trailers = read_export(fh, path)
    except OSError as exc:
        error(f"cannot read the export {path} ({exc.strerror or exc}); check the path")
        return EXIT_USAGE
    except UnicodeDecodeError as exc:
        error(f"the export {path} is not UTF-8 text ({exc.reason} at byte {exc.start})")
        return EXIT_USAGE
    except ExportFormatError as exc:
        error(str(exc))
        return EXIT_USAGE
    exported = sessions  # every session of the file: what a segment's links may name
    if only is not None:
        if only not in sessions:
            error(f"no session {only!r} in {path}")
            return EXIT_FINDING
        sessions = {only: sessions[only]}
    if not sessions:
        print(f"no events in {path}")
        return EXIT_OK
    key = audit_key()
    unsigned = audit_sign.manifest_problems(path, args, sessions, only)
    if unsigned is None:
        return EXIT_USAGE
    results = []
    for sid, events in sessions.items():
        found = diagnose(sid, events, erased=vouched(events, lambda s: exported.get(s, [])))
        if found is None:
            problem = check_trailer(sid, events, trailers.get(sid), key)
            if problem is not None:
                found = Break(sid, len(events), "cut", problem)
        if found is None and sid in unsigned:
            found = Break(sid, len(events), "cut", unsigned[sid])
        results.append((sid, events, found))
    return max(_report(results), _report_segments(results, lambda sid: exported.get(sid, []),
                                                  selection=True),
               audit_sign.report_manifest(unsigned, sessions, args))


def _report(results: Sequence[tuple[str, Sequence[Event], Break | None]]) -> int:
    broken = unverifiable = 0
    for session_id, events, found in results:
        if found is None:
            head = events[-1].hash[:16] if events else "-"
            print(f"ok      {session_id}  {len(events)} events  head {head}")
        elif found.kind == "unverifiable":
            unverifiable += 1
            print(f"UNVERIFIABLE  {session_id}  seq {found.seq}: {found.detail}")
        else:
            broken += 1
            print(f"BROKEN  {session_id}  seq {found.seq}: {found.kind}: {found.detail}")
    total = len(results)
    more = f", {unverifiable} unverifiable" if unverifiable else ""
    print(f"{total} session{'' if total == 1 else 's'} checked, {broken} broken{more}")
    return EXIT_FINDING if broken or unverifiable else EXIT_OK


# -- show ---------------------------------------------------------------------------------------

def run_show(args: argparse.Namespace) -> int:
    from tether.cli.session_status import status_line
    from tether.journal.erasure import vouched
    from tether.journal.tamper import diagnose
    from tether.journal.views.export import event_json
    from tether.journal.views.timeline import header, timeline

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        args.session = full_session_id(store, args.session, args.tenant)
        events = read_session(store, args.session, args.tenant)
        erased = vouched(events, store.read)
    finally:
        store.close()
    if not events:
        error(f"no session {args.session!r} in {store.url}; `tether audit list` shows them")
        return EXIT_FINDING
    found = diagnose(args.session, events, erased=erased)
    lines = header(events)
    if found is None:
        lines.append(f"  chain: verified, head {events[-1].hash[:16]}")
    else:
        lines.append(f"  chain: BROKEN at seq {found.seq}: {found.kind}: {found.detail} (the "
                     "timeline below cannot be trusted)")
    status = status_line(events, store_hint(store.url))
    lines.append(f"  status: {status}")
    if args.json:  # the events as export writes them: each one's data the text its hash covers
        chain = ({"verified": True, "head": events[-1].hash} if found is None else
                 {"verified": False, "seq": found.seq, "kind": found.kind,
                  "detail": found.detail})
        head = json.dumps({"session_id": args.session, "status": status,
                           "chain": chain}, ensure_ascii=False)
        print(head[:-1] + ',"events":[' + ",".join(map(event_json, events)) + "]}")
    else:
        print("\n".join([*lines, "", *timeline(events)]))
    return EXIT_OK if found is None else EXIT_FINDING


# -- export ------------------------------------------------------------------------------------

def run_export(args: argparse.Namespace) -> int:
    from tether.cli.audit_ocsf import write_ocsf
    if args.format != "ocsf" and (args.redact_key or args.pins):
        error("--redact-key and --pins go with --format ocsf")
        return EXIT_USAGE
    if args.format == "jsonl" and args.shape != "default":
        error("--shape picks the spans' or the OCSF records' shape: use it with --format otlp "
              "or --format ocsf (the journal's own events have one shape)")
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        if args.session is not None:
            ids = [full_session_id(store, args.session, args.tenant)]
            if not read_session(store, ids[0], args.tenant):
                error(f"no session {args.session!r} in {store.url}")
                return EXIT_FINDING
        else:
            ids = [i.session_id for i in tenant_sessions(store, args.tenant, args.since)]
        if args.endpoint is not None:
            return _post_otlp(store, ids, args)
        try:
            out = sys.stdout if args.output is None else \
                open(args.output, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError as exc:
            error(f"cannot write {args.output} ({exc.strerror or exc}); check the path")
            return EXIT_USAGE
        try:
            if args.format == "otlp":
                from tether.observe.otel import content_enabled
                from tether.observe.otlp_json import write_otlp

                count = write_otlp((store.read(sid) for sid in ids), out,
                                   content=content_enabled(None), shape=args.shape)
            elif args.format == "ocsf":
                count = write_ocsf(store, ids, out, redact_keys=args.redact_key,
                                   pins=args.pins, shape=args.shape)
            else:
                count = audit_sign.export_jsonl(store, ids, out)
        finally:
            if out is not sys.stdout:
                out.close()
    finally:
        store.close()
    where = "stdout" if args.output is None else str(Path(args.output))
    what = {"otlp": "spans", "ocsf": "OCSF records"}.get(args.format, "events")
    print(f"exported {count} {what} of {len(ids)} session{'' if len(ids) == 1 else 's'} to "
          f"{where}", file=sys.stderr)
    return EXIT_OK


def _post_otlp(store: Store, ids: list[str], args: argparse.Namespace) -> int:
    """``export --format otlp --endpoint URL``: the sessions' spans sent to a collector."""
    if args.format != "otlp":
        error("--endpoint sends spans to a collector: use it with --format otlp")
        return EXIT_USAGE
    from tether.journal.views.shapes import derive
    from tether.observe.otel import OTelSink, content_enabled, to_sdk_spans

    sink = OTelSink(endpoint=args.endpoint)
    spans = [s for sid in ids for s in derive(args.shape, store.read(sid),
                                              content=content_enabled(None))]
    try:
        result = sink.exporter.export(to_sdk_spans(spans, sink.resource))
    finally:
        sink.close()
    if result.name != "SUCCESS":
        error(f"the collector at {args.endpoint} did not accept the spans; check that it "
              "listens for OTLP/HTTP there")
        return EXIT_FINDING
    print(f"sent {len(spans)} spans of {len(ids)} session{'' if len(ids) == 1 else 's'} to "
          f"{args.endpoint}", file=sys.stderr)
    return EXIT_OK
