"""``tether policy lint`` and ``tether policy test``: check a YAML policy before it governs.

Why: a policy change should fail in review or CI, not at the first refused tool call. ``lint``
loads the file exactly as the runtime would and reports the first load error with its file,
line, rule and key. ``test`` replays a cases file (see ``tether.policy.cases``) and prints one
line per case with the expected and actual effect and the deciding policy id.

Exit codes: 0 all good; 1 the policy does not load or a case fails; 2 the command could not run
(bad usage, an unreadable file, an invalid cases file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.cli.common import usage

if TYPE_CHECKING:
    from tether.types import ToolSpec


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "policy", help="check YAML policies", description="Check YAML policies.")
    parser.set_defaults(run=lambda _args: usage(parser))
    sub = parser.add_subparsers(title="policy commands", metavar="COMMAND")
    lint = sub.add_parser("lint", help="validate a policy file",
                          description="Load a policy file as the runtime would; report errors.")
    lint.add_argument("file", help="the YAML policy file")
    lint.add_argument("--tools", metavar="MODULE:ATTR",
                      help="also check that the rules name only tools and arguments these tools "
                      "have: a list of tools, an Agent, or a function returning either")
    lint.set_defaults(run=run_lint)
    test = sub.add_parser("test", help="run example requests against a policy",
                          description="Decide each case of CASES with the policy in FILE and "
                          "compare with its expected effect.")
    test.add_argument("file", help="the YAML policy file")
    test.add_argument("cases", help="the YAML cases file")
    test.set_defaults(run=run_test)


def run_lint(args: argparse.Namespace) -> int:
    from tether.policy.names import unknown_names
    from tether.policy.yaml_policy import YamlPolicy
    from tether.policy.yaml_source import PolicyLoadError

    text = _read(args.file, "policy")
    if text is None:
        return 2
    try:
        policy = YamlPolicy.from_string(text, args.file)
    except PolicyLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    count = len(policy.rules)
    checked = ""
    if args.tools is not None:
        specs = _tool_specs(args.tools)
        if specs is None:
            return 2
        problems = unknown_names(policy, specs)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if problems:
            return 1
        checked = f", every name found among {len(specs)} tools"
    print(f"ok: {args.file}: {count} rule{'' if count == 1 else 's'}{checked}")
    return 0


def _tool_specs(spec: str) -> list[ToolSpec] | None:
    """The specs of the tools ``--tools`` names, or None after printing why it cannot."""
    from tether.cli.recipe import RecipeError
    from tether.references import import_object
    from tether.runtime.lifecycle.agent import Agent
    from tether.tools.registry import ToolRegistry

    try:
        value = import_object(spec, "a list of tools, an Agent, or a function returning one")
        if callable(value) and not isinstance(value, Agent) and not hasattr(value, "spec"):
            value = value()
        tools: Any = value.tools if isinstance(value, Agent) else value
        return list(ToolRegistry(tools if isinstance(tools, list | tuple) else [tools]).specs)
    except (RecipeError, TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def run_test(args: argparse.Namespace) -> int:
    from tether.policy.cases import load_cases, run_cases
    from tether.policy.yaml_policy import YamlPolicy
    from tether.policy.yaml_source import PolicyLoadError

    policy_text, cases_text = _read(args.file, "policy"), _read(args.cases, "cases")
    if policy_text is None or cases_text is None:
        return 2
    try:
        cases = load_cases(cases_text, args.cases)
    except PolicyLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        policy = YamlPolicy.from_string(policy_text, args.file)
    except PolicyLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    failed = 0
    for result in run_cases(policy, cases):
        case, decision = result.case, result.decision
        expected = case.expect.value + (f" by rule {case.expect_rule}" if case.expect_rule else "")
        line = (f"{'PASS' if result.passed else 'FAIL'}  {case.name}: expected {expected}, "
                f"got {decision.effect.value} ({decision.policy_id})")
        if not result.passed:
            failed += 1
            line += f": {decision.reason}"
        print(line)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


def _read(path: str, what: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot read the {what} file {path} ({exc.strerror or exc}); check the path "
              "and its permissions", file=sys.stderr)
    except UnicodeDecodeError as exc:
        print(f"error: the {what} file {path} is not UTF-8 text ({exc.reason} at byte "
              f"{exc.start}); save it as UTF-8", file=sys.stderr)
    return None

