"""CredentialBroker: registration, issue per call, provider rotation and failure, revocation."""

from __future__ import annotations

import copy
import functools
import pickle
import threading

import pytest

from tether.credentials import CredentialBroker, CredentialError, ScopedToken, Secret

VALUE = "sk-broker-7d1e"


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_issue_static_secret_binds_session_and_tool() -> None:
    clock = Clock()
    broker = CredentialBroker(clock=clock)
    broker.register("db", VALUE, ttl=5, max_uses=2)
    token = broker.issue("s1", "db")
    assert isinstance(token, ScopedToken)
    assert (token.session_id, token.tool, token.max_uses, token.expires_at) == ("s1", "db", 2,
                                                                                 55.0)
    assert token.reveal("db") == VALUE
    clock.now = 56.0
    with pytest.raises(CredentialError, match="expired"):
        token.reveal()


def test_each_call_gets_a_fresh_token() -> None:
    broker = CredentialBroker()
    broker.register("db", Secret(VALUE))
    first, second = broker.issue("s1", "db"), broker.issue("s1", "db")
    assert first is not None and second is not None and first is not second
    assert first.reveal() == second.reveal() == VALUE


def test_unregistered_tool_gets_none() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    assert broker.issue("s1", "calculator") is None
    assert broker.issued("s1") == []


def test_provider_is_called_at_issue_time_and_rotation_is_picked_up() -> None:
    current = ["v1"]
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        return current[0]

    broker = CredentialBroker()
    broker.register("api", provider=provider)
    assert calls == []
    first = broker.issue("s1", "api")
    current[0] = "v2"
    second = broker.issue("s1", "api")
    assert first is not None and second is not None
    assert (first.reveal(), second.reveal()) == ("v1", "v2")
    assert len(calls) == 2


def test_provider_may_return_secret() -> None:
    broker = CredentialBroker()
    broker.register("api", provider=lambda: Secret(VALUE))
    token = broker.issue("s1", "api")
    assert token is not None and token.reveal() == VALUE


def test_provider_that_raises_names_tool_not_secret() -> None:
    def provider() -> str:
        raise RuntimeError(f"connection string was postgres://app:{VALUE}@db")

    broker = CredentialBroker()
    broker.register("db", provider=provider)
    with pytest.raises(CredentialError) as info:
        broker.issue("s1", "db")
    error = info.value
    assert error.reason == "provider" and error.tool == "db"
    assert "tool 'db'" in str(error) and "RuntimeError" in str(error)
    assert VALUE not in str(error)
    assert error.__cause__ is None and error.__context__ is None
    assert broker.issued("s1") == []


@pytest.mark.parametrize("returned", [None, 42, "", b"bytes"])
def test_provider_returning_non_secret(returned: object) -> None:
    broker = CredentialBroker()
    broker.register("db", provider=lambda: returned)  # type: ignore[arg-type, return-value]
    with pytest.raises(CredentialError, match="must return a non-empty str or a Secret") as info:
        broker.issue("s1", "db")
    assert info.value.reason == "provider"


def test_provider_credential_error_keeps_its_reason() -> None:
    def provider() -> str:
        raise CredentialError("store is sealed", reason="unavailable")

    broker = CredentialBroker()
    broker.register("db", provider=provider)
    with pytest.raises(CredentialError, match="tool 'db': store is sealed") as info:
        broker.issue("s1", "db")
    assert info.value.reason == "unavailable" and info.value.tool == "db"


def test_revoke_session_revokes_only_that_session_and_forgets_it() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE, max_uses=5)
    broker.register("api", provider=lambda: "other")
    mine = [broker.issue("s1", "db"), broker.issue("s1", "api"), broker.issue("s1", "db")]
    theirs = broker.issue("s2", "db")
    assert broker.issued("s1") == mine and broker.issued("s2") == [theirs]
    assert broker.revoke_session("s1") == 3
    assert all(t is not None and t.revoked for t in mine)
    assert theirs is not None and not theirs.revoked and theirs.reveal() == VALUE
    assert broker.issued("s1") == []
    assert broker.revoke_session("s1") == 0
    assert broker.revoke_session("never-seen") == 0
    token = mine[0]
    assert token is not None
    with pytest.raises(CredentialError, match="revoked"):
        token.reveal()
    assert token.redact(f"x{VALUE}x") == "x[secret redacted]x"


