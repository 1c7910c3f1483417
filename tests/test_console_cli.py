"""``tether console`` as a person runs it: in its own process on a free port, it prints its URL
and a one-time login link; the link signs in once; Ctrl-C (SIGINT) stops it cleanly even with a
live stream open; and neither the token nor the cookie is ever printed to its logs beyond the
one line that hands the link over."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from console_app import opened, run_session
from tether.cli import main
from tether.store.sqlite import SQLiteStore

TIMEOUT = httpx.Timeout(60.0)


def test_the_command_serves_signs_in_once_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = SQLiteStore(db)
    session = run_session(store)
    store.close()
    console = subprocess.Popen(
        [sys.executable, "-m", "tether", "console", "--store", f"sqlite:///{db}", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert console.stdout is not None
        opening = console.stdout.readline()
        base = re.fullmatch(r"tether console: (http://127\.0\.0\.1:(\d+))/\n", opening)
        assert base, opening
        assert int(base[2]) > 0
        handing = console.stdout.readline()
        link = re.fullmatch(r"sign in \(this link works once\): (\S+/login\?token=(\S+))\n",
                            handing)
        assert link, handing
        token = link[2]

        with httpx.Client(timeout=TIMEOUT, follow_redirects=True) as browser:
            signed = browser.get(link[1])  # follows the redirect to the inbox
            assert signed.history[0].status_code == 303
            assert str(signed.url) == f"{base[1]}/inbox"
            cookie = browser.cookies["tether_console"]
            page = browser.get(f"{base[1]}/sessions")
            assert page.status_code == 200 and session in page.text
            assert token not in page.text and cookie not in page.text
        assert httpx.get(link[1], timeout=TIMEOUT).status_code == 401  # replayed: refused

        with httpx.stream("GET", f"{base[1]}/events/sessions", cookies={"tether_console": cookie},
                          timeout=TIMEOUT) as live:
            lines = opened(live)
            console.send_signal(signal.SIGINT)  # Ctrl-C, with a page still listening
            assert [line for line in lines if line] == []  # the stream ends, not the wait
        out, err = console.communicate(timeout=60)
        assert console.returncode == 0, err
        assert "stopped" in err and "Traceback" not in err
        for text in (out, err):  # nothing after the link line, and no log line, repeats it
            assert token not in text and cookie not in text
    finally:
        if console.poll() is None:
            console.kill()
            console.communicate()


def test_sigterm_stops_it_cleanly_too(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    SQLiteStore(db).close()
    console = subprocess.Popen(
        [sys.executable, "-m", "tether", "console", "--store", f"sqlite:///{db}", "--port", "0",
         "--auth", "none"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert console.stdout is not None
        assert console.stdout.readline().startswith("tether console: http://127.0.0.1:")
        console.send_signal(signal.SIGTERM)  # as a service manager stops it
        out, err = console.communicate(timeout=60)
        assert console.returncode == 0, err
        assert "stopped" in err and "sign in" not in out  # no link without --auth link
    finally:
        if console.poll() is None:
            console.kill()
            console.communicate()


def test_a_port_in_use_is_a_usage_error_that_says_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = str(taken.getsockname()[1])
        assert main(["console", "--store", "memory://", "--port", port]) == 2
    finally:
        taken.close()
    assert "pick another --port (0: any free one)" in capsys.readouterr().err


def test_unreadable_rules_and_a_missing_store_are_usage_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("peple: {}\n")
    assert main(["console", "--store", "memory://", "--rules", str(rules), "--port", "0"]) == 2
    assert "unknown keys ['peple']" in capsys.readouterr().err
    assert main(["console", "--store", f"sqlite:///{tmp_path / 'none.db'}", "--port", "0"]) == 2
    assert "no store at" in capsys.readouterr().err


def test_a_missing_web_extra_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # `import uvicorn` raises ImportError
    assert main(["console", "--store", "memory://", "--port", "0"]) == 2
    assert "pip install -e '.[web]'" in capsys.readouterr().err
