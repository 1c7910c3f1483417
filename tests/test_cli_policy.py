"""``tether policy lint`` / ``tether policy test``: output, exit codes 0/1/2, strict cases files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tether.cli import main

POLICY = """\
version: 1
policy_id: expenses
default: deny
rules:
  - id: interns-no-refunds
    priority: 100
    effect: deny
    reason: interns cannot refund
    when:
      all:
        - tool: refund
        - roles: {in: [intern]}
        - args: {amount: {gt: 100}}
  - id: refunds
    effect: allow
    when: {tool: refund}
"""

CASES = """\
cases:
  - name: intern refund denied
    subject: {user_id: u1, tenant_id: t1, roles: [intern]}
    tool: refund
    args: {amount: 500}
    metadata: {side_effect: true, egress: false, tags: [payments], risk: high}
    context: {tainted: false, step: 1, spend: {cost_usd: 0.1}}
    expect: deny
  - name: small refund allowed
    subject: {roles: [intern]}
    tool: refund
    args: {amount: 50}
    expect: allow
    expect_rule: refunds
  - name: unknown tools fall to the default
    tool: wire
    expect: deny
    expect_rule: default
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    policy, cases = tmp_path / "policy.yaml", tmp_path / "cases.yaml"
    policy.write_text(POLICY)
    cases.write_text(CASES)
    return policy, cases


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# -- lint ----------------------------------------------------------------------------------

def test_lint_accepts_a_valid_policy(files: tuple[Path, Path],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "policy", "lint", files[0])
    assert (code, out, err) == (0, f"ok: {files[0]}: 2 rules\n", "")


