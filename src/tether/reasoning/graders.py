"""Graders: was a trial's outcome right — by its answer, its final environment, or what it did.

Why: pass^k is only as honest as the check behind each trial. A grader looks at an ``Outcome``
(the answer, how the run stopped, every tool call with its status, the trial's environment) and
returns a ``Grade`` or a bool. Decision: a grader that raises, or answers with anything but a
bool or a Grade, *fails* the trial with the error recorded — it never passes one. A run that did
not finish is graded like any other (an answer written in the wrap-up after a budget stop may
still be right); a grader that wants "finished and right" says so with ``finished()``.

Why here, in ``tether.reasoning``: strategies grade too (Reflexion checks an answer with a
grader, LATS values a branch with one), and evaluations run strategies (a trial runs ReAct), so
the graders sit below both: evaluations stand on reasoning, never the other way round. Nothing
here imports tether. Their public names are the ``tether.evals`` face's (``tether.evals.graders``
is a deprecated stub for one release).
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from tether.errors import InvalidArgument, MissingExtra, install_command

RAN = frozenset({"ok", "error", "timeout"})  # statuses of calls whose tool was invoked


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call of the trial as the model asked for it, and what became of it."""

    tool: str
    arguments: Mapping[str, Any]
    status: str
    content: str

    @property
    def ran(self) -> bool:
        return self.status in RAN


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a grader sees of a finished trial."""

    prompt: str  # the task's own prompt (not the perturbed one the model saw)
    expected: Any
    answer: str
    stop_reason: str
    calls: tuple[CallRecord, ...] = ()
    environment: Any = None  # the trial's own environment object, when the task has one
    session_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # the answer validated as the agent's output_type (result.output), None without one
    output: Any = None


@dataclass(frozen=True, slots=True)
class Grade:
    """A grader's verdict on one trial: ``passed``, ``why`` in words, and the grader's own
    ``score`` when it has one (a judge's). A grader may return a plain bool instead."""
    passed: bool
    why: str = ""
    score: float | None = None  # a grader's own measure (a judge's score), when it has one

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "why": self.why, "score": self.score}


class Grader(Protocol):
    def __call__(self, outcome: Outcome, /) -> Grade | bool | Awaitable[Grade | bool]: ...


async def grade(grader: Grader, outcome: Outcome) -> Grade:
    """Run ``grader`` on ``outcome``; whatever goes wrong fails the trial, with the reason."""
    try:
        verdict: Any = grader(outcome)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        return Grade(False, f"the grader failed: {type(exc).__name__}: {exc}")
    if isinstance(verdict, Grade):
        return verdict
    if verdict is True or verdict is False:
        return Grade(verdict, "" if verdict else "the grader said no")
    return Grade(False, f"the grader answered {verdict!r}, which is neither a bool nor a Grade")


def _named(fn: Callable[[Outcome], Grade], name: str) -> Grader:
    fn.__qualname__ = fn.__name__ = name
    return fn


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().strip(".!").casefold()


def _expected(given: Any, outcome: Outcome, grader: str) -> Any:
    value = outcome.expected if given is None else given
    if value is None:
        raise InvalidArgument(f"{grader}() has no expected value: give one to the grader or to the "
                         "Task (expected=...)")
    return value


def exact_match(expected: str | None = None) -> Grader:
    """The answer equals ``expected`` (or the task's) up to case, spacing and a final period."""
    def check(outcome: Outcome) -> Grade:
        want = str(_expected(expected, outcome, "exact_match"))
        ok = _normal(outcome.answer) == _normal(want)
        return Grade(ok, "" if ok else f"expected {want!r}, got {outcome.answer[:200]!r}")
    return _named(check, "exact_match")


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def last_number(text: str) -> Decimal | None:
    """The last number written in ``text`` ("1,234.5" reads as 1234.5), or None."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return Decimal(found[-1].replace(",", ""))
    except InvalidOperation:
        return None


def numeric(expected: float | str | None = None, *, tolerance: float = 1e-9,
            relative: float = 0.0) -> Grader:
    """The last number in the answer is within ``tolerance`` (absolute) or ``relative`` of
    ``expected`` (or the task's)."""
    if not (tolerance >= 0 and relative >= 0):
        raise InvalidArgument("tolerance and relative must be >= 0")

    def check(outcome: Outcome) -> Grade:
        want = Decimal(str(_expected(expected, outcome, "numeric")))
        got = last_number(outcome.answer)
        if got is None:
            return Grade(False, f"no number in the answer {outcome.answer[:200]!r}")
        gap = abs(got - want)
        ok = gap <= Decimal(str(tolerance)) or gap <= abs(want) * Decimal(str(relative))
        return Grade(ok, "" if ok else f"expected {want}, got {got}")
    return _named(check, "numeric")


def regex(pattern: str, *, ignore_case: bool = False) -> Grader:
    """The answer matches ``pattern`` somewhere (``re.search``)."""
    compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)

    def check(outcome: Outcome) -> Grade:
        ok = compiled.search(outcome.answer) is not None
        return Grade(ok, "" if ok else f"the answer does not match /{pattern}/")
    return _named(check, "regex")


def contains(*texts: str, ignore_case: bool = True) -> Grader:
    """The answer contains every one of ``texts`` (or the task's expected text)."""
    def check(outcome: Outcome) -> Grade:
        wanted = texts or (str(_expected(None, outcome, "contains")),)
        answer = outcome.answer.casefold() if ignore_case else outcome.answer
        missing = [t for t in wanted if (t.casefold() if ignore_case else t) not in answer]
        return Grade(not missing, f"missing {missing}" if missing else "")
    return _named(check, "contains")


