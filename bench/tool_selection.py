"""Tool selection's recall and the tokens it saves: python bench/tool_selection.py

The catalog (≥ 500 tools): the npm reference MCP servers' tools as an agent is offered them
(snapshot in bench/tool_catalog.json, refreshed by bench/tool_catalog.py), AgentDojo's four
suites' tools (the ``agentdojo`` package), and generated distractors — verb-object tools over
the same vocabulary (files, email, calendars, payments, messages...) so that they compete.

The tasks: every AgentDojo v1.2.2 user task, with its ground-truth calls, plus hand-written tasks
for the MCP tools. Two measures of recall@k, for k in 3, 5, 10, 20:

- **first turn**: the query is the task alone; a (task, needed tool) pair counts if the tool is
  among the k best-ranked.
- **per turn** (AgentDojo): the ground-truth calls are run in order against the suite's
  environment; the query for call i is the task plus the result of call i-1, as the runtime
  builds it (``tether.runtime.context.selecting``); a call counts if its tool is among the k
  offered.

Tokens: ``estimate_tools_tokens`` (the runtime's own estimate of what tools add to a request)
of the whole catalog against the mean of the k offered.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from tether.models.base import estimate_tools_tokens
from tether.tools.selection import BM25
from tether.types import ToolSpec

KS = (3, 5, 10, 20)
SNAPSHOT = Path(__file__).with_name("tool_catalog.json")
DISTRACTORS = 420
QUERY_CHARS = 4_000  # as tether.runtime.context.selecting

MCP_TASKS = [  # (task, the tool it needs)
    ("Read the file notes/todo.txt and tell me what is on it.", "fs_read_text_file"),
    ("Create a folder called reports in the project.", "fs_create_directory"),
    ("Move draft.md into the archive directory.", "fs_move_file"),
    ("Find every .csv file under the data folder.", "fs_search_files"),
    ("Show me the directory tree of src.", "fs_directory_tree"),
    ("How big is report.pdf and when was it last modified?", "fs_get_file_info"),
    ("Replace 'colour' with 'color' in README.md.", "fs_edit_file"),
    ("Which directories am I allowed to access?", "fs_list_allowed_directories"),
    ("Remember that Alice works at Acme as an engineer.", "memory_create_entities"),
    ("Record that Alice manages Bob in the knowledge graph.", "memory_create_relations"),
    ("What do you know about Alice? Search your memory.", "memory_search_nodes"),
    ("Forget everything about Bob.", "memory_delete_entities"),
    ("Think this problem through step by step before answering.",
     "thinking_sequentialthinking"),
    ("Echo back the message 'hello'.", "everything_echo"),
    ("Add 17 and 25 for me.", "everything_get_sum"),
]

VERBS = ("create", "delete", "update", "list", "get", "search", "archive", "export", "import",
         "share", "sync", "validate", "approve", "cancel", "schedule", "send", "fetch", "tag",
         "merge", "restore")
OBJECTS = ("invoice", "ticket", "repository", "issue", "pull request", "customer", "order",
           "shipment", "product", "employee", "payroll run", "dashboard", "alert", "metric",
           "database table", "storage bucket", "container", "cluster", "DNS record",
           "certificate", "user account", "group", "role", "email template", "calendar resource",
           "file share", "message thread", "payment method", "subscription", "contract",
           "expense report", "flight booking", "hotel reservation", "car rental", "review",
           "channel", "webhook", "note", "document", "spreadsheet")
SERVICES = ("CRM", "helpdesk", "git hosting", "cloud console", "HR system", "billing",
            "analytics", "inventory", "travel desk", "team chat")


def distractors(n: int, seed: int = 7) -> list[ToolSpec]:
    """``n`` plausible tools over the same vocabulary as the real ones, deterministically."""
    rng = random.Random(seed)
    combos = [(v, o, s) for v in VERBS for o in OBJECTS for s in SERVICES]
    rng.shuffle(combos)
    out = []
    for verb, obj, service in combos[:n]:
        name = f"{service.replace(' ', '_').lower()}_{verb}_{obj.replace(' ', '_').lower()}"
        params = {"type": "object", "properties": {
            f"{obj.split()[-1].lower()}_id": {"type": "string",
                                              "description": f"The {obj}'s identifier."},
            "note": {"type": "string", "description": "An optional note."}}}
        out.append(ToolSpec(name, f"{verb.capitalize()} a {obj} in the {service}.", params))
    return out


def agentdojo() -> tuple[list[ToolSpec], list[dict[str, Any]]]:
    """AgentDojo's tools and, per user task, its prompt and ground-truth calls with the text
    of each call's result (run against the suite's environment)."""
    warnings.simplefilter("ignore")
    from agentdojo.functions_runtime import FunctionsRuntime
    from agentdojo.task_suite import get_suite

    from tether.evals.agentdojo import _plain

    specs: dict[str, ToolSpec] = {}
    tasks = []
    for name in ("workspace", "travel", "banking", "slack"):
        suite = get_suite("v1.2.2", name)
        for f in suite.tools:
            specs.setdefault(f.name, ToolSpec(f.name, f.description,
                                              f.parameters.model_json_schema()))
        runtime = FunctionsRuntime(suite.tools)
        env = suite.load_and_inject_default_environment({})
        for task_id, task in suite.user_tasks.items():
            task_env = task.init_environment(env.model_copy(deep=True))
            calls = []
            for call in task.ground_truth(task_env.model_copy(deep=True)):
                result, error = runtime.run_function(task_env, call.function, dict(call.args))
                text = error if error is not None else json.dumps(_plain(result), default=str)
                calls.append((call.function, str(text)))
            tasks.append({"id": f"{name}/{task_id}", "prompt": task.PROMPT, "calls": calls})
    return list(specs.values()), tasks


def main() -> None:
    mcp = [ToolSpec(t["name"], t["description"], t["parameters"])
           for t in json.loads(SNAPSHOT.read_text())]
    dojo, dojo_tasks = agentdojo()
    catalog = [*mcp, *dojo, *distractors(DISTRACTORS)]
    assert len({s.name for s in catalog}) == len(catalog), "tool names must be unique"
    started = time.perf_counter()
    index = BM25().index(catalog)
    built = time.perf_counter() - started
    by_name = {s.name: s for s in catalog}
    first = [(t["prompt"], tool) for t in dojo_tasks for tool in dict.fromkeys(
        f for f, _ in t["calls"])] + MCP_TASKS
    per_turn = []
    for t in dojo_tasks:
        previous = ""
        for tool, result in t["calls"]:
            per_turn.append((t["prompt"] + "\n" + previous[-QUERY_CHARS:], tool))
            previous = result
    timings: list[float] = []

    def recall(pairs: list[tuple[str, str]], k: int) -> float:
        hits = 0
        for query, tool in pairs:
            started = time.perf_counter()
            ranked = [n for n, _ in index.rank(query, k)]
            timings.append(time.perf_counter() - started)
            hits += tool in ranked
        return hits / len(pairs)

    every = {k: statistics.mean(
        all(f in {n for n, _ in index.rank(t["prompt"], k)} for f, _ in t["calls"])
        for t in dojo_tasks if t["calls"]) for k in KS}
    all_tokens = estimate_tools_tokens(catalog)
    print(f"python {sys.version.split()[0]}; catalog: {len(catalog)} tools = {len(mcp)} MCP "
          f"reference-server tools + {len(dojo)} AgentDojo tools + {DISTRACTORS} distractors; "
          f"BM25 index built in {built * 1000:.0f} ms")
    print(f"first turn: {len(first)} (task, needed tool) pairs over {len(dojo_tasks)} AgentDojo "
          f"user tasks and {len(MCP_TASKS)} MCP tasks; per turn: {len(per_turn)} ground-truth "
          "calls")
    print(f"{'k':>3}  {'recall@k first turn':>20}  {'per turn':>9}  {'all of a task':>13}  "
          f"{'tool tokens/request':>20}  {'saved':>6}")
    for k in KS:
        offered = statistics.mean(estimate_tools_tokens(
            by_name[n] for n, _ in index.rank(query, k)) for query, _ in first)
        print(f"{k:>3}  {recall(first, k):>20.3f}  {recall(per_turn, k):>9.3f}  "
              f"{every[k]:>13.3f}  {offered:>11.0f} of {all_tokens:<6}  "
              f"{1 - offered / all_tokens:>6.1%}")
    print(f"ranking time: median {statistics.median(timings) * 1000:.2f} ms, "
          f"max {max(timings) * 1000:.2f} ms per query")


if __name__ == "__main__":
    main()