def test_lint_counts_one_rule_in_the_singular(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one.yaml"
    path.write_text("version: 1\npolicy_id: p\nrules:\n  - {id: a, effect: allow}\n")
    assert run(capsys, "policy", "lint", path)[1] == f"ok: {path}: 1 rule\n"


def test_lint_reports_the_load_error_and_exits_1(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(POLICY.replace("effect: allow", "effect: permit"))
    code, out, err = run(capsys, "policy", "lint", path)
    assert code == 1 and out == ""
    assert err.startswith(f"error: {path}, line 15, rules[1] (id 'refunds'), key 'effect'")
    assert "got the string 'permit'" in err


def test_lint_exits_2_on_an_unreadable_file(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "policy", "lint", tmp_path / "missing.yaml")
    assert code == 2 and out == "" and "cannot read the policy file" in err
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    code, _, err = run(capsys, "policy", "lint", binary)
    assert code == 2 and "not UTF-8" in err


# -- test ----------------------------------------------------------------------------------

def test_all_cases_pass(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "policy", "test", *files)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "PASS  intern refund denied: expected deny, got deny (expenses:interns-no-refunds)",
        "PASS  small refund allowed: expected allow by rule refunds, got allow "
        "(expenses:refunds)",
        "PASS  unknown tools fall to the default: expected deny by rule default, got deny "
        "(expenses:default)",
        "3 passed, 0 failed",
    ]


def test_a_failing_case_prints_expected_actual_and_why(
        files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    files[1].write_text(CASES.replace("expect: allow", "expect: require_approval")
                        .replace("expect_rule: default", "expect_rule: refunds"))
    code, out, _ = run(capsys, "policy", "test", *files)
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("PASS  intern refund denied")
    assert lines[1] == ("FAIL  small refund allowed: expected require_approval by rule refunds, "
                        "got allow (expenses:refunds): rule 'refunds' (allow)")
    assert lines[2].startswith("FAIL  unknown tools fall to the default: expected deny by rule "
                               "refunds, got deny (expenses:default): no rule in policy")
    assert lines[3] == "1 passed, 2 failed"


def test_an_invalid_policy_under_test_exits_1(files: tuple[Path, Path],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    files[0].write_text(POLICY.replace("version: 1", "version: 9"))
    code, out, err = run(capsys, "policy", "test", *files)
    assert code == 1 and out == "" and "unsupported policy version 9" in err


@pytest.mark.parametrize(("cases", "fragments"), [
    ("", ["the cases file is empty"]),
    ("cases: []\n", ["key 'cases'", "empty list"]),
    ("tests: []\n", ["unknown key 'tests'"]),
    ("cases: [\n", ["not valid YAML"]),
    ("cases:\n  - {name: a, tool: t}\n", ["cases[0] ('a')", "'expect' is missing"]),
    ("cases:\n  - {name: a, tool: t, expect: permit}\n", ["key 'expect'", "expected one of"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, arg: {}}\n",
     ["key 'arg'", "did you mean 'args'?"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, args: [1]}\n", ["key 'args'"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, subject: {roles: intern}}\n",
     ["key 'subject.roles'", "expected a list of strings"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, subject: {group: x}}\n",
     ["key 'subject.group'"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, metadata: {risk: huge}}\n",
     ["key 'metadata.risk'", "low, medium, high, critical"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, metadata: {egress: 'no'}}\n",
     ["key 'metadata.egress'", "true or false"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, context: {spend: {cost_usd: .nan}}}\n",
     ["key 'context.spend.cost_usd'", "finite"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, context: {spend: {dollars: 1}}}\n",
     ["key 'context.spend.dollars'"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, context: {step: -1}}\n",
     ["key 'context.step'", "negative"]),
    ("cases:\n  - {name: a, tool: t, expect: deny, context: {step: true}}\n",
     ["key 'context.step'", "whole number"]),
    ("cases:\n  - {name: a, tool: t, expect: deny}\n  - {name: a, tool: t, expect: deny}\n",
     ["line 3", "cases[1]", "the case name 'a' is used twice"]),
])
def test_an_invalid_cases_file_exits_2_with_a_precise_error(
        files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], cases: str,
        fragments: list[str]) -> None:
    files[1].write_text(cases)
    code, out, err = run(capsys, "policy", "test", *files)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {files[1]}")
    for fragment in fragments:
        assert fragment in err, err


def test_cases_accept_budget_left_extra_and_empty_collections(
        files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    files[0].write_text("""\
version: 1
policy_id: p
rules:
  - id: web-low-budget
    effect: require_approval
    when: {context: {budget_left: {cost_usd: {lt: 1}}, extra: {channel: web}}}
  - {id: rest, priority: -1, effect: allow}
""")
    files[1].write_text("""\
cases:
  - name: low budget on the web
    tool: t
    args: {}
    subject: {roles: []}
    metadata: {tags: [], output_trust: untrusted, owner: ops, idempotent: true}
    context: {budget_left: {cost_usd: 0.5, tokens: null}, extra: {channel: web},
              session_id: s9, tainted: true}
    expect: require_approval
  - name: unlimited budget is unknown, so approval too
    tool: t
    context: {budget_left: {cost_usd: null}, extra: {channel: web}}
    expect: require_approval
  - name: api channel
    tool: t
    context: {budget_left: {cost_usd: 0.5}, extra: {channel: api}}
    expect: allow
""")
    code, out, _ = run(capsys, "policy", "test", *files)
    assert code == 0, out


def test_test_exits_2_on_unreadable_files(files: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "policy", "test", files[0], tmp_path / "nope.yaml")
    assert code == 2 and "cannot read the cases file" in err
    code, _, err = run(capsys, "policy", "test", tmp_path / "nope.yaml", files[1])
    assert code == 2 and "cannot read the policy file" in err


# -- usage -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [[], ["policy"], ["policy", "lint"], ["policy", "test", "x"],
                                  ["policy", "frobnicate"], ["nope"]])
def test_bad_usage_exits_2_with_usage_on_stderr(argv: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and "usage: tether" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "policy", "--help")
    assert code == 0 and "lint" in out and "test" in out


def test_importing_the_cli_does_not_import_yaml_or_pydantic() -> None:
    code = ("import sys, tether.cli; "
            "assert not {'yaml', 'pydantic'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_python_dash_m_tether_runs_the_cli(files: tuple[Path, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "tether", "policy", "test", *map(str, files)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "3 passed, 0 failed"
    lint = subprocess.run([sys.executable, "-m", "tether", "policy", "lint", str(files[1])],
                          capture_output=True, text=True, check=False)
    assert lint.returncode == 1 and "unknown key 'cases'" in lint.stderr