def _json_in(answer: str) -> Any:
    text = answer.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    value = json.loads(text, parse_constant=lambda name: math.nan)
    return value


def json_schema(schema: Mapping[str, Any]) -> Grader:
    """The answer (or its fenced ```json block) is JSON valid against ``schema``
    (``jsonschema``, installed with ``tether[evals]``)."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise MissingExtra("json_schema() needs the jsonschema package: "
                          f"{install_command('evals')}") from None
    validator = jsonschema.Draft202012Validator(schema)
    validator.check_schema(schema)

    def check(outcome: Outcome) -> Grade:
        try:
            value = _json_in(outcome.answer)
        except ValueError as exc:
            return Grade(False, f"the answer is not JSON: {exc}")
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            where = "/".join(str(p) for p in errors[0].path) or "(root)"
            return Grade(False, f"{where}: {errors[0].message}")
        return Grade(True)
    return _named(check, "json_schema")


def matches_model(model: type[Any]) -> Grader:
    """The answer (or its fenced ```json block) validates as the pydantic ``model``."""
    def check(outcome: Outcome) -> Grade:
        from pydantic import ValidationError

        try:
            model.model_validate(_json_in(outcome.answer))
        except (ValueError, ValidationError) as exc:
            return Grade(False, f"not a valid {model.__name__}: {str(exc)[:300]}")
        return Grade(True)
    return _named(check, "matches_model")


_MISSING = object()


def _field(value: Any, name: str) -> Any:
    """A field of a validated output: a TypedDict's key, a model's or dataclass's attribute."""
    if isinstance(value, Mapping):
        return value.get(name, _MISSING)
    return getattr(value, name, _MISSING)


def output_fields(expected: Mapping[str, Any] | None = None, **fields: Any) -> Grader:
    """The run's validated output (``result.output``, with ``Agent(output_type=...)``) has
    these fields with these values — given as a mapping, as keywords, or the task's
    ``expected`` mapping; a dotted name (``"address.city"``) reaches into a nested field.
    No validated output fails the trial, saying why."""
    def check(outcome: Outcome) -> Grade:
        want = {**(_expected(expected, outcome, "output_fields") if expected is not None
                   or not fields else {}), **fields}
        if not isinstance(want, Mapping):
            raise InvalidArgument("output_fields() compares fields: give it a mapping of field "
                             "names to values")
        if outcome.output is None:
            return Grade(False, f"no validated output (the run stopped: {outcome.stop_reason})")
        wrong = []
        for name, value in want.items():
            got = outcome.output
            for part in str(name).split("."):
                got = _field(got, part) if got is not _MISSING else got
            if got is _MISSING:
                wrong.append(f"{name}: missing")
            elif got != value:
                wrong.append(f"{name}: expected {value!r}, got {got!r}"[:200])
        return Grade(not wrong, "; ".join(wrong))
    return _named(check, "output_fields")


def state(predicate: Callable[[Any], bool], name: str = "state") -> Grader:
    """``predicate(environment)`` holds for the trial's final environment (the object the
    task's ``environment`` factory made for this trial)."""
    def check(outcome: Outcome) -> Grade:
        if outcome.environment is None:
            raise InvalidArgument("state() needs the task to have an environment factory")
        ok = bool(predicate(outcome.environment))
        return Grade(ok, "" if ok else f"{name}: the final state does not satisfy it")
    return _named(check, name)


def trajectory(predicate: Callable[[tuple[CallRecord, ...]], bool],
               name: str = "trajectory") -> Grader:
    """``predicate(calls)`` holds for the trial's tool calls, in order."""
    def check(outcome: Outcome) -> Grade:
        ok = bool(predicate(outcome.calls))
        return Grade(ok, "" if ok else f"{name}: the calls made do not satisfy it")
    return _named(check, name)


def called(tool: str, **arguments: Any) -> Grader:
    """A call of ``tool`` ran with (at least) these ``arguments``."""
    def check(outcome: Outcome) -> Grade:
        for c in outcome.calls:
            if c.tool == tool and c.ran and all(c.arguments.get(k) == v
                                                for k, v in arguments.items()):
                return Grade(True)
        return Grade(False, f"no call of {tool} ran with {arguments}")
    return _named(check, f"called({tool})")


def not_called(tool: str) -> Grader:
    """No call of ``tool`` ran."""
    def check(outcome: Outcome) -> Grade:
        ran = [c for c in outcome.calls if c.tool == tool and c.ran]
        return Grade(not ran, f"{tool} ran {len(ran)} time(s)" if ran else "")
    return _named(check, f"not_called({tool})")


def finished() -> Grader:
    """The run finished (no budget, loop, denial or error stopped it)."""
    def check(outcome: Outcome) -> Grade:
        ok = outcome.stop_reason == "finished"
        return Grade(ok, "" if ok else f"the run stopped: {outcome.stop_reason}")
    return _named(check, "finished")


def all_of(*graders: Grader) -> Grader:
    """Every grader passes; the first that does not says why."""
    async def check(outcome: Outcome) -> Grade:
        for each in graders:
            verdict = await grade(each, outcome)
            if not verdict.passed:
                return verdict
        return Grade(True)
    check.__qualname__ = check.__name__ = "all_of"
    return check
