"""tether acs serve across process boundaries, hostile inputs first: a request replayed after
a restart, an oversized body and nesting past the parser, the secret only from the environment,
stdio framing lost; then an approval granted by ``tether approvals approve`` in another process,
and ``tether audit verify`` over what the Guardian journaled."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from acs_vectors import (
    ROOT,
    SECRET,
    Agent,
    guardian,
    hello_payload,
    post,
    response_verifies,
    signed,
    tool_payload,
)
from conftest import import_or_unavailable
from test_acs_guardian import POLICY, SSN, code

import_or_unavailable("rfc8785", "acs")

# -- across processes ----------------------------------------------------------------------------

@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    return path


def test_a_request_replayed_after_a_restart_is_refused(policy_file: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/guardian.db"
    with guardian(policy_file, store) as url:
        agent = Agent(url)
        agent.hello()
        message = agent.envelope("steps/toolCallRequest", tool_payload("records.lookup", {}))
        first = post(url, signed(json.loads(json.dumps(message))))[1]
        assert first["result"]["decision"] == "allow"
        assert agent.call("records.lookup", {"ssn": SSN})["result"]["decision"] == "modify"
    with guardian(policy_file, store) as url:
        assert code(post(url, signed(message))[1]) == -32005
        agent.url = url  # the session goes on: its masks are remembered ...
        result = agent.send(agent.envelope("steps/toolCallResult", {
            "tool": {"name": "records.lookup"}, "outputs": {"ssn": SSN}}))["result"]
        assert result["decision"] == "modify"
        assert agent.call("records.lookup", {})["result"]["decision"] == "allow"  # its contract


def test_an_approval_asked_then_granted_from_another_process(policy_file: Path,
                                                             tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/guardian.db"
    with guardian(policy_file, store) as url:
        agent = Agent(url)
        agent.hello()
        asked = agent.call("records.write", {"id": "c-1"})["result"]
        assert asked["decision"] == "ask"
        approval = asked["ask_details"]["approval_id"]
        assert agent.call("records.write", {"id": "c-1"})["result"]["decision"] == "ask"
        done = subprocess.run(
            [sys.executable, "-m", "tether", "approvals", "approve", approval, "--store", store,
             "--approver", "ops", "--unauthenticated"], cwd=ROOT, capture_output=True,
            text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr
        assert agent.call("records.write", {"id": "c-1"})["result"]["decision"] == "allow"
        again = agent.call("records.write", {"id": "c-1"})["result"]  # used once
        assert again["decision"] == "ask"
        other = agent.call("records.write", {"id": "c-2"})["result"]  # other arguments
        assert other["decision"] == "ask"
    audit = subprocess.run([sys.executable, "-m", "tether", "audit", "verify", "--store", store],
                           cwd=ROOT, capture_output=True, text=True,
                           env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert audit.returncode == 0, audit.stdout + audit.stderr  # the journal verifies


def test_an_approval_is_used_only_by_the_agent_it_was_issued_for(policy_file: Path,
                                                                 tmp_path: Path) -> None:
    """ACS-R-011 across three processes: a person approves agent-A's call from the CLI; agent-B
    sending that very call is refused -32003 (no person is asked for a twin of it), its
    request withdrawn; agent-A's approval is still there for agent-A; once used, agent-B's
    call is asked as any other. A Guardian restarted between them reads the same store."""
    store = f"sqlite:///{tmp_path}/guardian.db"
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    with guardian(policy_file, store) as url:
        a, b = Agent(url, "agent-A"), Agent(url, "agent-B")
        a.hello()
        b.hello()
        approval = a.call("records.write", {"id": "c-1"})["result"]["ask_details"]["approval_id"]
        done = subprocess.run(
            [sys.executable, "-m", "tether", "approvals", "approve", approval, "--store", store,
             "--approver", "ops", "--unauthenticated"], cwd=ROOT, capture_output=True,
            text=True, env=env)
        assert done.returncode == 0, done.stderr
    with guardian(policy_file, store) as url:
        a.url = b.url = url
        refused = b.call("records.write", {"id": "c-1"})["error"]
        assert refused["code"] == -32003
        assert refused["data"]["reason"] == "approval_issued_to_another"
        assert "issued to another agent" in refused["message"]
        listed = subprocess.run([sys.executable, "-m", "tether", "approvals", "list", "--store",
                                 store], cwd=ROOT, capture_output=True, text=True,
                                env=env)
        assert listed.returncode == 0, listed.stderr
        mine = [line for line in listed.stdout.splitlines()
                if line.startswith(refused["data"]["approval_id"])]
        assert len(mine) == 1 and " expired (withdrawn: " in mine[0]  # no one is asked for it
        assert b.call("records.write", {"id": "c-2"})["result"]["decision"] == "ask"
        assert a.call("records.write", {"id": "c-1"})["result"]["decision"] == "allow"
        assert b.call("records.write", {"id": "c-1"})["result"]["decision"] == "ask"


def test_a_huge_payload_is_refused_unread_and_the_guardian_serves_on(policy_file: Path) -> None:
    with guardian(policy_file, "memory://") as url:
        status, answer = post(url, None, raw=b'{"jsonrpc": "2.0", "x": "' + b"a" * (2 << 20)
                              + b'"}')
        assert status == 413 and code(answer) == -32600
        assert post(url, None, raw=b"{not json")[1]["error"]["code"] == -32700
        assert post(url, None, raw=b"[" * 100_000)[1]["error"]["code"] == -32700
        assert "result" in Agent(url).hello()


def test_the_secret_comes_from_the_environment_only(policy_file: Path) -> None:
    for value in ("", "not base64!", "c2hvcnQ="):
        done = subprocess.run(
            [sys.executable, "-m", "tether", "acs", "serve", "--policy", str(policy_file),
             "--store", "memory://", "--port", "0"], cwd=ROOT, capture_output=True, text=True,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                 "TETHER_ACS_SECRET": value}, timeout=60)
        assert done.returncode == 2 and "TETHER_ACS_SECRET" in done.stderr
        assert value not in done.stderr or not value


def test_a_service_approver_named_on_the_command_line_decides_at_once(policy_file: Path,
                                                                      tmp_path: Path) -> None:
    approver = f"{ROOT / 'tests'}/acs_approvers.py:approves_c1"
    store = f"sqlite:///{tmp_path}/guardian.db"
    with guardian(policy_file, store, extra=("--approver", approver)) as url:
        agent = Agent(url)
        agent.hello()
        assert agent.call("records.write", {"id": "c-1"})["result"]["decision"] == "allow"
        denied = agent.call("records.write", {"id": "c-2"})["result"]
        assert denied["decision"] == "deny" and denied["reason_codes"] == ["approval_denied"]
    listed = subprocess.run([sys.executable, "-m", "tether", "approvals", "list", "--all",
                             "--store", store], cwd=ROOT, capture_output=True, text=True,
                            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert listed.stdout.count("approver:approves_c1") == 2, listed.stdout  # on the record


@pytest.mark.parametrize(("approver", "says"), [
    ("no_such_module_here:approve", "no module 'no_such_module_here'"),
    ("acs_approvers.py:nothing", "has no attribute 'nothing'"),
    ("acs_vectors.py:VERSION", "is not callable"),
])
def test_an_approver_that_does_not_load_stops_the_guardian_at_start(
        policy_file: Path, approver: str, says: str) -> None:
    target = approver if approver.startswith("no_") else f"{ROOT / 'tests'}/{approver}"
    done = subprocess.run(
        [sys.executable, "-m", "tether", "acs", "serve", "--policy", str(policy_file),
         "--store", "memory://", "--port", "0", "--approver", target], cwd=ROOT,
        capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "TETHER_ACS_SECRET": SECRET})
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_over_stdio_frames_in_frames_out_and_a_lost_frame_ends_the_stream(
        policy_file: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tether", "acs", "serve", "--transport", "stdio", "--policy",
         str(policy_file), "--store", "memory://"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "TETHER_ACS_SECRET": SECRET})
    frames: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = process.stdout.read(1)
                if not byte:
                    frames.put(None)
                    return
                header += byte
            size = int(header.split(b":")[1].strip())
            frames.put(json.loads(process.stdout.read(size)))

    threading.Thread(target=pump, daemon=True).start()

    def exchange(body: bytes) -> dict[str, Any] | None:
        assert process.stdin is not None
        process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        process.stdin.flush()
        return frames.get(timeout=60)

    try:
        agent = Agent("stdio")
        hello = exchange(json.dumps(signed(agent.envelope(
            "handshake/hello", hello_payload()))).encode())
        assert hello is not None and hello["result"]["negotiated_version"] == "0.1.0"
        assert response_verifies(hello, agent.session_id)
        call = exchange(json.dumps(signed(agent.envelope(
            "steps/toolCallRequest", tool_payload("records.delete", {"id": 1})))).encode())
        assert call is not None and call["result"]["decision"] == "deny"
        assert exchange(b"{oops") == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "the body is not JSON",
            "data": {"reason": "parse_error", "message": "the body is not JSON"}}}
        assert process.stdin is not None
        process.stdin.write(b"Content-Length: 99999999999\r\n\r\n")
        process.stdin.flush()
        lost = frames.get(timeout=60)
        assert lost is not None and lost["error"]["data"]["reason"] == "bad_frame"
        assert process.wait(timeout=60) == 0  # the stream ended, the Guardian with it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
