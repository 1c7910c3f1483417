"""``tether mcp proxy`` in front of the reference filesystem server from npm.

The official SDK client → ``tether mcp proxy --policy examples/policies/mcp_filesystem.yaml --
mcp-server-filesystem <dir>`` (the locally installed npm package) → the upstream. What the
policy refuses never reaches the upstream: the tests look at the directory itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_peers import (
    approve,
    http_peer,
    http_server,
    journals,
    status,
    stdio_peer,
    store_url,
    text,
)
from mcp_servers import npm_bin
from tether.cli import main
from tether.journal.chain import verify_chain
from tether.mcp.pins import fingerprint

POLICY = "examples/policies/mcp_filesystem.yaml"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    root = tmp_path / "files"
    root.mkdir()
    (root / "notes.txt").write_text("the launch code is 0000\nline two\nline three\n")
    (root / "sub").mkdir()
    return root


def proxy_args(db: Path, files: Path, *extra: str) -> list[str]:
    return ["proxy", "--policy", POLICY, "--store", store_url(db), *extra, "--",
            npm_bin("mcp-server-filesystem"), str(files)]


def decisions(events: list[Any]) -> dict[str, Any]:
    return {e.data["tool"]: e.data for e in events if e.type == "tool.decision"}


async def test_clients_see_the_upstreams_tools_as_pinned(tmp_path: Path, files: Path) -> None:
    pins = tmp_path / "pins.json"
    args = proxy_args(tmp_path / "j.db", files, "--pins", str(pins))
    async with stdio_peer(args, errlog=tmp_path / "err.txt") as client:
        listed = (await client.list_tools()).tools
    pinned = json.loads(pins.read_text())["servers"]["upstream"]
    assert {t.name for t in listed} == set(pinned) >= {"read_text_file", "write_file"}
    for tool in listed:
        definition = pinned[tool.name]["pinned"]["definition"]
        assert tool.description == definition["description"]
        assert tool.input_schema == definition["inputSchema"]
        # the hints shown are the pinned definition's: a client need not prompt on every read
        shown = tool.annotations.model_dump(by_alias=True, exclude_none=True) \
            if tool.annotations is not None else {}
        assert shown == {k: v for k, v in (definition["annotations"] or {}).items()
                         if v is not None}
    hints = {t.name: t.annotations for t in listed}
    assert hints["read_text_file"] is not None and hints["read_text_file"].read_only_hint
    assert hints["write_file"] is not None and not hints["write_file"].read_only_hint
    assert "proxying" in (tmp_path / "err.txt").read_text()


async def test_a_denied_write_never_reaches_the_upstream(tmp_path: Path, files: Path) -> None:
    db = tmp_path / "j.db"
    async with stdio_peer(proxy_args(db, files), errlog=tmp_path / "err.txt") as client:
        write = await client.call_tool("write_file", {"path": str(files / "out.txt"),
                                                      "content": "pwned"})
        edit = await client.call_tool("edit_file", {
            "path": str(files / "notes.txt"), "edits": [{"oldText": "0000", "newText": "1234"}]})
        read = await client.call_tool("read_text_file", {"path": str(files / "notes.txt")})
        outside = await client.call_tool("read_text_file", {"path": "/etc/hostname"})
    assert write.is_error and status(write) == "denied"
    assert "may read files, not change them" in text(write)
    assert not (files / "out.txt").exists()  # never reached the upstream
    assert edit.is_error and "0000" in (files / "notes.txt").read_text()
    assert not read.is_error and text(read).startswith("the launch code is 0000\n")
    assert outside.is_error and status(outside) == "error"  # the upstream's own refusal
    assert "Access denied" in text(outside)
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    assert decisions(events)["write_file"]["decision"]["policy_id"] == "fs:no-writes"
    assert [e.data["tool"] for e in events if e.type == "tool.started"] == [
        "read_text_file", "read_text_file"]


async def test_partial_allow_degrade_and_mask(tmp_path: Path, files: Path) -> None:
    db = tmp_path / "j.db"
    async with stdio_peer(proxy_args(db, files), errlog=tmp_path / "err.txt") as client:
        head = await client.call_tool("read_text_file", {"path": str(files / "notes.txt"),
                                                         "head": 1})
        tree = await client.call_tool("directory_tree", {"path": str(files)})
        found = await client.call_tool("search_files", {"path": str(files),
                                                        "pattern": "*.txt"})
    # partial_allow: only `path` reached the upstream, so the whole file came back
    assert text(head) == "the launch code is 0000\nline two\nline three\n"
    # degrade: list_directory ran instead, decided by the policy in its own right
    assert text(tree).startswith("[tether: policy ran 'list_directory' instead of "
                                 "'directory_tree': a whole tree is too big")
    assert "[FILE] notes.txt" in text(tree) and "[DIR] sub" in text(tree)
    # mask: the searched folder is blanked in the output and the journal
    assert text(found) == "[masked]/notes.txt" and str(files) not in text(found)
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    effects = [(e.data["tool"], e.data["decision"]["effect"]) for e in events
               if e.type == "tool.decision"]
    assert effects == [("read_text_file", "partial_allow"), ("directory_tree", "degrade"),
                       ("list_directory", "allow"), ("search_files", "mask")]
    call_id = decisions(events)["search_files"]["call_id"]
    search = [e.data for e in events if e.data.get("call_id") == call_id
              or e.data.get("call", {}).get("id") == call_id]
    assert len(search) == 4  # client.call, tool.decision, tool.started, tool.result
    assert str(files) not in json.dumps(search) and "[masked]" in json.dumps(search)


async def test_an_approved_call_reaches_the_upstream_once(tmp_path: Path, files: Path) -> None:
    db, folder = tmp_path / "j.db", files / "reports"
    async with stdio_peer(proxy_args(db, files), errlog=tmp_path / "err.txt") as client:
        first = await client.call_tool("create_directory", {"path": str(folder)})
        assert status(first) == "approval_required" and not folder.exists()
        assert first.meta is not None
        approve(db, first.meta["tether/approval"])
        second = await client.call_tool("create_directory", {"path": str(folder)})
        third = await client.call_tool("create_directory", {"path": str(folder)})
    assert not second.is_error and "Successfully created directory" in text(second)
    assert folder.is_dir()
    assert status(third) == "approval_required"
    (events,) = journals(db).values()
    assert verify_chain(events) is None
    assert [e.data["tool"] for e in events if e.type == "tool.started"] == ["create_directory"]


async def test_a_tool_changed_since_it_was_pinned_stays_blocked(tmp_path: Path,
                                                                files: Path) -> None:
    pins, db = tmp_path / "pins.json", tmp_path / "j.db"
    args = proxy_args(db, files, "--pins", str(pins))
    async with stdio_peer(args, errlog=tmp_path / "err.txt") as client:
        await client.list_tools()  # first start: every tool pinned as the upstream shows it
    data = json.loads(pins.read_text())
    pin = data["servers"]["upstream"]["read_text_file"]["pinned"]
    pin["definition"]["description"] = "Read a text file."  # what a reviewer approved earlier
    pin["fingerprint"] = fingerprint(pin["definition"])
    pins.write_text(json.dumps(data))
    async with stdio_peer(args, errlog=tmp_path / "err2.txt") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        read = await client.call_tool("read_text_file", {"path": str(files / "notes.txt")})
    assert listed["read_text_file"].description.startswith(  # type: ignore[union-attr]
        "Read a text file. [tether: blocked: its definition changed")
    assert read.is_error and status(read) == "error"
    assert "definition changed since it was pinned" in text(read)
    assert "The call was not sent to the server" in text(read)


async def test_the_proxy_over_streamable_http(tmp_path: Path, files: Path) -> None:
    db = tmp_path / "j.db"
    with http_server(proxy_args(db, files, "--budget-tool-calls", "1")) as (url, _):
        async with http_peer(url) as client:
            write = await client.call_tool("write_file", {"path": str(files / "x.txt"),
                                                          "content": "x"})
            read = await client.call_tool("read_text_file", {"path": str(files / "notes.txt")})
            again = await client.call_tool("read_text_file", {"path": str(files / "notes.txt")})
    assert status(write) == "denied" and not (files / "x.txt").exists()
    assert status(read) == "ok" and "launch code" in text(read)
    assert status(again) == "skipped"
    (events,) = journals(db).values()
    assert verify_chain(events) is None


def test_an_upstream_that_does_not_start_is_a_clear_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["mcp", "proxy", "--policy", POLICY, "--store", "memory://", "--",
                 sys.executable, "-c", "import sys; print('no such database', file=sys.stderr)"])
    err = capsys.readouterr().err
    assert code == 2
    assert "the upstream MCP server did not start" in err and "no such database" in err
