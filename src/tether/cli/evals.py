"""``tether eval run|report`` and ``tether metrics``: reliability from the shell and from CI.

Why: an evaluation is run once and read many times — by a person (the HTML page), by CI (the
JSON and ``--baseline``) and later again from the store, where the trials' journals are the
record. ``eval report`` rebuilds the report from the journals alone; ``metrics`` computes the
same run metrics for any sessions in a store, production traffic included.

Exit codes: 0 done; 1 pass^k fell below the baseline's interval (``--baseline``); 2 the command
could not run (bad usage, an unreadable suite, agent or baseline, no store, no trials).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    open_existing,
    parse_time,
    store_url,
    usage,
)
from tether.errors import InvalidArgument
from tether.vocabulary import EventType

GRADER_AGENT = "eval-grader"  # the sessions that hold grades are not runs


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "eval", help="evaluate an agent's reliability (pass^k)",
        description="Run an agent k times on every task of a suite, under perturbations, and "
        "report pass^k.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="eval commands", metavar="COMMAND")
    run = sub.add_parser("run", help="run an evaluation",
                         description="Run every task of SUITE k times under each perturbation.")
    run.add_argument("suite", help="a suite file (.yaml, .yml or .jsonl)")
    run.add_argument("--agent", required=True, metavar="MODULE:FUNCTION",
                     help="a function returning the tether Agent to evaluate (it may take the "
                     "trial's environment)")
    run.add_argument("-k", type=int, default=8, help="trials per task and perturbation")
    run.add_argument("--perturb", default="canonical", metavar="NAMES",
                     help="comma-separated: canonical, order_shuffled, paraphrase, "
                     "distractor_tools, tool_faults, provider_faults, irrelevant_context")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--name", help="the evaluation's name (default: the suite's); a run with "
                     "the same name, suite and seed resumes, skipping graded trials")
    run.add_argument("--concurrency", type=int, default=8, help="trials at once per process")
    run.add_argument("--workers", type=int, default=1, help="worker processes")
    run.add_argument("--dask", metavar="ADDRESS",
                     help="run on Dask: 'local' (a LocalCluster on loopback) or tcp://host:port")
    run.add_argument("--no-progress", action="store_true",
                     help="no progress bar (there is none unless stderr is a terminal)")
    _outputs(run)
    add_store_option(run)
    run.set_defaults(run=run_eval)
    report = sub.add_parser("report", help="rebuild a report from the store",
                            description="Rebuild an evaluation's report from its trials' "
                            "journals alone.")
    report.add_argument("--name", required=True, help="the evaluation's name")
    _outputs(report)
    add_store_option(report)
    report.set_defaults(run=run_report)
    dojo = sub.add_parser(
        "agentdojo", help="prompt-injection containment on AgentDojo",
        description="Run AgentDojo's suites with the obedient model (it follows every "
        "injection it reads): once with nothing in the way, once governed; print what the "
        "policy lets through and what it costs. Needs the agentdojo extra.")
    dojo.add_argument("--suites", "--suite", dest="suites",
                      default="banking,slack,travel,workspace",
                      help="comma-separated: AgentDojo's workspace, travel, banking, slack; "
                      "AgentDyn's shopping, github, dailylife; or agentdyn (its three)")
    dojo.add_argument("--version", default="v1.2.2",
                      help="AgentDojo benchmark version (AgentDyn has one: ignored for its suites)")
    dojo.add_argument("--policy", default="contained",
                      help="contained (contain_untrusted_flows, scope_to_plan, keep_private, "
                      "no_unasked_repeats, untrusted_shapes and named_days), scoped "
                      "(contain_untrusted_flows "
                      "and scope_to_request), flows "
                      "(contain_untrusted_flows alone), taint (contain_untrusted), allow, or a "
                      "YAML policy file")
    dojo.add_argument("--approver", default="deny", choices=("deny", "oracle", "approve"),
                      help="who answers approval requests: deny all, an oracle that approves "
                      "exactly the user's own calls, or approve all")
    dojo.add_argument("--attack", default="stock", choices=("stock", "adaptive", "both"),
                      help="AgentDojo's own injections, tether's policy-aware set built from "
                      "each user task's context (banking, slack, travel and AgentDyn's three; "
                      "rows per kind), or both")
    dojo.add_argument("--user-tasks", metavar="IDS",
                      help="comma-separated user task ids to run (default: all of each suite)")
    dojo.add_argument("--workers", type=int, default=2, help="worker processes")
    dojo.add_argument("--json", metavar="FILE", help="write the table as JSON")
    dojo.add_argument("--html", metavar="FILE", help="write the table as an HTML page")
    dojo.add_argument("--baseline", metavar="FILE",
                      help="an earlier --json: exit 1 if attack success rose or utility fell")
    dojo.add_argument("--trust-probe", action="store_true",
                      help="instead: plant a canary in every injection vector, run every task's "
                      "own calls, and report the tools that carried one; exit 1 if one the "
                      "overlay declares trusted did")
    dojo.set_defaults(run=run_agentdojo)

    metrics = commands.add_parser(
        "metrics", help="run metrics of stored sessions",
        description="Completion, loop, budget-stop, recovery, error, denial and approval rates "
        "and cost/token/step/latency distributions, from the journals in a store.")
    metrics.add_argument("--since", metavar="WHEN", type=parse_time,
                         help="only sessions written since: 24h, 7d, 2025-01-31, ...")
    metrics.add_argument("--until", metavar="WHEN", type=parse_time)
    metrics.add_argument("--agent", help="only sessions of this agent (by name)")
    metrics.add_argument("--json", action="store_true", help="print JSON")
    add_store_option(metrics)
    metrics.set_defaults(run=run_metrics)


def _outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", help="write report.json and report.html here")
    parser.add_argument("--baseline", metavar="FILE",
                        help="an earlier report.json: exit 1 if a pass^k falls below its "
                        "interval")


def _baseline(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        loaded: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidArgument(f"cannot read the baseline {path}: {exc}") from None
    return loaded


def _finish(report: Any, args: argparse.Namespace, baseline: dict[str, Any] | None) -> int:
    from tether.evals.report import regressions

    print(report.summary())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        report.write_json(out / "report.json")
        report.write_html(out / "report.html")
        print(f"wrote {out / 'report.json'} and {out / 'report.html'}")
    if baseline is None:
        return EXIT_OK
    try:
        found = regressions(report.to_dict(), baseline)
    except (KeyError, ValueError) as exc:
        error(f"the baseline cannot be compared: {exc}")
        return EXIT_USAGE
    for line in found:
        print(f"regression: {line}")
    if not found:
        print("no pass^k below the baseline's intervals")
    return EXIT_FINDING if found else EXIT_OK


def run_eval(args: argparse.Namespace) -> int:
    from tether.cli.progress import trial_progress
    from tether.evals.runner import evaluate, load_reference
    from tether.evals.tasks import SuiteError, load_suite
    from tether.store.base import StoreError
    from tether.store.opening import open_store

    try:
        suite = load_suite(args.suite)
        baseline = _baseline(args.baseline)
        load_reference(args.agent)  # a wrong reference is a usage error, before any trial
        store = open_store(store_url(args.store))
    except (SuiteError, ValueError, StoreError) as exc:
        error(str(exc))
        return EXIT_USAGE
    perturb = [p.strip() for p in args.perturb.split(",") if p.strip()]
    try:
        with trial_progress() as bar:  # a rich bar on a terminal only (tether.cli.progress)
            report = evaluate(args.agent, suite.tasks, k=args.k, perturbations=perturb,
                              seed=args.seed, name=args.name or suite.name, suite=suite.name,
                              store=store, concurrency=args.concurrency, workers=args.workers,
                              dask=args.dask, progress=None if args.no_progress else bar)
    except (ValueError, TypeError, ImportError) as exc:
        error(str(exc))
        return EXIT_USAGE
    finally:
        store.close()
    return _finish(report, args, baseline)


def run_report(args: argparse.Namespace) -> int:
    from tether.evals.report import Report
    from tether.evals.trials import stored_trials

    try:
        baseline = _baseline(args.baseline)
    except ValueError as exc:
        error(str(exc))
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        records = stored_trials(store, args.name)
    finally:
        store.close()
    if not records:
        error(f"no graded trials of an evaluation named {args.name!r} in this store")
        return EXIT_USAGE
    report = Report.of(args.name, records, seed=records[0].key.seed)
    return _finish(report, args, baseline)


def run_metrics(args: argparse.Namespace) -> int:
    from tether.journal.views.metrics import RunMetrics, session_facts

    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        infos = [i for i in store.sessions(since=args.since, until=args.until)
                 if i.agent != GRADER_AGENT and (args.agent is None or i.agent == args.agent)]
        facts = [session_facts(events) for events in (store.read(i.session_id) for i in infos)
                 if events and events[0].type == EventType.SESSION_START]
    finally:
        store.close()
    metrics = RunMetrics.of(facts)
    if args.json:
        print(json.dumps(metrics.to_dict(), indent=2, sort_keys=True))
    else:
        for name, value in metrics.table():
            print(f"{name:<44} {value}")
    return EXIT_OK


def _trust_probe(suites: list[str], version: str) -> int:
    from tether.evals.agentdojo import probe_trust
    from tether.journal.views.trust import render

    findings = 0
    for name in suites:
        found, unexercised = probe_trust(name, version)
        findings += sum(c.finding for c in found)
        print(f"== {name} ({_benchmark([name], version)}): a canary in every injection vector")
        print(render(found))
        if unexercised:
            print(f"not called by any task, so not judged: {', '.join(unexercised)}")
    return EXIT_FINDING if findings else EXIT_OK


def _suites(spec: str) -> list[str]:
    """``--suites``: names, comma-separated; ``agentdyn`` stands for AgentDyn's three."""
    from tether.evals.agentdojo import AGENTDYN

    names: list[str] = []
    for name in (s.strip() for s in spec.split(",")):
        for one in (AGENTDYN if name == "agentdyn" else (name,) if name else ()):
            if one not in names:
                names.append(one)
    return names


