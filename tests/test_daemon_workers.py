"""Sync tools run on reused daemon workers: a worker is reused for the next call, a hung call
keeps its worker while later calls get others, idle workers leave, and nothing is lost in the
race between a worker leaving and a call arriving."""

from __future__ import annotations

import asyncio
import threading
import time

from tether.tools.threads import DaemonWorkers, run_on_daemon_thread


def test_calls_in_sequence_reuse_one_worker() -> None:
    workers = DaemonWorkers()

    async def three() -> list[int]:
        return [await run_on_daemon_thread(threading.get_ident, workers) for _ in range(3)]

    idents = asyncio.run(three())
    assert len(set(idents)) == 1 and idents[0] != threading.get_ident()
    assert all(t.daemon for t in threading.enumerate() if t.ident == idents[0])


def test_a_hung_call_keeps_its_worker_and_later_calls_get_another() -> None:
    workers = DaemonWorkers()
    release = threading.Event()

    async def scenario() -> tuple[int, int]:
        hung = asyncio.ensure_future(run_on_daemon_thread(lambda: (release.wait(10),
                                                                   threading.get_ident())[1],
                                                          workers))
        await asyncio.sleep(0.05)
        other = await asyncio.wait_for(run_on_daemon_thread(threading.get_ident, workers), 5)
        release.set()
        return await hung, other

    hung_on, other_on = asyncio.run(scenario())
    assert hung_on != other_on  # nobody waited for the hung one


def test_idle_workers_leave_and_a_call_after_that_still_runs() -> None:
    workers = DaemonWorkers(idle_seconds=0.05)

    async def one() -> int:
        return await run_on_daemon_thread(lambda: 7, workers)

    assert asyncio.run(one()) == 7
    assert workers.idle == 1
    deadline = time.monotonic() + 5
    while workers.idle and time.monotonic() < deadline:
        time.sleep(0.01)
    assert workers.idle == 0
    assert asyncio.run(one()) == 7


def test_no_call_is_lost_while_workers_come_and_go() -> None:
    """Calls arriving just as idle workers time out (idle_seconds of a millisecond): each one
    runs exactly once."""
    workers = DaemonWorkers(idle_seconds=0.001)
    done: list[int] = []
    lock = threading.Lock()

    def record(n: int) -> None:
        with lock:
            done.append(n)

    for n in range(2000):
        workers.submit(lambda n=n: record(n))
        if n % 50 == 0:
            time.sleep(0.002)
    deadline = time.monotonic() + 10
    while len(done) < 2000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(done) == list(range(2000))
