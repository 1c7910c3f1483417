"""ScopedToken: bound to a session and a tool, short-lived, counted, revocable, redacting."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from typing import Any

import pytest

from tether.credentials import REDACTED, CredentialError, ScopedToken, Secret

VALUE = "tok-3xq-secret"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(clock: Clock | None = None, **kwargs: object) -> ScopedToken:
    options: dict[str, object] = {"session_id": "s1", "tool": "db", "ttl": 30.0, "max_uses": 1}
    options.update(kwargs)
    return ScopedToken(VALUE, clock=clock or Clock(), **options)  # type: ignore[arg-type]


def refusal(token: ScopedToken, tool: str | None = None) -> CredentialError:
    with pytest.raises(CredentialError) as info:
        token.reveal(tool)
    return info.value


def test_reveal_counts_uses() -> None:
    token = make(max_uses=2)
    assert (token.uses_left, token.valid) == (2, True)
    assert token.reveal() == VALUE
    assert token.reveal("db") == VALUE
    assert (token.uses_left, token.valid) == (0, False)
    error = refusal(token)
    assert error.reason == "used_up" and error.tool == "db"
    assert "revealed 2 time(s)" in str(error) and "max_uses" in str(error)


def test_expiry_on_the_injected_clock() -> None:
    clock = Clock()
    token = make(clock)
    assert token.expires_at == 1030.0 and token.expires_in == 30.0 and not token.expired
    clock.now = 1029.9
    assert not token.expired
    clock.now = 1031.5
    assert token.expired and token.expires_in == 0.0
    error = refusal(token)
    assert error.reason == "expired" and "expired 1.5s ago (ttl 30s)" in str(error)
    assert token.uses_left == 1  # a refusal does not spend a use


def test_default_clock_is_monotonic() -> None:
    token = ScopedToken(VALUE, session_id="s", tool="t", ttl=0.5)
    assert 0 < token.expires_in <= 0.5


def test_revoke() -> None:
    token = make()
    token.revoke()
    token.revoke()
    assert token.revoked and not token.valid
    error = refusal(token)
    assert error.reason == "revoked" and "revoked" in str(error)


def test_wrong_tool() -> None:
    token = make()
    error = refusal(token, "email")
    assert error.reason == "wrong_tool" and error.tool == "email"
    assert "issued for tool 'db', not 'email'" in str(error)
    assert token.uses_left == 1


def test_reasons_in_order_revoked_before_expired() -> None:
    clock = Clock()
    token = make(clock)
    clock.now += 100
    token.revoke()
    assert refusal(token).reason == "revoked"


def test_redact_every_form_and_after_revocation() -> None:
    token = ScopedToken('p@ss "w/rd"\\', session_id="s", tool="t")
    raw = 'p@ss "w/rd"\\'
    text = (f"a {raw} b {raw} json={json.dumps({'k': raw})} repr={[raw]!r} "
            "url=p%40ss%20%22w%2Frd%22%5C plus=p%40ss+%22w%2Frd%22%5C")
    token.revoke()
    scrubbed = token.redact(text)
    assert scrubbed.count(REDACTED) == 6
    assert "p@ss" not in scrubbed and "p%40ss" not in scrubbed
    assert token.redact("nothing here") == "nothing here"
    with pytest.raises(TypeError, match="redact takes a str"):
        token.redact(b"bytes")  # type: ignore[arg-type]


def test_properties_and_to_dict() -> None:
    token = make(max_uses=3)
    token.reveal()
    data = token.to_dict()
    assert data == {"id": token.id, "session_id": "s1", "tool": "db", "ttl": 30.0,
                    "expires_in": 30.0, "max_uses": 3, "uses_left": 2, "expired": False,
                    "revoked": False}
    assert json.loads(json.dumps(data)) == data
    assert (token.session_id, token.tool, token.ttl, token.max_uses) == ("s1", "db", 30.0, 3)
    assert len(token.id) == 16 and make().id != token.id


def test_metadata_is_read_only() -> None:
    token = make()
    with pytest.raises(AttributeError):
        token.expires_at = 1e18  # type: ignore[misc]
    with pytest.raises(AttributeError):
        token.tool = "other"  # type: ignore[misc]


def test_repr_str_format() -> None:
    token = make()
    text = repr(token)
    assert text == str(token) == format(token) == f"{token}"
    assert text.startswith(f"ScopedToken(id={token.id!r}, tool='db', session_id='s1', "
                           "uses_left=1, expires_in=30.0s")
    assert "Secret('****')" in text and VALUE not in text
    token.revoke()
    assert "revoked" in repr(token)


def test_pickle_json_vars_copy() -> None:
    token = make()
    with pytest.raises(TypeError, match=r"cannot be pickled.*to_dict"):
        pickle.dumps(token)
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps({"t": token})
    with pytest.raises(TypeError):
        vars(token)
    assert copy.copy(token) is token and copy.deepcopy(token) is token
    copy.deepcopy([token])[0].reveal()
    assert token.uses_left == 0  # a copy can never mint extra uses


def test_accepts_secret_object() -> None:
    assert ScopedToken(Secret(VALUE), session_id="s", tool="t").reveal() == VALUE


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"ttl": 0}, "ttl must be a finite number"),
    ({"ttl": -1}, "ttl must be a finite number"),
    ({"ttl": float("nan")}, "ttl must be a finite number"),
    ({"ttl": float("inf")}, "ttl must be a finite number"),
    ({"ttl": True}, "ttl must be a number"),
    ({"ttl": "60"}, "ttl must be a number"),
    ({"max_uses": 0}, "max_uses must be a whole number"),
    ({"max_uses": 1.5}, "max_uses must be a whole number"),
    ({"max_uses": True}, "max_uses must be a whole number"),
    ({"session_id": ""}, "session_id must be a non-empty string"),
    ({"tool": None}, "tool must be a non-empty string"),
])
def test_bad_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make(**kwargs)


def test_concurrent_reveals_never_exceed_max_uses() -> None:
    token = make(max_uses=25, ttl=60.0)
    results: list[str] = []
    failures: list[str] = []
    start = threading.Barrier(64)

    def worker() -> None:
        start.wait()
        for _ in range(5):
            try:
                results.append(token.reveal())
            except CredentialError as exc:
                failures.append(exc.reason)

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 25 and set(results) == {VALUE}
    assert len(failures) == 64 * 5 - 25 and set(failures) == {"used_up"}
    assert token.uses_left == 0