def _benchmark(suites: list[str], version: str) -> str:
    from tether.evals.agentdojo import AGENTDYN
    from tether.evals.agentdojo.agentdyn import VERSION

    dyn = [s for s in suites if s in AGENTDYN]
    if dyn and len(dyn) == len(suites):
        return f"AgentDyn ({VERSION})"
    return f"AgentDojo {version}" + (f" and AgentDyn ({VERSION})" if dyn else "")


def run_agentdojo(args: argparse.Namespace) -> int:
    from tether.evals.injection import policy_named, render, render_html, run_benchmark, table

    suites = _suites(args.suites)
    try:
        baseline = _baseline(args.baseline)
        policy_named(args.policy)  # a policy that does not load is a usage error, before runs
        from tether.evals.agentdojo import load_suite

        for name in suites:
            load_suite(name, args.version)
    except (ValueError, ImportError, KeyError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if args.trust_probe:
        return _trust_probe(suites, args.version)
    runs = {"open": ("allow", "none"), "governed": (args.policy, args.approver)}
    only = [t.strip() for t in args.user_tasks.split(",")] if args.user_tasks else None
    results = {label: run_benchmark(suites, policy=policy, approver=approver,
                                    version=args.version, workers=args.workers,
                                    attack=args.attack, user_tasks=only)
               for label, (policy, approver) in runs.items()}
    attacks = ("stock", "adaptive") if args.attack == "both" else (args.attack,)
    rows = table(suites, results["open"], results["governed"], attacks)
    title = (f"{_benchmark(suites, args.version)}, obedient model (scripted stand-in); policy "
             f"{args.policy}, approver {args.approver}")
    print(title)
    print(render(rows))
    dropped = sum(r.dropped for r in rows if r.suite == "all" or len(suites) == 1)
    if "adaptive" in attacks:
        print(f"adaptive: {dropped} generated pairs the open door did not lose were dropped")
    if args.html:
        Path(args.html).write_text(render_html(title, rows), encoding="utf-8")
    data = {"version": args.version, "policy": args.policy, "approver": args.approver,
            "rows": [r.to_dict() for r in rows]}
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if baseline is None:
        return EXIT_OK
    worse = [f"{r.suite}{'' if r.attack == 'stock' else f' ({r.attack})'}: {what}"
             for r in rows if r.kind is None
             for old in baseline.get("rows", []) if old.get("suite") == r.suite
             and old.get("attack", "stock") == r.attack and old.get("kind") is None
             for what, bad in (
                 (f"attack success {r.attack_success:.1%} > {old['attack_success']:.1%}",
                  r.attack_success > old["attack_success"]),
                 (f"benign utility {r.benign_utility:.1%} < {old['benign_utility']:.1%}",
                  r.benign_utility < old["benign_utility"])) if bad]
    for line in worse:
        print(f"regression: {line}")
    return EXIT_FINDING if worse else EXIT_OK
