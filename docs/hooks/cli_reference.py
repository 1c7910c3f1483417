"""The CLI reference page, generated from the real argparse parsers at every build.

A checked-in copy of `tether --help` drifts the day someone adds a flag; this MkDocs hook builds
``reference/cli.md`` from ``tether.cli.build_parser()`` instead, one section per command and
sub-command, each its ``--help`` text, so the page says what the installed CLI accepts.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from typing import Any

from mkdocs.structure.files import File, Files

PAGE = "reference/cli.md"
WIDTH = 80  # fixed, so the page does not depend on the terminal that built it, and fits its column


def commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser, then every sub-command's parser, depth first, in the order they were added."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):  # aliases map to one parser
                yield from commands(child)


def help_text(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)
    return parser.format_help()


def reference() -> str:
    from tether.cli import build_parser

    lines = ["# CLI reference", "",
             "Generated at build time from `tether.cli.build_parser()`: each section is the "
             "command's `--help`, exactly as the CLI prints it.", ""]
    for parser in commands(build_parser()):
        lines += [f"## `{parser.prog}`", "", "```text", help_text(parser).rstrip(), "```", ""]
    return "\n".join(lines)


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, PAGE, content=reference()))
    return files
