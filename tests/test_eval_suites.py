"""Suites load strictly: every mistake is an error naming the file, the line and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.evals import Task
from tether.evals.tasks import SuiteError, load_suite
from tether.reasoning.graders import Outcome, grade

HERE = Path(__file__).parent


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


async def test_the_example_suite_loads_with_its_graders() -> None:
    suite = load_suite(HERE / "evals" / "arith.yaml")
    assert suite.name == "arith"
    assert [t.id for t in suite.tasks] == ["mul-17-23", "mul-2-21", "mul-6-7-called"]
    first = suite.tasks[0]
    assert first.tags == ("math",) and first.expected == 391
    right = Outcome(first.prompt, first.expected, "It is 391.", "finished")
    assert (await grade(first.judge, right)).passed
    assert not (await grade(first.judge, Outcome("q", 391, "392", "finished"))).passed


def test_jsonl_one_task_per_line(tmp_path: Path) -> None:
    path = write(tmp_path, "s.jsonl", '{"prompt": "2+2?", "expected": "4", "grader": "numeric"}\n'
                 '\n{"id": "b", "prompt": "Capital of France?", "expected": "Paris"}\n')
    suite = load_suite(path)
    assert suite.name == "s" and len(suite.tasks) == 2 and suite.tasks[1].id == "b"


@pytest.mark.parametrize("text, where", [
    ("tasks:\n  - prompt: hi\n    expectd: x\n", "line 3"),            # unknown key (typo)
    ("tasks:\n  - prompt: hi\n    expected: [1]\n", "line 3"),         # wrong type
    ("tasks:\n  - prompt: hi\n    prompt: ho\n    expected: x\n", "line 3"),  # duplicate key
    ("tasks:\n  - {id: a, prompt: x, expected: 1}\n  - {id: a, prompt: y, expected: 2}\n",
     "line 3"),                                                          # duplicate id
    ("tasks:\n  - prompt: hi\n    grader: numerik\n", "line 3"),       # unknown grader
    ("tasks:\n  - prompt: hi\n    grader: {regex: {}}\n", "line 3"),   # missing argument
    ("tasks:\n  - expected: 3\n", "line 2"),                             # no prompt
    ("tasks:\n  - prompt: hi\n    grader: {python: 'nope.nowhere:fn'}\n", "line 3"),
    ("tasks:\n  - prompt: hi\n    grader: {numeric: {tolerance: .nan}}\n", "line 3"),
    ("tasks: [\n", "line"),                                               # not YAML
    ("suite: x\n", "tasks"),                                              # no tasks
])
def test_yaml_mistakes_name_the_line(tmp_path: Path, text: str, where: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(SuiteError) as raised:
        load_suite(path)
    assert str(path) in str(raised.value) and where in str(raised.value)


def test_jsonl_mistakes_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", '{"prompt": "a", "expected": "1"}\n{"prompt": "b",\n')
    with pytest.raises(SuiteError, match="line 2"):
        load_suite(path)
    dup = write(tmp_path, "dup.jsonl", '{"prompt": "a", "prompt": "b", "expected": 1}\n')
    with pytest.raises(SuiteError, match="twice"):
        load_suite(dup)
    nan = write(tmp_path, "nan.jsonl", '{"prompt": "a", "expected": NaN}\n')
    with pytest.raises(SuiteError, match="line 1"):
        load_suite(nan)


def test_unreadable_and_unknown_files(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read"):
        load_suite(tmp_path / "missing.yaml")
    with pytest.raises(SuiteError, match=r"\.yaml, \.yml or \.jsonl"):
        load_suite(write(tmp_path, "s.txt", "x"))


def test_tasks_in_python() -> None:
    task = Task("What is 17 * 23?", expected="391")
    assert task.id.startswith("task-") and task.id == Task("What is 17 * 23?", "1").id
    assert Task("Just run").judge.__name__ == "finished"  # nothing to compare: the run finishes
    with pytest.raises(ValueError, match="non-empty prompt"):
        Task(" ")
    with pytest.raises(TypeError, match="not callable"):
        Task("x", grader="numeric")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of strings"):
        Task("x", tags="math")  # type: ignore[arg-type]
