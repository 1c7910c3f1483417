"""``tether audit list`` a page at a time: --limit (50 by default), the next page's exact
command with its --cursor, the filters, and what it refuses.

The command printed after a full page is run as printed (shlex-split), so a change to how it is
written that loses a filter or the cursor fails here.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from paging_sessions import Made, put
from tether.cli import main
from tether.store.sqlite import SQLiteStore

from conftest import PG_URL

NOW = time.time()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed(out: str) -> list[str]:
    """The session ids of a listing's table, in order."""
    lines = out.splitlines()
    assert lines[0].split()[0] == "SESSION"
    return [line.split()[0] for line in lines[1:] if not line.startswith(("next page:", " "))
            and not line.endswith(("session", "sessions"))]


def next_command(text: str) -> list[str] | None:
    """The argv of the ``next page:`` line, without ``tether``; None when there is none."""
    lines = [line for line in text.splitlines() if line.startswith("next page: ")]
    if not lines:
        return None
    (line,) = lines
    words = shlex.split(line.removeprefix("next page: "))
    assert words[:3] == ["tether", "audit", "list"]
    return words[1:]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'list.db'}"


@pytest.fixture
def made(url: str) -> list[Made]:
    """Seven sessions an hour apart, the newest last, and two of another agent long ago."""
    store = SQLiteStore(url.removeprefix("sqlite:///"))
    try:
        sessions = [
            put(store, f"s{n}", NOW - (10 - n) * 3600, user=f"u{n % 2}",
                thread="th" if n < 3 else None,
                stops=[("ended" if n % 3 else "paused", "finished" if n % 3 else
                        "needs_approval", f"{n}.5")] if n else [])
            for n in range(7)]
        sessions += [put(store, f"old{n}", NOW - 30 * 86400 - n, agent="archived")
                     for n in range(2)]
    finally:
        store.close()
    return sessions


def test_pages_follow_by_the_printed_command_until_the_last(
        url: str, made: list[Made], capsys: pytest.CaptureFixture[str]) -> None:
    argv: list[str] | None = ["audit", "list", "--store", url, "--limit", "4"]
    pages: list[list[str]] = []
    while argv is not None:
        code, out, _ = run(capsys, *argv)
        assert code == 0
        pages.append(listed(out))
        following = next_command(out)
        if following is not None:  # printed last, after a full page only
            assert out.splitlines()[-1].startswith("next page: ")
            assert out.splitlines()[-2] == "4 sessions" and len(pages[-1]) == 4
        argv = following
    assert [len(p) for p in pages] == [4, 4, 1]
    assert [sid for page in pages for sid in page] == [
        "s6", "s5", "s4", "s3", "s2", "s1", "s0", "old0", "old1"]


def test_the_default_page_is_fifty(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    store = SQLiteStore(url.removeprefix("sqlite:///"))
    try:
        for n in range(51):
            put(store, f"m{n:02d}", NOW - n)
    finally:
        store.close()
    code, out, _ = run(capsys, "audit", "list", "--store", url)
    assert code == 0 and len(listed(out)) == 50 and listed(out)[0] == "m00"
    following = next_command(out)
    assert following is not None and "--limit" not in following
    assert listed(run(capsys, *following)[1]) == ["m50"]


@pytest.mark.parametrize(("options", "expected"), [
    (["--user", "u1"], ["s5", "s3", "s1", "old0", "old1"]),
    (["--thread", "th"], ["s2", "s1", "s0"]),
    (["--stop-reason", "needs_approval"], ["s6", "s3"]),
    (["--status", "paused"], ["s6", "s3"]),
    (["--status", "open"], ["s0", "old0", "old1"]),
    (["--agent", "archived"], ["old0", "old1"]),
    (["--min-cost", "2", "--max-cost", "4.5"], ["s4", "s3", "s2"]),
    (["--status", "ended", "--user", "u0", "--min-cost", "3"], ["s4"]),
    (["--since", "7d"], ["s6", "s5", "s4", "s3", "s2", "s1", "s0"]),
    (["--until", "7d", "--agent", "billing"], []),
])
def test_each_filter_reaches_the_listing(url: str, made: list[Made], options: list[str],
                                         expected: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "list", "--store", url, *options)
    assert code == 0
    assert (listed(out) if expected else out) == (expected or "no sessions match\n")


def test_the_next_command_repeats_every_filter_and_an_age_as_its_moment(
        url: str, made: list[Made], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "list", "--store", url, "--since", "7d", "--agent",
                       "billing", "--stop-reason", "finished", "--limit", "2")
    assert code == 0 and listed(out) == ["s5", "s4"]
    following = next_command(out)
    assert following is not None
    since = following[following.index("--since") + 1]
    assert since.endswith("+00:00") and "7d" not in following  # the moment, not the age
    for option, value in (("--agent", "billing"), ("--stop-reason", "finished"),
                          ("--limit", "2"), ("--store", url)):
        assert following[following.index(option) + 1] == value
    code, out, _ = run(capsys, *following)
    assert listed(out) == ["s2", "s1"] and next_command(out) is None


def test_json_pages_keep_stdout_one_document_and_say_the_next_on_stderr(
        url: str, made: list[Made], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "audit", "list", "--store", url, "--json", "--limit", "3")
    rows = json.loads(out)
    assert code == 0 and [r["session_id"] for r in rows] == ["s6", "s5", "s4"]
    assert rows[1] | {"created_at": 0, "updated_at": 0} == {
        "session_id": "s5", "agent": "billing", "tenant_id": "acme", "status": "ended",
        "events": 3, "created_at": 0, "updated_at": 0, "user_id": "u1", "thread_id": None,
        "stop_reason": "finished", "cost_usd": 5.5}
    following = next_command(err)
    assert following is not None and "--json" in following
    assert [r["session_id"] for r in json.loads(run(capsys, *following)[1])] == [
        "s3", "s2", "s1"]


@pytest.mark.parametrize(("options", "said"), [
    (["--cursor", "bogus!"], "start from the first page"),
    (["--limit", "0"], "--limit must be a whole number of at least 1"),
    (["--limit", "many"], "--limit must be a whole number of at least 1"),
    (["--min-cost", "cheap"], "invalid float value"),
    (["--status", "lost"], "invalid choice"),
])
def test_bad_paging_options_are_refused_with_what_to_do(
        url: str, made: list[Made], options: list[str], said: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "audit", "list", "--store", url, *options)
    assert (code, out) == (2, "") and said in err


def test_the_next_command_never_prints_the_stores_password(
        capsys: pytest.CaptureFixture[str]) -> None:
    from tether.store.postgres import PostgresStore

    from conftest import postgres_store

    store = postgres_store()
    assert isinstance(store, PostgresStore)
    try:
        for n in range(3):
            put(store, f"p{n}", NOW - n)
        secret = PG_URL.replace("://postgres@", "://postgres:pa55-word@") + \
            f"?schema={store.schema}"
        assert "pa55-word" in secret  # the server trusts, so the password is not checked
        code, out, err = run(capsys, "audit", "list", "--store", secret, "--limit", "2")
        assert code == 0 and listed(out) == ["p0", "p1"]
        assert "pa55-word" not in out + err
        assert "--store 'postgresql://postgres:***@127.0.0.1" in out
        assert "secrets in place of ***" in out
    finally:
        with store._pool.connection() as db:
            db.execute(f"DROP SCHEMA {store.schema} CASCADE")
        store.close()
