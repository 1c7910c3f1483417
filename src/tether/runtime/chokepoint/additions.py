"""What a turn adds to a tool's output before the model and the journal see it, written once.

Why its own module: three notes are tether's, not the tool's — the note that the policy ran a
fallback tool instead (DEGRADE), put before the output; the notice that a result too long was
cut (the output is cut to the limit, the notice says of how many characters); and the loop
warning on a repeated call, put after it. The journal records the result as the model saw it,
notes included. A RERUN replays that record as the tools' output and its own turn adds the
notes again, so it must take the recorded ones off first, or every rerun of a session with a
repeat, a fallback or a cut result reports "the model request differs" (the model would be
sent each note twice).

Decision: a note is taken off only where it stands exactly as a turn writes it (a leading
fallback note up to its closing ``]`` and newline, the trailing warning word for word, a
truncation notice after exactly as many characters as it says were shown). What a cut took
away the record cannot give back, so it is stood in for (``CUT``, as many characters as were
cut): the rerun cuts at the same place and shows what the record showed. If the rerun's turn
would not add a note again (the policy no longer degrades, the repeat is not one any more, the
limit is another), the model request differs and the rerun reports it, as it should.
"""

from __future__ import annotations

import re

from tether.tools.content import truncation_notice

WARNING = ("\n[tether warning: this exact call was already made. Repeating it again will stop "
           "the run.]")
CUT = "\u2026"  # stands in, in a rerun, for each character a truncation took away
# what truncation_notice writes, after a newline (test_rerun_additions fails if they part)
_TRUNCATED = re.compile(r"\n\[tether: result truncated: showing the first (\d+) of (\d+) "
                        r"characters\]\Z")
_FALLBACK = "[tether: policy ran "
_FALLBACK_END = "]\n"


def fallback_note(fallback: str, instead_of: str, reason: str | None) -> str:
    """The note before the output of a fallback the policy ran instead of ``instead_of``
    (``reason`` None: a call decided earlier, run on resume, whose reason is not repeated)."""
    tail = "" if reason is None else f": {reason or 'degraded'}"
    return f"{_FALLBACK}{fallback!r} instead of {instead_of!r}{tail}{_FALLBACK_END}"


def truncated(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with the notice that says so."""
    return f"{text[:limit]}\n{truncation_notice(limit, len(text))}"


def as_returned(content: str) -> str:
    """A recorded result's content without the notes a turn added: what the tool returned (a
    cut part stood in for by ``CUT``)."""
    if content.endswith(WARNING):
        content = content[:-len(WARNING)]
    if content.startswith(_FALLBACK) and _FALLBACK_END in content:
        content = content.split(_FALLBACK_END, 1)[1]
    cut = _TRUNCATED.search(content)
    if cut is not None and cut.start() == int(cut[1]) < int(cut[2]):
        content = content[:cut.start()] + CUT * (int(cut[2]) - int(cut[1]))
    return content
