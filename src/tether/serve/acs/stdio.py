"""The Guardian over stdio: Content-Length framed JSON-RPC, one request answered at a time.

Why: ACS v0.1.0 names two transports, HTTP and stdio; an observed agent that spawns its Guardian
as a child process talks to it over the child's stdin and stdout, with no port to guard.
Decision: each message is ``Content-Length: N`` (other headers ignored), a blank line, then N
bytes of UTF-8 JSON, both ways (as LSP frames them). A frame whose declared length is past
``max_bytes``, or a header block that is not one, is answered with -32600 and ends the stream:
with the framing lost there is no telling where the next message starts. Nothing but frames is
written to stdout; the Guardian's own lines go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, BinaryIO

from tether.serve.acs.guardian import Guardian
from tether.serve.acs.http import MAX_BYTES
from tether.serve.acs.wire import INVALID_REQUEST, PARSE_ERROR, AcsRefused, error

_MAX_HEADER = 8192  # bytes of headers one frame may carry


def _frame(body: dict[str, Any]) -> bytes:
    data = json.dumps(body, ensure_ascii=False).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _length(headers: bytes) -> int | None:
    """The declared Content-Length of a header block, None if it declares none or garbage."""
    for line in headers.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            text = value.strip()
            return int(text) if text.isdigit() and len(text) <= 12 else None
    return None


async def serve_stdio(guardian: Guardian, *, reader: asyncio.StreamReader | None = None,
                      writer: BinaryIO | None = None, max_bytes: int = MAX_BYTES) -> None:
    """Answer framed requests from ``reader`` (default stdin) on ``writer`` (default stdout)
    until the input ends or its framing is lost."""
    out = writer if writer is not None else sys.stdout.buffer
    if reader is None:
        reader = asyncio.StreamReader(limit=_MAX_HEADER)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while True:
        try:
            headers = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return  # the input ended
        except asyncio.LimitOverrunError:
            headers = b""
        size = _length(headers)
        if size is None or size > max_bytes:
            out.write(_frame(error(None, AcsRefused(
                INVALID_REQUEST, "bad_frame",
                f"a frame needs a Content-Length of at most {max_bytes} bytes; the stream "
                "ends here"))))
            out.flush()
            return
        try:
            body = await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return
        try:
            request = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            answer = error(None, AcsRefused(PARSE_ERROR, "parse_error", "the body is not JSON"))
        else:
            answer = await guardian.handle(request)
        out.write(_frame(answer))
        out.flush()
