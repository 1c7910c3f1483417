"""Frozen records built faster (``fast_init``) and events whose data is decoded on first read."""

from __future__ import annotations

import dataclasses
import json
import pickle
from dataclasses import dataclass, field

import pytest

from tether.records import fast_init
from tether.types import Event


def _twins() -> tuple[type, type]:
    def define() -> type:
        @dataclass(frozen=True, slots=True)
        class Record:
            name: str
            count: int = 1
            tags: list[str] = field(default_factory=list)
            doubled: int = 0

            def __post_init__(self) -> None:
                object.__setattr__(self, "doubled", self.count * 2)

        return Record

    return define(), fast_init(define())


@pytest.mark.parametrize("args, kwargs", [(("a",), {}), (("a", 3), {}), (("a",), {"tags": ["x"]}),
                                          ((), {"name": "b", "count": 5, "doubled": 9})])
def test_fast_init_builds_exactly_what_the_dataclass_init_builds(args: tuple, kwargs: dict) -> None:
    plain, fast = _twins()
    a, b = plain(*args, **kwargs), fast(*args, **kwargs)
    assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert repr(a).replace("Record", "") == repr(b).replace("Record", "")


def test_fast_init_sets_fields_that_are_not_parameters_to_their_defaults() -> None:
    @fast_init
    @dataclass(frozen=True, slots=True)
    class Counted:
        x: int
        seen: int = field(init=False, default=0)
        log: list[str] = field(init=False, default_factory=list)

    one = Counted(1)
    assert (one.x, one.seen, one.log) == (1, 0, []) and one.log is not Counted(2).log
    with pytest.raises(TypeError):
        Counted(1, 5)  # type: ignore[call-arg]


def test_fast_init_keeps_records_frozen_and_factories_fresh() -> None:
    _, fast = _twins()
    one, two = fast("a"), fast("b")
    assert one.tags is not two.tags  # each gets its own list, as with the dataclass init
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.name = "changed"
    assert dataclasses.replace(one, count=4).doubled == 8
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        fast()


def test_fast_init_refuses_what_it_cannot_rebuild() -> None:
    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True, slots=True)
    class KeywordOnly:
        x: int
        y: int = field(kw_only=True, default=0)

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    for cls in (Mutable, KeywordOnly, NoSlots):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


def test_an_event_sealed_as_json_decodes_on_read_and_behaves_like_any_event() -> None:
    lazy = Event.from_json(3, "tool.result", "s1", 1.5, '{"content":"57","status":"ok"}', "p", "h")
    eager = Event(3, "tool.result", "s1", 1.5, {"content": "57", "status": "ok"}, "p", "h")
    assert lazy == eager and repr(lazy) == repr(eager)
    assert lazy.data is lazy.data  # decoded once
    assert pickle.loads(pickle.dumps(lazy)) == eager
    assert dataclasses.replace(lazy, seq=4).data == {"content": "57", "status": "ok"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        lazy.data = {}  # type: ignore[misc]


def test_verify_checks_stored_text_without_decoding_and_still_catches_edits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tether.types
    from tether.journal.chain import Journal, verify_chain

    journal = Journal("s1")
    for i in range(3):
        journal.append("step", {"i": i, "text": "ünïcode"})
    sealed = journal.events()
    stored = [Event.from_json(e.seq, e.type, e.session_id, e.timestamp, e.json_text,
                              e.prev_hash, e.hash) for e in sealed]
    expected = [e.data for e in sealed]
    decoded: list[str] = []
    loads = json.loads
    monkeypatch.setattr(tether.types.json, "loads", lambda t: decoded.append(t) or loads(t))
    assert verify_chain(stored) is None and decoded == []  # checked on the text as stored
    assert [e.data for e in stored] == expected and len(decoded) == 3
    spaced = [Event.from_json(e.seq, e.type, e.session_id, e.timestamp,
                              e.json_text.replace(":", ": "), e.prev_hash, e.hash) for e in sealed]
    assert verify_chain(spaced) is None  # layout is not content: the old check still applies
    replaced = [*stored[:1], dataclasses.replace(stored[1], data={"i": 99}), *stored[2:]]
    assert replaced[1].json_text == "" and verify_chain(replaced) == 2  # no stale text kept
    edited = list(stored)
    edited[1] = Event.from_json(2, "step", "s1", sealed[1].timestamp, '{"i":7,"text":"x"}',
                                sealed[1].prev_hash, sealed[1].hash)
    assert verify_chain(edited) == 2
    edited[1] = Event.from_json(2, "step", "s1", sealed[1].timestamp, '{"i":',
                                sealed[1].prev_hash, sealed[1].hash)
    assert verify_chain(edited) == 2  # not JSON at all: broken, not a crash
