"""The report as one self-contained HTML page: curves, metrics, histograms, failing trials.

Why: a person reads a curve faster than a table. Decision: one file with inline SVG and CSS, no
script and no network, so it can be attached to a ticket or opened offline. Every text that came
from a run (answers in grade reasons, task ids, session ids) is model or tool output and is
escaped: the page must never execute what an agent wrote.

The page reads a report through ``Shown`` (what it reads of ``tether.evals.report.Report``),
which ``Report.write_html`` hands it: the report writes the page, so the page does not import
the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Protocol

COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563",
           "#ca8a04")
W, H, PAD = 520, 260, 40
LEGEND_FONT = 11  # px
LEGEND_CHAR = 0.7 * LEGEND_FONT  # a generous average glyph width: a label never runs past
LEGEND_SWATCH = 16  # the coloured line before a label, and the gap after it


class Shown(Protocol):
    """What the page reads of a report (``tether.evals.report.Report``)."""

    @property
    def evaluation(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def records(self) -> Sequence[Any]: ...

    @property
    def slices(self) -> Mapping[str, Any]: ...

    @property
    def k(self) -> int: ...

    def failing(self) -> Sequence[Any]: ...


def legend_width(names: Sequence[str]) -> float:
    """The width the chart's legend needs beside the plot: its longest label whole."""
    return LEGEND_SWATCH + LEGEND_CHAR * max((len(n) for n in names), default=0) + 8


def _curves(report: Shown) -> str:
    k = report.k
    if k < 1:
        return ""

    def x(i: int) -> float:
        return PAD + (W - 2 * PAD) * ((i - 1) / max(1, k - 1))

    def y(v: float) -> float:
        return H - PAD - (H - 2 * PAD) * v

    width = W + legend_width(list(report.slices))  # the legend sits right of the plot
    parts = [f'<svg viewBox="0 0 {width:.0f} {H}" width="{width:.0f}" height="{H}" role="img" '
             'aria-label="pass^k against k">',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD}" y2="{H - PAD}" stroke="#999"/>',
             f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{H - PAD}" stroke="#999"/>']
    for v in (0, 0.5, 1):
        parts.append(f'<text x="{PAD - 6}" y="{y(v) + 4:.1f}" text-anchor="end" '
                     f'font-size="11">{v:g}</text>')
    for i in range(1, k + 1):
        parts.append(f'<text x="{x(i):.1f}" y="{H - PAD + 16}" text-anchor="middle" '
                     f'font-size="11">{i}</text>')
    for n, (name, s) in enumerate(report.slices.items()):
        colour = COLOURS[n % len(COLOURS)]
        points = " ".join(f"{x(i):.1f},{y(e.value):.1f}" for i, e in sorted(s.pass_hat.items()))
        band = [f"{x(i):.1f},{y(e.high):.1f}" for i, e in sorted(s.pass_hat.items())]
        band += [f"{x(i):.1f},{y(e.low):.1f}" for i, e in sorted(s.pass_hat.items(),
                                                                reverse=True)]
        parts.append(f'<polygon points="{" ".join(band)}" fill="{colour}" opacity="0.08"/>')
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                     'stroke-width="2"/>')
        row = PAD + 14 * n
        parts.append(f'<line x1="{W - PAD + 4}" y1="{row - 4}" x2="{W - PAD + 14}" '
                     f'y2="{row - 4}" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text class="legend" x="{W - PAD + 4 + LEGEND_SWATCH}" y="{row}" '
                     f'font-size="{LEGEND_FONT}" fill="{colour}">{escape(name)}</text>')
    parts.append(f'<text x="{W / 2}" y="{H - 6}" text-anchor="middle" font-size="11">k</text>')
    parts.append("</svg>")
    return "".join(parts)


def _histogram(values: Sequence[float], label: str, bins: int = 12) -> str:
    if not values:
        return f"<p>{escape(label)}: no data</p>"
    low, high = min(values), max(values)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - low) / width))] += 1
    top = max(counts)
    bar = (W - 2 * PAD) / bins
    parts = [f'<figure><figcaption>{escape(label)} (min {low:.4g}, max {high:.4g})'
             f'</figcaption><svg viewBox="0 0 {W} 140" width="{W}" height="140">']
    for i, c in enumerate(counts):
        h = 100 * c / top
        parts.append(f'<rect x="{PAD + i * bar:.1f}" y="{110 - h:.1f}" width="{bar - 2:.1f}" '
                     f'height="{h:.1f}" fill="#2563eb"><title>{c}</title></rect>')
    parts.append("</svg></figure>")
    return "".join(parts)


def render(report: Shown, overall_name: str) -> str:
    """The page of ``report``; ``overall_name``: the slice over every perturbation (shown
    first, the first slice when the report has none of that name)."""
    overall = report.slices[overall_name if overall_name in report.slices
                            else next(iter(report.slices))]
    ks = range(1, report.k + 1)
    head = "".join(f"<th>pass^{k}</th>" for k in ks) + f"<th>pass@{report.k}</th>"
    rows = []
    for name, s in report.slices.items():
        cells = "".join(
            f'<td title="95% interval {e.low:.3f}–{e.high:.3f}">{e.value:.3f}</td>'
            if (e := s.pass_hat.get(k)) else "<td>-</td>" for k in ks)
        at = s.pass_at.get(report.k)
        rows.append(f"<tr><th>{escape(name)}</th><td>{s.tasks}</td><td>{s.trials}</td>"
                    f"{cells}<td>{'-' if at is None else f'{at.value:.3f}'}</td></tr>")
    metrics = "".join(f"<tr><th>{escape(n)}</th><td>{escape(v)}</td></tr>"
                      for n, v in overall.metrics.table())
    failing = "".join(
        f"<tr><td>{escape(r.key.task)}</td><td>{escape(r.key.perturbation)}</td>"
        f"<td>{r.key.repetition}</td><td><code>{escape(r.session_id)}</code></td>"
        f"<td>{escape(r.grade.why[:300])}</td></tr>" for r in report.failing()[:500])
    costs = [float(r.facts.cost_usd) for r in report.records]
    latency = [r.facts.seconds for r in report.records]
    return page(f"tether evaluation {report.evaluation}", f"""\
<h1>Evaluation {escape(report.evaluation)}</h1>
<p>{len(report.records)} trials, seed {report.seed}. pass^k: the chance that k tries of a task
all pass; pass@k: that at least one does (unbiased estimators over each task's trials, means over
tasks, 95% bootstrap intervals over tasks on hover and as bands).</p>
<h2>pass^k against k</h2>
{_curves(report)}
<table><tr><th>perturbation</th><th>tasks</th><th>trials</th>{head}</tr>{"".join(rows)}</table>
<h2>Run metrics (all trials)</h2>
<table>{metrics}</table>
<h2>Cost and latency</h2>
{_histogram(costs, "cost per trial, USD")}{_histogram(latency, "latency per trial, s")}
<h2>Failing trials ({len(report.failing())})</h2>
<p>Open one with <code>tether audit show ID</code>.</p>
<table><tr><th>task</th><th>perturbation</th><th>#</th><th>session</th><th>why</th></tr>
{failing}</table>
""")


def page(title: str, body: str) -> str:
    """A self-contained page around ``body``: no script, no network (its CSP forbids both)."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #111; max-width: 1100px; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ddd; padding: 4px 8px; text-align: right; font-size: 14px; }}
th:first-child, td:first-child {{ text-align: left; }}
code {{ font-size: 12px; }}
figure {{ display: inline-block; margin: 0 1em 1em 0; }}
</style></head><body>
{body}</body></html>
"""
