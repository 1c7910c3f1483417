"""``SIEMSink``: a journal subscriber that ships security events, as OCSF, to a SIEM.

Why: the people who watch for an agent misbehaving watch a SIEM. This sink turns each session's
journal into OCSF 1.8.0 records (``tether.journal.views.ocsf``: decisions, approvals, denials,
budget overruns and control stops, credential issuance, policy loads) and writes them as JSON
lines to a rotating file, or as RFC 5424 syslog over UDP or TCP (``tether.observe.syslog``).

Decision: the run never waits for, and never fails because of, the SIEM. Calling the sink only
puts the event on a bounded queue; one writer thread derives the records and writes them. A full
queue drops the event (``dropped``), an exporter error is counted (``failures``) — the first of
each is reported once as a ``logging`` warning, nothing is raised into the run. ``flush()``
waits until what was queued is written; ``close()`` (or leaving a ``with`` block) flushes and
stops the writer, within its ``timeout`` when one is given: a writer stuck on its destination
with a full queue is left to write what is queued and stop on its own. The derivation is the
same pure view ``tether audit export --format ocsf`` uses, so the file a live run wrote and the
export of its stored journal agree record for record.

Memory stays bounded: per session, the writer keeps what its ``session.start`` said and its
calls' tools and policies, and drops them at the session's end — or at a pause, when it has a
``store`` to read them back from. A sink that first sees a session at ``session.resumed``
(resumed in another process, or after such a pause) learns the segment's agent, model and user
from that event, and reads the earlier events from ``store`` for the rest (its calls' tools and
policies, the recipe loaded at the start), so its records are the export's; without a store, a
paused session's small context is kept until it ends.
``redact_keys`` masks the values of those keys anywhere in a record, on top of what the journal
already masked and scrubbed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import threading
from collections.abc import Collection
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import InvalidArgument, WrongType
from tether.journal.views.ocsf import record_json, redact
from tether.journal.views.shapes import ocsf_view
from tether.observe._bounded import Deadline
from tether.observe.syslog import SyslogTarget, SyslogWriter, frame
from tether.vocabulary import EventType

if TYPE_CHECKING:
    from types import TracebackType

    from tether.store.base import Store
    from tether.types import Event

log = logging.getLogger("tether.observe")


class _RaisingRotatingFileHandler(RotatingFileHandler):
    """The stdlib's rotation, but a failed write raises to the writer (which counts it)
    instead of printing a traceback to stderr."""

    def handleError(self, record: logging.LogRecord) -> None:
        raise  # re-raises the error emit() is handling


class _Flush:
    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


_STOP = object()


class SIEMSink:
    """Write the OCSF records of every session it is subscribed to; see the module docstring.

    ``SIEMSink(output_path="siem.jsonl")`` — JSON lines, rotated at ``max_bytes`` with
    ``backup_count`` old files kept; ``SIEMSink(syslog="tcp://127.0.0.1:6514")`` — RFC 5424
    syslog (``udp://`` or ``tcp://``); both at once is fine. Attach it with
    ``session.events.subscribe(sink)`` or ``Agent(telemetry=[sink])``. ``shape="acs"`` writes
    OWASP ACS Trace's classes (Process Activity, Authentication, Detection Finding for every
    decision that is not an allow) instead of tether's API Activity.
    """

    signal = "ocsf"  # what it sends (an ACS Guardian's ServerHello says so)

    def __init__(self, output_path: str | os.PathLike[str] | None = None, *,
                 syslog: str | SyslogTarget | None = None, redact_keys: Collection[str] = (),
                 max_bytes: int = 50_000_000, backup_count: int = 5,
                 queue_size: int = 10_000, store: Store | None = None,
                 version: str | None = None, shape: str = "default") -> None:
        if output_path is None and syslog is None:
            raise InvalidArgument("SIEMSink needs somewhere to write: output_path='siem.jsonl' "
                                  "and/or syslog='udp://HOST:PORT' (or tcp://)")
        if isinstance(redact_keys, str):
            raise WrongType(f"redact_keys takes a list of key names, not the string "
                            f"{redact_keys!r}: write redact_keys=[{redact_keys!r}]")
        self.output_path = None if output_path is None else Path(output_path)
        self.syslog = None if syslog is None else SyslogTarget.parse(syslog)
        self.redact_keys = frozenset(redact_keys)
        self.failures = 0  # records an exporter could not write
        self.dropped = 0  # events dropped because the queue was full (or the sink closed)
        self._max_bytes, self._backups = max_bytes, backup_count
        self._store = store
        self._view = ocsf_view(shape, version)
        self.shape = shape  # (checked by ocsf_view)
        self._seen: set[str] = set()  # sessions the view has context for
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._warned: set[str] = set()
        self._file: RotatingFileHandler | None = None
        self._sender: SyslogWriter | None = None
        self._host, self._pid = socket.gethostname(), os.getpid()

    # -- the hot path -------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Queue ``event`` for the writer; never blocks, never raises."""
        if self._closed or (self._thread is None and not self._start()):
            self._drop("the sink is closed")
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._drop(f"its queue is full ({self._queue.maxsize} events): the SIEM "
                       "cannot keep up; raise queue_size or check the destination")

    def _start(self) -> bool:
        with self._lock:
            if self._closed:
                return False
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="tether-siem",
                                                daemon=True)
                self._thread.start()
            return True

    def _drop(self, why: str) -> None:
        with self._lock:
            self.dropped += 1
        self._warn_once("dropped", f"SIEMSink dropped an event: {why}")

    # -- control ------------------------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event queued so far is written (or failed and was counted);
        False if ``timeout`` seconds passed first."""
        if self._thread is None or not self._thread.is_alive():
            return True
        marker = _Flush()
        try:
            self._queue.put(marker, timeout=timeout)
        except queue.Full:
            return False
        return marker.done.wait(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, stop the writer, close the file and the socket — within
        ``timeout`` seconds in total: a writer stuck on its destination is left to finish
        what is queued on its own (a daemon thread: it never holds the process's exit), and
        stops when the queue is empty."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            deadline = Deadline.after(timeout)
            # a writer behind with a full queue stops on its own once it has emptied it
            with contextlib.suppress(queue.Full):
                self._queue.put(_STOP, timeout=deadline.left())
            thread.join(deadline.left())
        else:
            self._close_outputs()

    def __enter__(self) -> SIEMSink:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- the writer thread --------------------------------------------------------------------

    def _work(self) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    self._drain()
                    return
                if isinstance(item, _Flush):
                    item.done.set()
                    continue
                self._handle(item)  # type: ignore[arg-type]
                if self._closed and self._queue.empty():  # closed with no room for _STOP
                    return
        finally:
            self._close_outputs()

    def _drain(self) -> None:
        """What raced past ``close()`` into the queue: counted as dropped, flushes released."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Flush):
                item.done.set()
            elif item is not _STOP:
                self._drop("the sink is closed")

    def _handle(self, event: Event) -> None:
        try:
            records = self._derive(event)
        except Exception as exc:  # a bug in the view must not stop the writer
            self._fail(f"an OCSF record could not be derived from {event.type} "
                       f"seq {event.seq} ({exc!r})")
            return
        for record in records:
            record = redact(record, self.redact_keys)
            line = record_json(record)
            if self.output_path is not None:
                self._write_file(line)
            if self.syslog is not None:
                self._write_syslog(record, line)

    def _derive(self, event: Event) -> list[dict[str, Any]]:
        sid = event.session_id
        if sid not in self._seen:
            self._seen.add(sid)
            if event.type != EventType.SESSION_START and self._store is not None:
                for earlier in self._store.read(sid):
                    if earlier.seq >= event.seq:
                        break
                    self._view.apply(earlier)
        records: list[dict[str, Any]] = self._view.apply(event)
        # at a pause too when the store can give the context back at the resumption
        if event.type == EventType.SESSION_END or (event.type == EventType.SESSION_PAUSED
                                                   and self._store is not None):
            self._view.forget(sid)
            self._seen.discard(sid)
        return records

    def _write_file(self, line: str) -> None:
        try:
            if self._file is None:
                assert self.output_path is not None
                self.output_path.parent.mkdir(parents=True, exist_ok=True)
                self._file = _RaisingRotatingFileHandler(
                    self.output_path, maxBytes=self._max_bytes, backupCount=self._backups,
                    encoding="utf-8", delay=True)
                self._file.setFormatter(logging.Formatter("%(message)s"))
            self._file.emit(logging.LogRecord("tether.siem", logging.INFO, "", 0, line,
                                              None, None))
        except Exception as exc:
            self._fail(f"cannot write {self.output_path} ({exc}); check the path and the "
                       "disk", key="file")

    def _write_syslog(self, record: dict[str, Any], line: str) -> None:
        assert self.syslog is not None
        try:
            if self._sender is None:
                self._sender = SyslogWriter(self.syslog)
            self._sender.send(frame(record, line, self._host, self._pid))
        except Exception as exc:
            target = self.syslog
            self._fail(f"cannot send to syslog {target.protocol}://{target.host}:"
                       f"{target.port} ({exc}); is the collector listening?", key="syslog")

    def _fail(self, message: str, key: str = "derive") -> None:
        with self._lock:
            self.failures += 1
        self._warn_once(key, f"SIEMSink: {message}. Further failures are counted in "
                        "sink.failures, not logged")

    def _warn_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        log.warning(message)

    def _close_outputs(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._sender is not None:
            self._sender.close()
