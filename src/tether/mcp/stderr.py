"""A stdio server's stderr is drained all the time, and its tail kept for error messages.

Why: a server writes logs to stderr. Left unread, a pipe fills (64 KiB on Linux) and the server
blocks on its next log line — mid-call, so the call hangs. Inherited, it floods the agent's own
stderr. The SDK's ``stdio_client`` passes its ``errlog`` straight to the subprocess, so it must be
a real file descriptor: here it is the write end of an ``os.pipe`` whose read end a daemon thread
reads to the end, keeping only the last few KiB. When a server dies, those last lines usually
say why, and they go into the error the model and the operator see.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TextIO

KEEP_BYTES = 8192


class StderrTail:
    __slots__ = ("_done", "_lock", "_read_fd", "_tail", "_thread", "total", "writer")

    def __init__(self, name: str, keep: int = KEEP_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        self.writer: TextIO | None = os.fdopen(write_fd, "w")  # handed to the subprocess
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(keep,), daemon=True,
                                        name=f"tether-mcp-stderr-{name}")
        self._thread.start()

    def _drain(self, keep: int) -> None:
        try:
            while chunk := os.read(self._read_fd, 65536):
                with self._lock:
                    self.total += len(chunk)
                    self._tail += chunk
                    if len(self._tail) > keep:
                        del self._tail[:-keep]
        except OSError:  # the pipe broke: the server is gone, and so is its stderr
            return
        finally:
            os.close(self._read_fd)
            self._done.set()

    def close_writer(self) -> None:
        """Drop our copy of the write end (once the child has its own), so the reader sees end
        of file when the server and its children exit."""
        writer, self.writer = self.writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def text(self, lines: int = 12, chars: int = 1500) -> str:
        """The last ``lines`` lines (at most ``chars`` characters) the server wrote."""
        with self._lock:
            data = bytes(self._tail)
        text = data.decode("utf-8", errors="replace").strip()
        text = "\n".join(text.splitlines()[-lines:])
        return text if len(text) <= chars else "…" + text[-chars:]

    def wait_ended(self, timeout: float) -> bool:
        """Wait until every process holding the pipe has closed it (the server exited)."""
        return self._done.wait(timeout)
