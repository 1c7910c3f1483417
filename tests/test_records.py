"""Frozen records built faster (``fast_init``) and events whose data is decoded on first read."""

from __future__ import annotations

import dataclasses
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
    class Hidden:
        x: int
        y: int = field(init=False, default=0)

    @dataclass(frozen=True)
    class NoSlots:
        x: int

    for cls in (Mutable, Hidden, NoSlots):
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
