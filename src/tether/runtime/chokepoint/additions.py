"""What a turn adds to a tool's output before the model and the journal see it, written once.

Why its own module: two notes are tether's, not the tool's — the note that the policy ran a
fallback tool instead (DEGRADE), put before the output, and the loop warning on a repeated call,
put after it. The journal records the result as the model saw it, notes included. A RERUN
replays that record as the tools' output and its own turn adds the notes again, so it must take
the recorded ones off first, or every rerun of a session with a repeat or a fallback reports
"the model request differs" (the model would be sent each note twice).

Decision: a note is taken off only where it stands exactly as a turn writes it (a leading
fallback note up to its closing ``]`` and newline, the trailing warning word for word). If the
rerun's turn would not add it again (the policy no longer degrades, the repeat is not one any
more), the model request differs and the rerun reports it, as it should.
"""

from __future__ import annotations

WARNING = ("\n[tether warning: this exact call was already made. Repeating it again will stop "
           "the run.]")
_FALLBACK = "[tether: policy ran "
_FALLBACK_END = "]\n"


def fallback_note(fallback: str, instead_of: str, reason: str | None) -> str:
    """The note before the output of a fallback the policy ran instead of ``instead_of``
    (``reason`` None: a call decided earlier, run on resume, whose reason is not repeated)."""
    tail = "" if reason is None else f": {reason or 'degraded'}"
    return f"{_FALLBACK}{fallback!r} instead of {instead_of!r}{tail}{_FALLBACK_END}"


def as_returned(content: str) -> str:
    """A recorded result's content without the notes a turn added: what the tool returned."""
    if content.endswith(WARNING):
        content = content[:-len(WARNING)]
    if content.startswith(_FALLBACK) and _FALLBACK_END in content:
        content = content.split(_FALLBACK_END, 1)[1]
    return content
