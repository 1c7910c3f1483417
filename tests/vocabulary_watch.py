"""A pytest plugin that watches every event tether appends (``-p vocabulary_watch``).

For test_vocabulary.py: existing scenario tests run under it, and each event type tether's own
code appends must be a member of ``EventType`` (a test's own ``append("x", ...)`` is not
tether's), and its data have only fields its payload declares (``tether.journal.payloads``).
The types seen are written, one a line, to the file ``VOCABULARY_SEEN`` names.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tether.journal.chain import Journal
from tether.journal.payloads import PAYLOADS
from tether.vocabulary import EventType

_seen: set[str] = set()
_strays: list[str] = []


@pytest.fixture(autouse=True)
def _watch_appends(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    append = Journal.append

    def watched(self: Journal, type: EventType, data: Mapping[str, Any]) -> int:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("tether."):
            _seen.add(str(type))
            if not isinstance(type, EventType):
                _strays.append(f"{caller} appends {type!r}, not an EventType")
            shape = PAYLOADS.get(type)
            fields = shape.__required_keys__ | shape.__optional_keys__ if shape else set(data)
            _strays.extend(f"{caller} appends {type} with {key!r}, not a field of its payload"
                           for key in set(data) - fields)
        return append(self, type, data)

    monkeypatch.setattr(Journal, "append", watched)
    yield


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("VOCABULARY_SEEN")
    if out:
        with open(out, "w") as f:
            f.writelines(f"{t}\n" for t in sorted(_seen))
            f.writelines(f"STRAY {s}\n" for s in sorted(set(_strays)))
