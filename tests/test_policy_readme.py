"""The guide's "YAML policies and the policy CLI" section runs as written (its Python block as
pasted: tests/doc_blocks.py) and says what happens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_blocks import find, printed
from doc_pages import section as doc_section
from tether.cli import main
from tether.policy import PolicyLoadError, YamlPolicy, load_policy
from tether.policy.cases import load_cases, run_cases

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "policies"


def section() -> str:
    return doc_section("docs/guide/policies.md", "YAML policies and the policy CLI")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def test_the_yaml_shown_is_the_example_file() -> None:
    assert blocks("yaml")[0] == (EXAMPLE / "expenses.yaml").read_text()


def test_the_python_example_prints_what_its_comments_say() -> None:
    block = find("docs/guide/policies.md", "YAML policies and the policy CLI")
    prints = [line.split("# ", 1)[1].strip() for line in block.code.splitlines()
              if "print(" in line and "# " in line]
    assert printed(block) == prints and len(prints) == 2


def test_the_error_shown_is_the_error_given() -> None:
    (shown,) = blocks("text")
    text = (EXAMPLE / "expenses.yaml").read_text().replace("gt: 100}", "gt: '100'}")
    with pytest.raises(PolicyLoadError) as info:
        YamlPolicy.from_string(text, "expenses.yaml")
    assert str(info.value) == shown.strip()


def test_the_cli_commands_print_what_the_readme_shows(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (script,) = blocks("bash")
    monkeypatch.chdir(ROOT)
    commands = [line.split()[1:] for line in script.splitlines() if line.startswith("tether ")]
    shown = [re.split(r"\s{2,}\(", line[2:])[0].rstrip() for line in script.splitlines()
             if line.startswith("# ")]
    printed: list[str] = []
    for argv in commands:
        assert main(argv) == 0
        printed += capsys.readouterr().out.splitlines()
    assert printed[0] == shown[0] and printed[1] == shown[1] and printed[-1] == shown[-1]
    assert shown[2] == "..."


def test_the_cases_shown_pass_against_the_example_policy() -> None:
    policy = load_policy(EXAMPLE / "expenses.yaml")
    for text in (blocks("yaml")[1], (EXAMPLE / "expenses_cases.yaml").read_text()):
        results = run_cases(policy, load_cases(text))
        assert results and all(r.passed for r in results)