async def test_aissue_static_and_unregistered() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    token = await broker.aissue("s1", "db")
    assert token is not None and token.reveal() == VALUE
    assert await broker.aissue("s1", "nothing") is None


def test_register_errors() -> None:
    broker = CredentialBroker()
    with pytest.raises(ValueError, match="exactly one of secret= or provider="):
        broker.register("db")
    with pytest.raises(ValueError, match="exactly one of secret= or provider="):
        broker.register("db", VALUE, provider=lambda: VALUE)
    with pytest.raises(TypeError, match="must be a callable"):
        broker.register("db", provider="not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl must be"):
        broker.register("db", VALUE, ttl=0)
    with pytest.raises(ValueError, match="ttl must be"):
        broker.register("db", VALUE, ttl=float("nan"))
    with pytest.raises(ValueError, match="max_uses must be"):
        broker.register("db", VALUE, max_uses=0)
    with pytest.raises(ValueError, match="tool must be a non-empty string"):
        broker.register("", VALUE)
    with pytest.raises(TypeError, match="wraps a str"):
        broker.register("db", 1234)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be empty"):
        broker.register("db", "")
    assert broker.tools == frozenset()
    broker.register("db", VALUE)
    with pytest.raises(ValueError, match=r"already registered for tool 'db'; call unregister"):
        broker.register("db", "other")


def test_unregister_and_membership() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    token = broker.issue("s1", "db")
    assert "db" in broker and broker.tools == frozenset({"db"})
    assert broker.unregister("db") is True and broker.unregister("db") is False
    assert "db" not in broker and broker.issue("s1", "db") is None
    assert token is not None and token.reveal() == VALUE  # issued tokens live out their ttl
    broker.register("db", "rotated")
    token = broker.issue("s1", "db")
    assert token is not None and token.reveal() == "rotated"


def test_issue_validates_names() -> None:
    broker = CredentialBroker()
    with pytest.raises(ValueError, match="session_id must be a non-empty string"):
        broker.issue("", "db")
    with pytest.raises(ValueError, match="tool must be a non-empty string"):
        broker.issue("s1", "")


def test_repr_shows_names_and_counts_only() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    broker.register("api", provider=functools.partial(str, VALUE))  # a repr that would leak
    broker.issue("s1", "db")
    broker.issue("s2", "api")
    assert repr(broker) == "CredentialBroker(tools=['api', 'db'], sessions=2, tokens=2)"
    assert str(broker) == repr(broker)


def test_broker_cannot_be_pickled_or_copied() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    for attempt in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="cannot be pickled or copied"):
            attempt(broker)


def test_concurrent_issue_tracks_every_token() -> None:
    broker = CredentialBroker()
    broker.register("db", VALUE)
    start = threading.Barrier(16)

    def worker() -> None:
        start.wait()
        for _ in range(50):
            broker.issue("s1", "db")

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(broker.issued("s1")) == 800
    assert broker.revoke_session("s1") == 800


def test_runtime_flow_issue_pass_scrub_revoke() -> None:
    """The sequence the runtime follows for a tool that declares ``credentials``."""
    broker = CredentialBroker()
    broker.register("fetch", VALUE)

    def fetch(url: str, credentials: ScopedToken | None) -> str:
        assert credentials is not None
        key = credentials.reveal("fetch")
        return f"GET {url} with Authorization: Bearer {key} -> 200"

    token = broker.issue("sess-9", "fetch")
    assert token is not None
    result = token.redact(fetch("https://api.example", credentials=token))
    assert result == "GET https://api.example with Authorization: Bearer [secret redacted] -> 200"
    try:
        fetch("again", credentials=token)
    except CredentialError as exc:
        message = token.redact(str(exc))
    assert "revealed 1 time(s)" in message
    broker.revoke_session("sess-9")
    assert token.revoked and broker.issued("sess-9") == []
