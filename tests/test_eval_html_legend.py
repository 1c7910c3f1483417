"""The HTML report's chart legend shows every perturbation's whole name inside the chart."""

from __future__ import annotations

import re
from pathlib import Path

from tether.evals import Task, evaluate, numeric

import eval_app

GLYPH = 0.7 * 11  # px: wider than the average glyph of an 11px sans-serif label
NAMES = ["canonical", "order_shuffled", "paraphrase", "distractor_tools", "tool_faults"]


def test_the_legend_shows_whole_labels_inside_the_chart(tmp_path: Path) -> None:
    report = evaluate(eval_app.make_agent(), [Task("What is 2 * 21?", expected="42",
                                                   grader=numeric())],
                      k=2, perturbations=NAMES, seed=7)
    page = report.write_html(tmp_path / "r.html").read_text()
    chart = page[page.index("<svg"):page.index("</svg>")]
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', chart)[1])  # type: ignore[index]
    legend = {m[2]: float(m[1]) for m in re.finditer(r'<text[^>]* x="([\d.]+)"[^>]*>'
                                                    r"([a-z_]{2,})</text>", chart)}
    assert set(legend) == {*NAMES, "all"}  # every label, whole
    for name, x in legend.items():  # and each fits: starts inside, ends before the edge
        assert x + len(name) * GLYPH <= width, (name, x, width)
