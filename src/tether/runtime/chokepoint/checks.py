"""What a strategy hands the chokepoint, checked before anything is journaled or run.

Why its own module: a strategy is untrusted code at the chokepoint's door. What it passes — the
tool it forces and the output cap it asks for, the calls it names to run — is checked the same
way on every door (a turn, a branch call, the tool calls), and the checks read apart from the
Environment's sequencing.

Decision: pure functions that raise ``ValueError`` saying what is accepted; a call the strategy
names is run as the model asked for it (the journaled call), never as the strategy's copy.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from tether.errors import InvalidArgument
from tether.types import TOOL_CHOICES, ToolCall


def check_turn(tool_choice: str | None, cap: int | None, choosable: Set[str]) -> None:
    """ValueError unless ``tool_choice`` is one of ``TOOL_CHOICES`` or a tool of the agent
    (``choosable``) and ``cap`` a whole number >= 1."""
    if tool_choice is not None and tool_choice not in TOOL_CHOICES \
            and tool_choice not in choosable:
        raise InvalidArgument(f"tool_choice {tool_choice!r} is neither one of {TOOL_CHOICES} "
                         f"nor a tool of this agent ({', '.join(sorted(choosable))})")
    if cap is not None and (type(cap) is not int or cap < 1):
        raise InvalidArgument(f"max_output_tokens must be a whole number >= 1; got {cap!r}")


def check_open(calls: Sequence[ToolCall], unresolved: Sequence[ToolCall]) -> list[ToolCall]:
    """The journaled calls the strategy named, if each is one of the open turn's calls as the
    model asked for it (a call whose arguments the strategy changed is not)."""
    open_calls = {c.id: c for c in unresolved}
    foreign = [c.id for c in calls if open_calls.get(c.id) != c]
    if len({c.id for c in calls}) != len(calls):
        raise InvalidArgument("call_tools was given the same call twice")
    if foreign:
        raise InvalidArgument(
            f"call_tools takes calls from the model's last turn that have no result yet, "
            f"as the model asked for them; {foreign} are not among them (pass "
            "turn.tool_calls from ask_model, unchanged)")
    return [open_calls[c.id] for c in calls]
