"""Finding evaluation reports on disk and reading them: what the evaluations page lists.

Why: ``tether eval run --out DIR`` writes ``report.json`` (``tether.evals.report``, schema
``tether.eval.report/1``) and ``tether eval agentdojo --json FILE`` writes its table; the console
lists what the directories it was given (``Console.reports``) hold. The HTML those commands
write carries an inline stylesheet that the console's content-security policy forbids, so the
console reads the JSON and draws its own page.

Decision: a report is named by its path relative to its directory (without ``.json``), prefixed
by the directory's position when several are given; a page opens a report only by a name the
listing gave, never by a path from the URL, so no request can read a file outside those
directories. A JSON file that is neither kind is not listed; one that does not parse is listed
with the parser's error, so a broken report is seen rather than silently missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.evals.report import ALL, SCHEMA

EVALUATION, AGENTDOJO, UNREADABLE = "evaluation", "agentdojo", "unreadable"
MAX_FILES = 2000  # per directory: a listing never walks a whole disk


@dataclass(frozen=True, slots=True)
class Found:
    """A report file: its name in the console, its kind, its path and (unless unreadable) data."""

    name: str
    kind: str
    path: Path
    data: Mapping[str, Any]
    error: str = ""

    @property
    def title(self) -> str:
        if self.kind == EVALUATION:
            trials = len(self.data.get("trials") or [])
            return f"evaluation {self.data.get('evaluation')}: {trials} trials"
        if self.kind == AGENTDOJO:
            return (f"AgentDojo {self.data.get('version')}, policy {self.data.get('policy')}, "
                    f"approver {self.data.get('approver')}")
        return f"unreadable: {self.error}"


def kind_of(data: object) -> str | None:
    if not isinstance(data, Mapping):
        return None
    if data.get("schema") == SCHEMA:
        return EVALUATION
    if isinstance(data.get("rows"), list) and "policy" in data and "version" in data:
        return AGENTDOJO
    return None


def find(directories: Sequence[str]) -> dict[str, Found]:
    """Every report under ``directories``, by name, sorted by name."""
    found: dict[str, Found] = {}
    for index, directory in enumerate(directories):
        root = Path(directory)
        prefix = f"{index + 1}/" if len(directories) > 1 else ""
        paths = sorted(root.rglob("*.json"))[:MAX_FILES] if root.is_dir() else []
        for path in paths:
            name = prefix + path.relative_to(root).with_suffix("").as_posix()
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                found[name] = Found(name, UNREADABLE, path, {}, str(exc))
                continue
            kind = kind_of(data)
            if kind is not None:
                found[name] = Found(name, kind, path, data)
    return dict(sorted(found.items()))


@dataclass(frozen=True, slots=True)
class Curve:
    """One perturbation's pass^k line, as SVG points and a band (the 95% interval)."""

    name: str
    points: str
    band: str


W, H, PAD = 520, 220, 30


def curves(data: Mapping[str, Any]) -> list[Curve]:
    """pass^k against k for each perturbation of an evaluation report."""
    k = int(data.get("k") or 0)
    if k < 1:
        return []

    def x(i: int) -> float:
        return PAD + (W - 2 * PAD) * ((i - 1) / max(1, k - 1))

    def y(v: float) -> float:
        return H - PAD - (H - 2 * PAD) * v

    out = []
    for name, s in (data.get("perturbations") or {}).items():
        hat = sorted((int(i), e) for i, e in (s.get("pass_hat_k") or {}).items())
        points = " ".join(f"{x(i):.1f},{y(e['value']):.1f}" for i, e in hat)
        band = [f"{x(i):.1f},{y(e['high']):.1f}" for i, e in hat]
        band += [f"{x(i):.1f},{y(e['low']):.1f}" for i, e in reversed(hat)]
        out.append(Curve(name, points, " ".join(band)))
    return out


def metrics(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run metrics of the slice over every perturbation (or the only one), as rows."""
    slices = data.get("perturbations") or {}
    chosen: Mapping[str, Any] = slices.get(ALL) or next(iter(slices.values()), {})
    rows = []
    for name, value in sorted((chosen.get("metrics") or {}).items()):
        if isinstance(value, Mapping):
            value = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in value.items())
        rows.append((name.replace("_", " "), str(value)))
    return rows
