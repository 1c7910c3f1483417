"""The event vocabulary: every type tether journals is a member of ``EventType``, spelled once,
and an enumeration changes nothing that is stored.

Three promises, each kept by a test here: an old journal (written before the enumeration, with
types as strings) verifies and reads exactly as it did; every event tether's own code appends
during a set of existing scenario tests has a member as its type; and no string literal equal
to a type appears in ``src/tether`` outside ``tether/vocabulary.py``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tether
from tether.journal.chain import Journal
from tether.journal.views.export import read_jsonl
from tether.vocabulary import EventType

from vocabulary_journals import FIXTURE, readings, sessions

SOURCE = Path(tether.__file__).parent
TESTS = Path(__file__).parent
DATA = TESTS / "data"
VOCABULARY = SOURCE / "vocabulary.py"

# existing scenario tests that, between them, journal most of the vocabulary in this process
# (what a crash test's child process or the MCP proxy's server appends is not seen here)
SCENARIOS = [
    "test_branching.py::test_a_branch_call_is_charged_and_journaled_but_never_joins_the_"
    "conversation",
    "test_branching.py::test_a_side_effecting_call_on_a_branch_is_simulated_never_decided_nor_"
    "run",
    "test_branching.py::test_an_overrun_on_a_branch_stops_the_run",
    "test_budget.py::test_time_budget_cancels_a_hung_model_call",
    "test_budget_overrun.py::test_output_past_the_cap_stops_the_run_with_the_token_limit",
    "test_compaction_charges.py::test_an_interrupted_summary_is_charged_its_reservation_and_is_"
    "not_a_step",
    "test_eval_run.py::test_the_report_from_the_store_equals_the_one_returned",
    "test_gateway.py::test_calls_are_decided_run_and_journaled",
    "test_lats.py::test_resume_after_a_crash_mid_search_asks_and_runs_only_what_is_missing",
    "test_mcp_client_requests.py::test_elicitation_answered_in_process_is_validated_and_journaled",
    "test_mcp_client_requests.py::test_sampling_is_a_governed_model_call_of_the_session",
    "test_model_planner.py::test_a_budget_too_small_for_the_planner_makes_no_call",
    "test_model_planner.py::test_a_paraphrase_the_rules_miss_passes_only_with_the_planner",
    "test_ocsf_view.py::test_every_record_of_every_event_kind_is_valid_ocsf",
    "test_planned_calls.py::test_resume_after_a_crash_mid_plan_never_repeats_a_journaled_step",
    "test_session.py::test_cancellation_is_recorded",
    "test_session.py::test_subscribers_see_every_event_and_a_raising_one_never_breaks_the_run",
    "test_stop_swallowed.py::test_a_strategy_cannot_raise_a_stop_of_its_own",
    "test_structured_output.py::test_a_model_that_never_gives_valid_output_stops_with_the_"
    "reason_and_its_last_output",
    "test_structured_output.py::test_a_valid_answer_is_the_output_and_the_answer_stays_the_text",
    "test_subagent.py::test_sub_agent_spend_is_the_parents_and_its_policy_still_applies",
    "test_tool_selection.py::test_a_tool_the_policy_denies_outright_is_never_offered_even_when_"
    "always",
]


def _old_journals() -> dict[str, list[tether.Event]]:
    with (DATA / f"{FIXTURE}.jsonl").open() as lines:
        return read_jsonl(lines, FIXTURE)


def test_a_member_is_its_string() -> None:
    assert all(m == m.value and str(m) == m.value and f"{m}" == m.value for m in EventType)
    assert {EventType.SESSION_END: 1}.get("session.end") == 1  # a handler found by a stored type
    assert json.dumps({"type": EventType.MODEL_OVERRUN}) == '{"type": "model.overrun"}'


def test_an_old_journal_verifies_and_reads_as_it_did() -> None:
    old = _old_journals()
    recorded = json.loads((DATA / f"{FIXTURE}.readings.json").read_text())
    assert len(old) == 3 and set(old) == set(recorded)
    for session_id, events in old.items():
        assert readings(events) == recorded[session_id]
        assert readings(events)["broken_at"] is None


def test_sessions_journal_what_they_journaled_before() -> None:
    """The same sessions run now write the same types, with data of the same shape, as the old
    journal holds (ids, times and hashes aside)."""
    def shape(events: list[tether.Event]) -> list[tuple[str, list[str]]]:
        return [(e.type, sorted(e.data)) for e in events]

    assert [shape(events) for events in sessions()] == [
        shape(events) for events in _old_journals().values()]
    assert all(type(e.type) is str for events in sessions() for e in events)


def test_an_appended_member_is_stored_as_its_plain_string() -> None:
    journal = Journal("s")
    journal.append(EventType.SESSION_START, {"task": "t"})
    (event,) = journal.events()
    assert type(event.type) is str and event.type == "session.start"


def test_no_event_type_is_spelled_outside_the_vocabulary() -> None:
    values = {m.value for m in EventType}
    found = [f"{path.relative_to(SOURCE)}:{node.lineno} {node.value!r}"
             for path in sorted(SOURCE.rglob("*.py")) if path != VOCABULARY
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Constant) and node.value in values]
    assert found == []


def test_every_type_tether_appends_in_scenario_tests_is_a_member(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    env = {**os.environ, "VOCABULARY_SEEN": str(seen),
           "PYTHONPATH": os.pathsep.join([str(SOURCE.parent), str(TESTS)])}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "vocabulary_watch",
         *(str(TESTS / s) for s in SCENARIOS)], env=env, cwd=TESTS.parent, capture_output=True,
        text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = seen.read_text().splitlines()
    strays = [line for line in lines if line.startswith("STRAY ")]
    assert strays == []
    types = set(lines)
    assert types <= {m.value for m in EventType}
    assert len(types) >= 40, sorted({m.value for m in EventType} - types)


@pytest.mark.parametrize("member", list(EventType))
def test_every_member_says_what_it_records(member: EventType) -> None:
    lines = VOCABULARY.read_text().splitlines()
    (line,) = [line for line in lines if line.strip().startswith(f"{member.name} = ")]
    assert "  # " in line and len(line.split("  # ", 1)[1]) > 10
