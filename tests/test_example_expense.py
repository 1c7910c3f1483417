"""examples/enterprise_expense.py: one scenario per effect, each checked for what really ran."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "enterprise_expense.py"
IBAN = "DE89370400440532013000"


@pytest.fixture(scope="module")
def desk() -> ModuleType:
    spec = importlib.util.spec_from_file_location("enterprise_expense", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(desk: ModuleType, effect: str) -> dict[str, object]:
    outcome: dict[str, object] = desk.scenario(**desk.SCENARIOS[effect])
    assert outcome["verified"] is True
    assert outcome["stop_reason"] == "finished"
    return outcome


def test_allow(desk: ModuleType) -> None:
    outcome = run(desk, "allow")
    assert outcome["effects"] == ["allow"] and "receipts required" in str(outcome["model_saw"])


def test_deny(desk: ModuleType) -> None:
    outcome = run(desk, "deny")
    assert outcome["effects"] == ["deny"] and outcome["ran"] == []
    assert "finance systems only" in str(outcome["model_saw"])


def test_require_approval_runs_once_after_approval_and_hides_the_iban(desk: ModuleType) -> None:
    outcome = run(desk, "require_approval")
    assert outcome["effects"] == ["require_approval"]
    paused = outcome["paused_for"]
    assert isinstance(paused, list) and paused[0]["arguments"]["iban"] == "[masked]"
    assert outcome["ran"] == [{"reimburse": "sam", "amount": 900, "iban": IBAN}]
    assert IBAN not in str(outcome["journal"])
    assert "maria (manager)" in str(outcome["journal"])


def test_partial_allow_drops_the_notes(desk: ModuleType) -> None:
    outcome = run(desk, "partial_allow")
    assert outcome["effects"] == ["partial_allow"]
    assert outcome["ran"] == [{"submit": "sam", "amount": 42, "category": "meals", "notes": ""}]


def test_mask_keeps_the_iban_from_the_model_and_the_journal(desk: ModuleType) -> None:
    outcome = run(desk, "mask")
    assert outcome["effects"] == ["mask"]
    assert outcome["ran"] == [{"reimburse": "sam", "amount": 120, "iban": IBAN}]
    assert IBAN not in str(outcome["model_saw"]) and IBAN not in str(outcome["journal"])


def test_degrade_runs_the_cached_search_instead(desk: ModuleType) -> None:
    outcome = run(desk, "degrade")
    assert outcome["effects"] == ["degrade", "allow"]
    assert "cached index results" in str(outcome["model_saw"])
    assert "full audit" not in str(outcome["model_saw"])


def test_the_example_runs_as_a_script() -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                         check=True).stdout
    for effect in ("allow", "deny", "require_approval", "partial_allow", "mask", "degrade"):
        assert f"== {effect}:" in out
    assert out.count("journal verified: True") == 6
