"""Tasks, and suites of them read from YAML or JSONL as strictly as policies are.

Why: an evaluation is only comparable run to run if its tasks are data with stable identities.
A ``Task`` has an id (given, or derived from its prompt, so reordering a suite changes nothing),
a prompt, the expected answer, a grader, tags and metadata, and optionally an ``environment``
factory: a fresh world for each trial (a fake order database), which state graders then inspect.
Decision: a suite file that is "mostly right" does not load — unknown keys, wrong types, duplicate
keys or ids, a grader that does not exist: an error naming the file, the line and the key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import InvalidArgument, UsageError, WrongType
from tether.policy.yaml_source import Node, PolicyLoadError, describe, parse_yaml
from tether.reasoning import graders as g
from tether.reasoning.graders import Grader


class SuiteError(UsageError, ValueError):
    """A suite file is unreadable, malformed or invalid; nothing was loaded."""


@dataclass(frozen=True)
class Task:
    """One task of an evaluation.

    Args:
        prompt: What the agent is asked.
        expected: The answer the default grader (``exact_match``) wants.
        grader: Grades each trial's ``Outcome``: one of ``tether.evals``' graders or a function
            ``(Outcome) -> bool | Grade``. Default: ``exact_match()`` on ``expected``; with
            neither, ``finished()`` (the run's reliability, not the answer's correctness).
        metadata: Labels journaled with each trial.
        tags: Labels to slice a report by.
        id: The task's id. Default: derived from the prompt.
        environment: A factory of a fresh world per trial, for graders of its ``state``."""
    prompt: str
    expected: Any = None
    # default: exact_match() on ``expected``; with neither, finished() — the trial passes when
    # the run finishes, which measures the run's reliability, not the answer's correctness
    grader: Grader | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    id: str = ""  # default: derived from the prompt
    environment: Callable[[], Any] | None = None  # a fresh world per trial, for state graders

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise InvalidArgument("a Task needs a non-empty prompt")
        if self.grader is not None and not callable(self.grader):
            raise WrongType(f"grader {self.grader!r} is not callable: use one of "
                            "tether.evals' graders or a function (Outcome) -> bool | Grade")
        if self.environment is not None and not callable(self.environment):
            raise WrongType("environment must be a factory: a callable that makes a fresh one")
        if isinstance(self.tags, str):
            raise WrongType(f"tags must be a list of strings, not the string {self.tags!r}")
        object.__setattr__(self, "tags", tuple(self.tags))
        if not self.id:
            digest = hashlib.sha256(self.prompt.encode()).hexdigest()[:12]
            object.__setattr__(self, "id", f"task-{digest}")

    @property
    def judge(self) -> Grader:
        """The grader that grades this task: ``grader``, or the default."""
        if self.grader is not None:
            return self.grader
        return g.exact_match() if self.expected is not None else g.finished()


@dataclass(frozen=True, slots=True)
class Suite:
    """A named list of tasks, as ``load_suite`` reads it from a YAML file."""
    name: str
    tasks: tuple[Task, ...]


def check_tasks(tasks: Sequence[Task]) -> tuple[Task, ...]:
    """The tasks, refused if empty or if two share an id (their trials would be confused)."""
    tasks = tuple(tasks)
    if not tasks:
        raise InvalidArgument("no tasks to evaluate")
    seen: dict[str, Task] = {}
    for task in tasks:
        if not isinstance(task, Task):
            raise WrongType(f"{task!r} is not a tether.evals.Task")
        if task.id in seen:
            raise InvalidArgument(
                f"two tasks have the id {task.id!r} ({seen[task.id].prompt[:40]!r}"
                f" and {task.prompt[:40]!r}); give each a distinct id=")
        seen[task.id] = task
    return tasks


def load_suite(path: str | Path) -> Suite:
    """A suite from a ``.yaml``/``.yml`` file (``suite:``, ``tasks:``) or a ``.jsonl`` file (one
    task per line); SuiteError, naming file, line and key, for anything not right."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SuiteError(f"cannot read the suite {path}: {exc.strerror or exc}") from None
    try:
        if path.suffix == ".jsonl":
            name, nodes = path.stem, list(_jsonl(text, str(path)))
        elif path.suffix in (".yaml", ".yml"):
            name, nodes = _yaml(text, str(path), path.stem)
        else:
            raise SuiteError(f"{path}: a suite is a .yaml, .yml or .jsonl file")
        tasks = [_task(node) for node in nodes]
        ids: dict[str, int] = {}
        for task, node in zip(tasks, nodes, strict=True):
            if task.id in ids:
                node.fail(f"the task id {task.id!r} is used twice (first on line {ids[task.id]})",
                          "give each task its own id")
            ids[task.id] = node.line
    except PolicyLoadError as exc:
        raise SuiteError(str(exc)) from None
    return Suite(name, tuple(tasks))


def _yaml(text: str, source: str, default_name: str) -> tuple[str, list[Node]]:
    top = Node.root(parse_yaml(text, source), source).mapping(("suite", "tasks"), ("tasks",),
                                                              what="a suite")
    name = top["suite"].text() if "suite" in top else default_name
    return name, [item.within(f"tasks[{i}]") for i, item in enumerate(top["tasks"].items())]


