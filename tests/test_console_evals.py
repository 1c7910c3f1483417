"""The evaluations pages: the reports in the console's report directories listed (evaluation and
AgentDojo reports; an unreadable one listed with its error; other JSON not), one report drawn
from its JSON with classes only (curves, figures per perturbation, metrics, failing trials linked
to their sessions), and no name reaching a file outside those directories."""

from __future__ import annotations

import json
import re
from pathlib import Path

from console_sessions import client, evaluation
from tether.evals.injection import Row
from tether.store import open_store


def reports(tmp_path: Path) -> tuple[Path, list[str]]:
    """A report directory: an evaluation's report.json, an AgentDojo table, a broken file and
    an unrelated JSON file; and the failing trials' sessions."""
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    report = evaluation(url)
    root = tmp_path / "reports"
    (root / "refunds").mkdir(parents=True)
    report.write_json(root / "refunds" / "report.json")
    rows = [Row("banking", 0.75, 0.5, 0.0, 0.0, 1, 0.25, 1.5, 12, 3, 0.33)]
    (root / "dojo.json").write_text(json.dumps({"version": "v1.2", "policy": "strict",
                                                "approver": "deny",
                                                "rows": [r.to_dict() for r in rows]}))
    (root / "broken.json").write_text("{not json")
    (root / "package.json").write_text('{"name": "not a report"}')
    return root, [r.session_id for r in report.failing()]


def test_the_list_shows_every_report_and_an_unreadable_one_with_its_error(
        tmp_path: Path) -> None:
    root, _ = reports(tmp_path)
    store = open_store(f"sqlite:///{tmp_path / 'journal.db'}")
    page = client(store, reports=(str(root),)).get("/evals").text
    assert re.findall(r'<a href="/evals/([^"]+)">', page) == ["broken", "dojo",
                                                             "refunds/report"]
    assert "evaluation refunds: 2 trials" in page
    assert "AgentDojo v1.2, policy strict, approver deny" in page
    assert re.search(r'class="bad">unreadable: Expecting property name', page)
    assert "package" not in page
    empty = client(store).get("/evals").text
    assert "given no report directories" in empty


def test_an_evaluation_report_is_drawn_from_its_json_without_inline_style(
        tmp_path: Path) -> None:
    root, failing = reports(tmp_path)
    store = open_store(f"sqlite:///{tmp_path / 'journal.db'}")
    console = client(store, reports=(str(root),))
    page = console.get("/evals/refunds/report")
    assert page.status_code == 200
    text = page.text
    assert "<h1>Evaluation refunds</h1>" in text and "2 trials, seed 3" in text
    assert re.search(r'<polyline class="curve c0" points="[\d., ]+">', text)
    assert re.search(r'<polygon class="band c0" points="[\d., ]+">', text)
    assert "<th>canonical</th><td>1</td><td>2</td><td>1</td>" in text
    assert "0.500 <small" in text  # pass^1
    assert re.search(r"<th>completion rate</th><td>1\.0</td>", text)
    assert 'id="failing">Failing trials (1)' in text
    assert [f'<a href="/sessions/{sid}">' in text for sid in failing] == [True]
    assert "the grader said no" in text
    assert "style=" not in text and "<style" not in text
    timeline = console.get(f"/sessions/{failing[0]}")
    assert timeline.status_code == 200 and "amount_cents" in timeline.text


def test_an_agentdojo_report_shows_its_table_with_bars(tmp_path: Path) -> None:
    root, _ = reports(tmp_path)
    store = open_store(f"sqlite:///{tmp_path / 'journal.db'}")
    text = client(store, reports=(str(root),)).get("/evals/dojo").text
    assert "<th>banking</th><td>stock</td>" in text
    assert "75.0%" in text and '<rect class="pass" width="90.0" height="12">' in text
    assert "33% of 3" in text and "style=" not in text


def test_no_name_opens_a_file_outside_the_report_directories(tmp_path: Path) -> None:
    root, _ = reports(tmp_path)
    secret = tmp_path / "outside.json"
    secret.write_text(json.dumps({"version": "v", "policy": "p", "approver": "a",
                                  "rows": []}))
    store = open_store(f"sqlite:///{tmp_path / 'journal.db'}")
    console = client(store, reports=(str(root),))
    for name in ("outside", "../outside", "..%2Foutside", "refunds/../../outside",
                 str(secret.with_suffix(""))):
        assert console.get(f"/evals/{name}").status_code == 404, name
    assert console.get("/evals/broken").status_code == 422
