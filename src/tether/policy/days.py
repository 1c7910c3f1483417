"""The days a request names bind the days of the side effect it asks for.

Why: an injection that knows the policy adds no side effect of its own; it changes the user's —
a week more at the hotel, an event three days longer — and the model makes the changed call in
place of the user's, so no repeat betrays it. The new end day is a value the model composed
(found nowhere), like any day the model works out, so provenance cannot tell the two apart. But
a request that names the days of what it asks for ("book it from January 11th to January 15th",
"add an event on April 25th") has fixed them: a day of the call that the asking clause names no
way to reach was not asked for.

Decision: for a side-effecting call, each value that shapes it (``Resource.shaping``) and is a
day (a date, with its time if any; not a day a message's text mentions) must be a day one of
its asking clauses names, or such a day moved by a count of days, nights or weeks the clause
names ("for 4 nights from January 11th") — unless the value came from the user or a trusted
source alone. A clause that names no day binds none ("tomorrow", "the next free slot": nothing
to compare). Years are not bound: a day is compared by month and day, in its own year or the
ones either side (a clause seldom gives the year, a stay may cross into the next one, and
AgentDojo's own ground truth books "April 25th 2024" on 2023-04-25). Times of day
are not bound (an event an hour longer passes), nor are amounts: an amount is usually read (a
bill, a VAT rate) or computed, not named, and binding it refuses benign calls (the approvals
guide has the measured counts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, timedelta

from tether.policy.base import Action, Context, Decision, Effect, Resource, Subject
from tether.policy.containment import plan_of
from tether.policy.plan import NUMBERS
from tether.tokens import is_year, tokens
from tether.vouched import leaves

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
DAY = re.compile(r"^(" + "|".join(MONTHS) + r") (\d{1,2})$")
COUNT = re.compile(r"\b(\d{1,3}|" + "|".join(NUMBERS) + r"|one|a)\s+(days?|nights?|weeks?)\b",
                   re.IGNORECASE)
GROUNDED = frozenset({"user", "trusted"})
LEAP = 2024  # the year of a day given without one: February 29th exists


def days_in(text: str, whole: bool = False) -> list[tuple[int, int, int | None]]:
    """The days ``text`` names: (month, day, year or None), in order; with ``whole``, only
    when the text is one day (with its year and time, if any: "2025-01-18 09:00")."""
    found = tokens(text)
    if whole and not (1 <= len(found) <= 3 and DAY.match(found[0])):
        return []
    out = []
    for at, token in enumerate(found):
        match = DAY.match(token)
        if match is None:
            continue
        after = found[at + 1] if at + 1 < len(found) else ""
        out.append((MONTHS.index(match.group(1)) + 1, int(match.group(2)),
                    int(after) if is_year(after) else None))
    return out


def counts_in(text: str) -> set[int]:
    """The spans of days ``text`` names ("4 nights": 4, "two weeks": 14, "a day": 1)."""
    out = set()
    for number, unit in COUNT.findall(text):
        word = number.lower()
        n = int(word) if word.isdigit() else NUMBERS.get(word, 1)
        out.add(n * 7 if unit.lower().startswith("week") else n)
    return out


def _on(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def reachable(day: tuple[int, int, int | None], named: Iterable[tuple[int, int, int | None]],
              spans: set[int]) -> bool:
    """Whether ``day`` is a named day, or one moved by a named span, either way."""
    month, number, year = day
    wanted = _on(year or LEAP, month, number)
    if wanted is None:
        return False
    shifts = {0} | spans | {-s for s in spans}
    for m, d, _ in named:
        for start_year in (wanted.year, wanted.year - 1, wanted.year + 1):
            start = _on(start_year, m, d)
            if start is not None and any(start + timedelta(days=s) == wanted for s in shifts):
                return True
    return False


class NamedDays:
    """A side effect's days must be the days its asking clause names (or those moved by a
    span it names), where it names any (see the module's docstring)."""

    __slots__ = ("_clean", "policy_id")
    inline = True  # decides from the journaled plan, provenance and arguments alone: no I/O
    reads_provenance = True  # a day found only nowhere or in untrusted text (tether.policy.reads)

    def __init__(self, policy_id: str = "named-days") -> None:
        self.policy_id = policy_id
        self._clean = Decision(Effect.ALLOW, "no day the request did not name", policy_id)

    def __repr__(self) -> str:
        return f"NamedDays(policy_id={self.policy_id!r})"

    def evaluate(self, subject: Subject, action: Action, resource: Resource,
                 context: Context) -> Decision:
        if not resource.side_effect:
            return self._clean
        # a day is named with digits ("January 11th", "2025-01-11"): a clause without one
        # names none, and is not tokenised on every call
        clauses = [e.clause for e in plan_of(context, resource).asks(action.tool)
                   if any(c.isdigit() for c in e.clause)]
        named = [d for clause in clauses for d in days_in(clause)]
        if not named:
            return self._clean
        spans = {n for clause in clauses for n in counts_in(clause)}
        unnamed = []
        for name in resource.shaping(action.arguments):
            origins = context.provenance.get(name)
            if origins and origins <= GROUNDED:
                continue
            for leaf in leaves(action.arguments[name]):
                unnamed += [f"{name}={leaf}" for day in days_in(leaf, whole=True)
                            if not reachable(day, named, spans)]
        if not unnamed:
            return self._clean
        said = ", ".join(f"{MONTHS[m - 1].title()} {d}" for m, d, _ in dict.fromkeys(named))
        return Decision(Effect.REQUIRE_APPROVAL,
                        f"the request names the days of '{action.tool}' ({said}) and "
                        f"{', '.join(dict.fromkeys(unnamed))} is none of them; a person must "
                        "approve this call", self.policy_id)


named_days = NamedDays()
"""``NamedDays()``, ready to use."""
