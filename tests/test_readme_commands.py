"""Every ``tether ...`` command the README, the docs and the examples tell a reader to type
names a command and flags the CLI has: a reader who copies one never meets "invalid choice" or
"unrecognized arguments"."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from tether.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
           *sorted((ROOT / "examples").glob("*.py")), *sorted((ROOT / "src").rglob("*.py"))]
INLINE = re.compile(r"`(tether [^`\n]+)`|<code>(tether [^<\n]+)</code>")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
LINE = re.compile(r"^\s*(?:\$ )?(tether (?:[a-z-]+)(?: [^#\n]*)?)", re.M)


def typed_commands() -> list[tuple[str, str]]:
    found = []
    for path in SOURCES:
        text = path.read_text()
        typed = [m[1] or m[2] for m in INLINE.finditer(text)]
        blocks = ([m[1] for m in FENCE.finditer(text)] if path.suffix == ".md"
                  else [text] if path.parent.name == "examples" else [])
        typed += [m[1] for block in blocks for m in LINE.finditer(block)]
        for command in typed:
            command = command.split("  #")[0].strip()
            if len(command.split()) > 1:
                found.append((f"{path.relative_to(ROOT)}", command))
    return found


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def check(command: str) -> str | None:
    """What is wrong with ``command`` (None: its subcommands and flags all exist)."""
    try:
        words = shlex.split(command.replace("|", " "))[1:]
    except ValueError:
        words = command.split()[1:]
    parser = build_parser()
    chain = ["tether"]
    while words and subcommands(parser):
        head = words[0]
        if head.startswith("-"):
            break
        if head not in subcommands(parser):
            return f"{' '.join(chain)} has no command {head!r}"
        parser, chain, words = subcommands(parser)[head], [*chain, head], words[1:]
    flags = {s for action in parser._actions for s in action.option_strings}
    for word in words:
        flag = word.split("=")[0]
        if flag.startswith("--") and flag.strip("-.…") and flag not in flags:
            return f"{' '.join(chain)} has no option {flag}"
    return None


@pytest.mark.parametrize(("where", "command"), typed_commands())
def test_a_documented_command_exists(where: str, command: str) -> None:
    assert check(command) is None, f"{where}: `{command}`: {check(command)}"


def test_the_checker_catches_a_wrong_command() -> None:
    assert check("tether audit show --session ID") == "tether audit show has no option --session"
    assert check("tether evals agentdojo") == "tether has no command 'evals'"
    assert check("tether audit show 5c1f") is None
