"""Structured output: the type a run's answer must validate as, and how it is checked.

Why: a caller that wants data (a pydantic model, a dataclass, a TypedDict) should get a
validated instance, not text to parse and hope about. The model's answer is untrusted input,
so it is only ever *parsed* as JSON and validated by pydantic (strict mode, the type's own
rules on extra fields) — never evaluated.

Decision: the output type is part of the recipe (``Agent(output_type=...)``) and this module is
the only place that knows pydantic's part in it; pydantic is imported here, when a recipe with
an output type is built, never by ``import tether``. Each check of an answer is journaled
(``output.invalid`` with the errors and the text, or ``output.valid`` with the instance as
JSON), so the state folded from the journal holds the output, a resumed or loaded session
gives the same instance, and an audit shows every failed attempt. The errors are journaled
compactly — where, what, which kind, never the offending input again (it is in the text).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tether.errors import WrongType
from tether.models.base import estimate_text_tokens
from tether.runtime.accounting.stop import Stop, StopReason
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from tether.journal.chain import Journal
    from tether.runtime.record.state import SessionState

# what one output.invalid event keeps of the errors and of the text (the text is also in the
# model.response event; this copy is what a reader of the failure needs next to the errors)
MAX_ERRORS = 10
MAX_TEXT_CHARS = 4000
_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FENCED = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.S)


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """An output type made ready once: its validator, its JSON schema and a name for it."""

    type: Any
    adapter: Any = dataclasses.field(repr=False, compare=False)  # pydantic.TypeAdapter
    schema: Mapping[str, Any] = dataclasses.field(repr=False, compare=False)
    name: str = "output"

    def check(self, text: str) -> tuple[Any, list[dict[str, Any]]]:
        """(the validated instance, []) for a valid answer; (None, the errors) otherwise. NaN
        and infinities (which pydantic reads) are refused: they are not JSON numbers, and the
        journal could not keep the output."""
        from pydantic import ValidationError

        try:
            instance = self.adapter.validate_json(json_text(text), strict=True)
            json.dumps(self.dump(instance), allow_nan=False)
        except ValidationError as exc:
            return None, compact_errors(exc.errors(include_input=False, include_url=False))
        except (ValueError, RecursionError) as exc:  # what jiter or pydantic-core may raise
            return None, [{"loc": [], "msg": f"not valid JSON: {exc}"[:200], "type": "json"}]
        return instance, []

    def dump(self, instance: Any) -> Any:
        """The instance as plain JSON, as journaled."""
        return self.adapter.dump_python(instance, mode="json")

    def revive(self, data: Any) -> Any:
        """The instance again from its journaled JSON (the same validation as the answer had)."""
        return self.adapter.validate_json(json.dumps(data), strict=True)


def output_spec(output_type: Any) -> OutputSpec:
    """The spec of ``output_type``; TypeError, saying what is accepted, for anything else."""

    from pydantic import BaseModel, PydanticUserError, TypeAdapter
    from typing_extensions import is_typeddict

    ok = isinstance(output_type, type) and (
        issubclass(output_type, BaseModel) or dataclasses.is_dataclass(output_type)
        or is_typeddict(output_type))
    if not ok:
        raise WrongType(f"output_type={output_type!r} is not a pydantic model, a dataclass or a "
                        "TypedDict: give the class the answer must validate as, e.g. "
                        "Agent(..., output_type=Invoice)")
    try:
        adapter = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except PydanticUserError as exc:
        raise WrongType(f"output_type={output_type.__name__} cannot be validated "
                        f"from JSON by pydantic: {exc}") from None
    name = _NAME.sub("_", output_type.__name__)[:64] or "output"
    return OutputSpec(output_type, adapter, schema, name)


def json_text(text: str) -> str:
    """The JSON an answer holds: the text itself, the inside of one fenced block around it, or
    from its first ``{`` to its last ``}`` (small models wrap JSON in words) — only cut out,
    never repaired: what is cut out must still validate."""
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    if fenced:
        return fenced.group(1)
    if stripped.startswith("{"):
        return stripped
    first, last = stripped.find("{"), stripped.rfind("}")
    return stripped[first:last + 1] if 0 <= first < last else stripped


def compact_errors(errors: Any) -> list[dict[str, Any]]:
    """pydantic's errors as small JSON records (at most MAX_ERRORS, the count of the rest)."""
    out: list[dict[str, Any]] = [
        {"loc": [p if isinstance(p, int | str) else str(p) for p in e.get("loc", ())],
         "msg": str(e.get("msg", ""))[:200], "type": str(e.get("type", ""))}
        for e in list(errors)[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        out.append({"loc": [], "msg": f"and {len(errors) - MAX_ERRORS} more errors",
                    "type": "more"})
    return out


def describe(errors: list[dict[str, Any]]) -> str:
    """The errors as lines a model can act on: ``field.path: message``."""
    return "\n".join(f"- {'.'.join(map(str, e['loc'])) or '(the answer)'}: {e['msg']}"
                     for e in errors)


def instructions(spec: OutputSpec) -> str:
    """What the system prompt adds when the provider cannot constrain the answer itself."""
    schema = json.dumps(spec.schema, separators=(",", ":"), ensure_ascii=False)
    return (f"When you give your final answer, reply with only one JSON object, no other text, "
            f"that validates against this JSON schema ({spec.name}):\n{schema}")


def repair_note(errors: list[dict[str, Any]], left: int) -> str:
    """The note a repair turn adds: what was wrong, and what to send instead."""
    return (f"[tether] Your answer is not valid output:\n{describe(errors)}\nReply again with "
            f"only the corrected JSON object ({left} more attempt{'s' if left != 1 else ''}).")


def clipped(text: str) -> str:
    """An invalid answer as the journal keeps it in output.invalid."""
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"... [{len(text) - MAX_TEXT_CHARS} more characters]"


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """The chokepoint's side of an output type: check an answer, journal the verdict, and say
    when the repairs are used up. ``native``: the model constrains its answer to the schema
    itself, which then travels in each request (and is counted in its estimate)."""

    spec: OutputSpec
    retries: int
    native: bool

    @property
    def request_estimate(self) -> int:
        """Tokens the schema adds to a request that carries it natively (erring high)."""
        return estimate_text_tokens(json.dumps(self.spec.schema)) if self.native else 0

    def check(self, answer: str, journal: Journal, state: SessionState) -> bool:
        """Validate ``answer``; journal ``output.valid`` (the instance as JSON) or
        ``output.invalid`` (the errors, the text) and, while repairs are left, the repair note
        the next turn sends."""
        spec = self.spec
        instance, errors = spec.check(answer)
        if not errors:
            journal.append(EventType.OUTPUT_VALID, {"type": spec.name,
                                                    "output": spec.dump(instance)})
            return True
        attempt = state.output_invalid + 1
        left = max(0, self.retries + 1 - attempt)
        journal.append(EventType.OUTPUT_INVALID, {"type": spec.name, "attempt": attempt,
                                                  "repairs_left": left, "errors": errors,
                                                  "text": clipped(journal.hide_secrets(answer))})
        if left:
            journal.append(EventType.SESSION_NOTE, {"text": repair_note(errors, left)})
        return False

    def exhausted(self, state: SessionState) -> Stop | None:
        """The stop for an answer that did not validate with no repair left, else None."""
        attempts = state.output_invalid
        if attempts <= self.retries:
            return None
        return Stop(StopReason.OUTPUT_INVALID,
                    f"the answer did not validate as {self.spec.name} in {attempts} "
                    f"attempt{'s' if attempts != 1 else ''} ({self.retries} repair"
                    f"{'s' if self.retries != 1 else ''} allowed); the last one is in the "
                    "journal's output.invalid event", wrap_up=False)
