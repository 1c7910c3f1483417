"""A tool or recipe module whose own import fails is reported as that failure — its error and
where it was raised — by every command that loads one, never as "cannot find it, run from its
directory" nor with a flag the command does not have."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tether.cli import main

BROKEN = {
    "missing_package": ("import tether_no_such_package_xyz\n", "No module named "
                        "'tether_no_such_package_xyz'", 1),
    "syntax_error": ("x = 1\ndef broken(:\n    pass\n", "SyntaxError", 2),
    "raises": ("x = 1\n\nraise RuntimeError('the tool config is missing')\n",
               "RuntimeError: the tool config is missing", 3),
}
SUITE = Path(__file__).parent / "evals" / "arith.yaml"
POLICY = "version: 1\npolicy_id: p\ndefault: allow\nrules: []\n"


def commands(ref: str, tmp_path: Path) -> dict[str, list[str]]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return {
        "run": ["run", ref, "a task", "--store", "memory://"],
        "mcp serve": ["mcp", "serve", ref],
        "tools show": ["tools", "show", "--tools", ref],
        "policy lint": ["policy", "lint", str(policy), "--tools", ref],
        "resume": ["resume", "abc", "--agent", ref, "--store", "memory://"],
        "eval run": ["eval", "run", str(SUITE), "--agent", ref, "--store", "memory://",
                     "--no-progress"],
    }


FLAGS = {"run": None, "mcp serve": None, "tools show": "--tools", "policy lint": "--tools",
         "resume": "--agent", "eval run": "--agent"}


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("command", sorted(FLAGS))
@pytest.mark.parametrize("named_as", ["file", "module"])
def test_a_module_whose_import_fails_is_reported_as_that_failure(
        kind: str, command: str, named_as: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    source, words, line = BROKEN[kind]
    module = f"broken_{kind}_{named_as}_{command.replace(' ', '_')}"
    path = tmp_path / f"{module}.py"
    path.write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    ref = f"{path}:agent" if named_as == "file" else f"{module}:agent"
    argv = commands(ref, tmp_path)[command]
    try:
        code = main(argv)
    finally:
        sys.modules.pop(module, None)
    err = capsys.readouterr().err
    assert code == 2, err
    assert words in err, err
    assert f"line {line}" in err, err  # where it was raised
    assert "run from the directory" not in err  # the module was found; its import failed
    flag = FLAGS[command]
    for other in {"--agent", "--tools"} - {flag}:
        assert other not in err, err  # only a flag this command has


def test_a_module_that_is_not_there_is_still_said_to_be_not_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["mcp", "serve", "tether_nowhere_xyz.tools:tools"]) == 2
    err = capsys.readouterr().err
    assert "no module 'tether_nowhere_xyz'" in err
    assert "run from the directory that holds it" in err
    assert "--agent" not in err