def _jsonl(text: str, source: str) -> list[Node]:
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InvalidArgument(f"the key {key!r} appears twice")
            out[key] = value
        return out

    nodes = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=unique,
                               parse_constant=lambda c: _no_constant(c))
        except ValueError as exc:
            raise SuiteError(f"{source}, line {number}: not a JSON object ({exc}); write one "
                             "task per line as {\"prompt\": ..., ...}") from None
        nodes.append(Node(value, source, number, "", f"task on line {number}"))
    if not nodes:
        raise SuiteError(f"{source}: no tasks (write one JSON object per line)")
    return nodes


def _no_constant(name: str) -> Any:
    raise InvalidArgument(f"{name} is not a number JSON allows")


TASK_KEYS = ("id", "prompt", "expected", "grader", "tags", "metadata")


def _task(node: Node) -> Task:
    fields = node.mapping(TASK_KEYS, ("prompt",), what="a task")
    expected = fields["expected"].value if "expected" in fields else None
    if isinstance(expected, bool) or not isinstance(expected, str | int | float | None):
        fields["expected"].fail(f"expected must be a string or a number, got "
                                f"{describe(expected)}", "quote it")
    grader = _grader(fields["grader"]) if "grader" in fields else None
    if grader is None and expected is None:
        node.fail("the task has neither 'expected' nor 'grader'", "add one of them")
    metadata = fields["metadata"].entries("a mapping of labels") if "metadata" in fields else {}
    return Task(
        prompt=fields["prompt"].text(), expected=expected, grader=grader,
        tags=fields["tags"].texts() if "tags" in fields else (),
        metadata={key: item.value for key, item in metadata.items()},
        id=fields["id"].text() if "id" in fields else "")


GRADERS = ("exact_match", "numeric", "regex", "contains", "json_schema", "called",
           "not_called", "finished", "output_fields", "python")


def _grader(node: Node) -> Grader:
    """A grader by name (``numeric``), with arguments (``{numeric: {tolerance: 0.5}}``), or a
    list of them (all must pass)."""
    if isinstance(node.value, list):
        return g.all_of(*(_grader(item) for item in node.items("a list of graders")))
    if isinstance(node.value, str):
        name, args = node.choice(GRADERS), {}
    else:
        entries = node.mapping(GRADERS, what="a grader such as 'numeric' or "
                                             "{numeric: {tolerance: 0.5}}")
        if len(entries) != 1:
            node.fail("a grader mapping names exactly one grader", "use a list for several")
        name, arg = next(iter(entries.items()))
        if name == "python":
            return _python(arg)
        args = arg.mapping(_ARGS[name], _REQUIRED.get(name, ()), what=f"{name}'s arguments")
    if name == "python":
        node.fail("python needs a reference", "write {python: 'module:function'}")
    if name in _REQUIRED and not args:
        node.fail(f"{name} needs {', '.join(_REQUIRED[name])}",
                  f"write {{{name}: {{{_REQUIRED[name][0]}: ...}}}}")
    return _build(name, args)


_ARGS: dict[str, tuple[str, ...]] = {
    "exact_match": ("expected",), "numeric": ("expected", "tolerance", "relative"),
    "regex": ("pattern", "ignore_case"), "contains": ("texts", "ignore_case"),
    "json_schema": ("schema",), "called": ("tool", "arguments"), "not_called": ("tool",),
    "finished": (), "output_fields": ("fields",),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "regex": ("pattern",), "json_schema": ("schema",), "called": ("tool",),
    "not_called": ("tool",),
}


def _build(name: str, args: Mapping[str, Node]) -> Grader:
    def text(key: str) -> Any:
        return args[key].text() if key in args else None

    def flag(key: str, default: bool) -> bool:
        return args[key].boolean() if key in args else default

    if name == "exact_match":
        return g.exact_match(None if "expected" not in args else str(args["expected"].value))
    if name == "numeric":
        expected = args["expected"].number() if "expected" in args else None
        return g.numeric(expected, tolerance=args["tolerance"].number() if "tolerance" in args
                         else 1e-9, relative=args["relative"].number() if "relative" in args
                         else 0.0)
    if name == "regex":
        return g.regex(text("pattern"), ignore_case=flag("ignore_case", False))
    if name == "contains":
        texts = args["texts"].texts() if "texts" in args else ()
        return g.contains(*texts, ignore_case=flag("ignore_case", True))
    if name == "json_schema":
        schema = args["schema"]
        if not isinstance(schema.value, dict):
            schema.fail(f"expected a JSON schema mapping, got {describe(schema.value)}",
                        "write the schema as a mapping")
        return g.json_schema(json.loads(json.dumps(schema.value)))
    if name == "called":
        arguments = args["arguments"].entries("a mapping of arguments") if "arguments" in args \
            else {}
        return g.called(text("tool"), **{k: v.value for k, v in arguments.items()})
    if name == "not_called":
        return g.not_called(text("tool"))
    if name == "output_fields":
        fields = args["fields"].entries("a mapping of field names to values") \
            if "fields" in args else None
        return g.output_fields(None if fields is None
                               else {k: v.value for k, v in fields.items()})
    return g.finished()


def _python(node: Node) -> Grader:
    reference = node.text("a 'module:function' reference")
    from tether.references import BadReference, import_object

    try:
        found = import_object(reference, "a grader function (Outcome) -> bool | Grade")
    except BadReference as exc:
        node.fail(str(exc), "check the reference")
    if not callable(found):
        node.fail(f"{reference!r} is not callable", "point at a function (Outcome) -> bool")
    grader: Grader = found
    return grader
