"""A fake OpenAI + Anthropic HTTP server on 127.0.0.1 for the provider tests.

The real SDK clients talk to it over real HTTP. It answers /v1/chat/completions and /v1/messages
with realistic bodies (JSON or server-sent events), scripted per path, or from a responder
function; it records every request's path, headers and JSON body so tests can assert exactly
what each adapter sent. Scripted replies can be errors with Retry-After, delays, or hangs (which
end when the server stops). Nothing leaves loopback.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON body
    events: list[tuple[str | None, Any]] | None = None  # SSE: (event name, data)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    hang: bool = False
    cut_after: int | None = None  # SSE: close the connection after this many events
    until_closed: bool = False  # send nothing until the client closes the connection


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


Responder = Callable[[Recorded], Reply]


class FakeLLMServer:
    def __init__(self, responder: Responder | None = None) -> None:
        self.requests: list[Recorded] = []
        self.responder = responder
        self._queues: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.closed = threading.Event()  # set when a client closed an until_closed request
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def bodies(self, path: str | None = None) -> list[Any]:
        return [r.body for r in self.requests if path is None or r.path == path]

    def _take(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            queue = self._queues.get(recorded.path)
            if queue:
                return queue.popleft()
        if self.responder is not None:
            return self.responder(recorded)
        return Reply(500, {"error": {"message": f"nothing scripted for {recorded.path}",
                                     "type": "server_error"}})


def _handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server._take(Recorded(self.path, headers, body, time.monotonic()))
            if reply.hang:
                server._stopping.wait(30)
                return
            if reply.until_closed:
                if _wait_for_close(self.connection, server._stopping):
                    server.closed.set()
                return
            if reply.delay:
                server._stopping.wait(reply.delay)
            # the client may have given up (a cancelled call): that is the point of some tests
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._send(reply)

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            if reply.events is not None:
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for n, (event, data) in enumerate(reply.events):
                    if reply.cut_after is not None and n >= reply.cut_after:
                        return
                    text = data if isinstance(data, str) else json.dumps(data)
                    chunk = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
                    self.wfile.write(chunk.encode())
                    self.wfile.flush()
                return
            payload = json.dumps(reply.body).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def _wait_for_close(connection: socket.socket, stopping: threading.Event) -> bool:
    """Block until the peer closes ``connection`` (True) or the server stops (False)."""
    while not stopping.is_set():
        readable, _, _ = select.select([connection], [], [], 0.05)
        if readable:
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return True
            except OSError:  # reset by the peer: closed too
                return True
            connection.recv(65536)  # bytes after the request: not a close, keep waiting
    return False


# -- realistic OpenAI bodies ------------------------------------------------------------------

def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}


def openai_completion(text: str | None = None, calls: Sequence[tuple[str, str, str]] = (),
                      finish: str | None = None, usage: tuple[int, int, int] = (50, 10, 0),
                      model: str = "gpt-4o-mini-2024-07-18") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None,
                               "annotations": []}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function",
                                  "function": {"name": n, "arguments": a}} for i, n, a in calls]
    return {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion",
            "created": 1741569952, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish or ("tool_calls" if calls else "stop")}],
            "usage": openai_usage(*usage), "service_tier": "default",
            "system_fingerprint": "fp_06737a9306"}


def openai_stream(texts: Sequence[str] = (), calls: Sequence[tuple[str, str, list[str]]] = (),
                  finish: str | None = None, usage: tuple[int, int, int] | None = (50, 10, 0),
                  model: str = "gpt-4o-mini-2024-07-18") -> list[tuple[str | None, Any]]:
    """Chunks as OpenAI streams them: role first, content deltas, tool-call fragments (id and
    name in the first, argument text after), the finish chunk, the usage chunk, [DONE]."""
    base = {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk",
            "created": 1741569952, "model": model, "system_fingerprint": "fp_06737a9306",
            "service_tier": "default"}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish_reason}], "usage": None}

    out: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": "",
                                                       "refusal": None}))]
    out += [(None, chunk({"content": t})) for t in texts]
    for index, (call_id, name, parts) in enumerate(calls):
        out.append((None, chunk({"tool_calls": [{"index": index, "id": call_id,
                                                 "type": "function",
                                                 "function": {"name": name,
                                                              "arguments": ""}}]})))
        out += [(None, chunk({"tool_calls": [{"index": index,
                                              "function": {"arguments": p}}]}))
                for p in parts]
    out.append((None, chunk({}, finish or ("tool_calls" if calls else "stop"))))
    if usage is not None:
        out.append((None, {**base, "choices": [], "usage": openai_usage(*usage)}))
    out.append((None, "[DONE]"))
    return out


def openai_error(status: int, message: str, type: str, code: str | None = None,
                 headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": type, "param": None,
                                    "code": code}}, headers=headers or {})


# -- realistic Anthropic bodies ---------------------------------------------------------------

def anthropic_usage(input: int, output: int, cache_read: int = 0,
                    cache_creation: int = 0) -> dict[str, Any]:
    return {"input_tokens": input, "output_tokens": output,
            "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read,
            "service_tier": "standard"}


def anthropic_message(text: str | None = None, uses: Sequence[tuple[str, str, Any]] = (),
                      stop: str | None = None, usage: tuple[int, ...] = (50, 10, 0, 0),
                      model: str = "claude-sonnet-4-20250514") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": inp} for i, n, inp in uses]
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": model, "content": content,
            "stop_reason": stop or ("tool_use" if uses else "end_turn"), "stop_sequence": None,
            "usage": anthropic_usage(*usage)}


def anthropic_stream(texts: Sequence[str] = (), uses: Sequence[tuple[str, str, list[str]]] = (),
                     stop: str | None = None, usage: tuple[int, ...] = (50, 10, 0, 0),
                     model: str = "claude-sonnet-4-20250514") -> list[tuple[str | None, Any]]:
    """Events as Anthropic streams them, pings included; tool input arrives as partial JSON."""
    start = anthropic_message(model=model, usage=(usage[0], 1, *usage[2:]))
    start.update(content=[], stop_reason=None)
    out: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start",
                                                            "message": start}),
                                         ("ping", {"type": "ping"})]
    index = 0
    if texts:
        out.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                            "content_block": {"type": "text", "text": ""}}))
        out += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": t}})
                for t in texts]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    for offset, (use_id, name, parts) in enumerate(uses):
        i = index + offset
        out.append(("content_block_start", {"type": "content_block_start", "index": i,
                                            "content_block": {"type": "tool_use", "id": use_id,
                                                              "name": name, "input": {}}}))
        out += [("content_block_delta", {"type": "content_block_delta", "index": i,
                                         "delta": {"type": "input_json_delta",
                                                   "partial_json": p}}) for p in parts]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop or ("tool_use" if uses
                                                                    else "end_turn"),
                                            "stop_sequence": None},
                                  "usage": {"output_tokens": usage[1]}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def anthropic_error(status: int, type: str, message: str,
                    headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": type, "message": message},
                          "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}, headers=headers or {})

