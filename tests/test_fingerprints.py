"""Masked values known only by their keyed fingerprint are blanked exactly as their text would
be; a loaded session that cannot hide what it hid before is not loaded; the journal holds no
masked value's text, only its length and keyed digest."""

from __future__ import annotations

import hmac
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import secret_resume_app as app
from tether.journal.chain import Journal
from tether.journal.fingerprints import FINGERPRINT_TYPE, Fingerprints, redaction_key
from tether.journal.redaction import HiddenValues
from tether.runtime.provenance.recalled import HiddenNotRecalled
from tether.store.memory import MemoryStore
from tether.store.sqlite import SQLiteStore

KEY = b"k" * 32
values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                 max_size=12)
around = st.text(st.sampled_from("ab1 ,._-é7"), max_size=8)


def _known(value: str, key: bytes = KEY) -> Fingerprints:
    made = Fingerprints(key)
    entry = made.remember(value)
    assert entry is not None
    loaded = Fingerprints(key)
    loaded.recall(entry)
    return loaded


@given(values, around, around, around)
def test_a_fingerprint_blanks_exactly_what_the_value_itself_blanks(
        value: str, before: str, between: str, after: str) -> None:
    text = f"{before}{value}{between}{value}{after}"
    known = _known(value)
    for tokens in (True, False):
        assert known.blank(text, tokens=tokens) == HiddenValues([value]).blank(text,
                                                                               tokens=tokens)


@pytest.mark.parametrize(("value", "text", "blanked"), [
    ("4111", "card4111x and 4111", "card[masked]x and [masked]"),  # 4 chars: inside a word too
    ("737", "cvv 737; 1737 v7 737.5", "cvv [masked]; 1737 v7 737.5"),  # short: whole tokens
    ("4929120945581307", "n=4929120945581307.", "n=[masked]."),
])
def test_fixed_cases(value: str, text: str, blanked: str) -> None:
    assert _known(value).blank(text) == blanked


def test_a_number_sent_back_as_a_number_is_known() -> None:
    known = _known("4929120945581307")
    assert known.hides_number(4929120945581307) and not known.hides_number(4929120945581308)


def test_another_key_knows_nothing_and_says_so() -> None:
    entry = Fingerprints(KEY).remember("4111")
    assert entry is not None
    with pytest.raises(LookupError, match="TETHER_REDACTION_KEY"):
        Fingerprints(b"other" * 8).recall(entry)


def _paused(tmp_path: Path) -> tuple[SQLiteStore, str]:
    store = SQLiteStore(tmp_path / "j.db")
    session = app.build(store).session(app.TASK)
    assert session.run().stop_reason.value == "needs_approval"
    return store, session.id


def test_the_journal_holds_the_fingerprint_not_the_value(tmp_path: Path) -> None:
    store, sid = _paused(tmp_path)
    (hidden,) = [e for e in store.read(sid) if e.type == FINGERPRINT_TYPE]
    assert set(hidden.data) == {"key", "chars", "shape", "digest"}
    assert hidden.data["chars"] == len(app.CARD) and app.CARD not in json.dumps(hidden.data)


def test_a_recipe_whose_broker_lacks_the_credential_cannot_load_the_session(
        tmp_path: Path) -> None:
    store, sid = _paused(tmp_path)
    other = app.build(store)
    assert other.credentials is not None and other.credentials.unregister("fetch_invoice")
    with pytest.raises(HiddenNotRecalled, match="registers 'fetch_invoice'"):
        other.load(sid)
    app.build(store).load(sid)  # the recipe as it was loads it


def test_a_process_with_another_redaction_key_cannot_load_the_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_REDACTION_KEY", "the key it ran with")
    store, sid = _paused(tmp_path)
    monkeypatch.setenv("TETHER_REDACTION_KEY", "another key")
    with pytest.raises(HiddenNotRecalled, match="another redaction key"):
        app.build(store).load(sid)
    monkeypatch.setenv("TETHER_REDACTION_KEY", "the key it ran with")
    assert app.build(store).resume(sid).stop_reason.value == "needs_approval"


def test_a_fingerprint_is_never_blanked_by_the_value_it_fingerprints(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A masked value that happens to occur in its own digest (hex text, as ``"3e0a"`` can) must
    not be blanked out of the ``value.hidden`` event: the digest is no value's text, and a
    loaded session needs it whole."""
    monkeypatch.setenv("TETHER_REDACTION_KEY", "a fixed key")
    key = redaction_key()
    value = next(v for v in (f"{i:04x}" for i in range(1 << 16))
                 if v in hmac.digest(key, v.encode(), "sha256").hex())
    store = MemoryStore()
    journal = Journal("s1", store=store)
    journal.append("session.start", {"task": "t"})
    journal.redact(value)
    journal.flush()
    stored = store.read("s1")
    (hidden,) = [e for e in stored if e.type == FINGERPRINT_TYPE]
    assert value in hidden.data["digest"]
    loaded = Journal("s1", store=store, history=stored)
    loaded.recall(stored)
    loaded.append("tool.result", {"content": f"the code is {value}"})
    assert loaded.events()[-1].data["content"] == "the code is [masked]"


def test_the_key_file_is_made_once_and_shared_and_a_missing_place_says_what_to_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_REDACTION_KEY", raising=False)
    monkeypatch.delenv("TETHER_AUDIT_KEY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    first = redaction_key()
    assert redaction_key() == first and len(first) == 32
    made = tmp_path / "tether" / "redaction.key"
    assert made.stat().st_mode & 0o077 == 0  # the user's own
    monkeypatch.setenv("TETHER_AUDIT_KEY", "audit")
    assert redaction_key() not in (first, b"audit")  # derived from the audit key, not it
    monkeypatch.delenv("TETHER_AUDIT_KEY")
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "file"))  # no directory can be made
    with pytest.raises(OSError, match="set TETHER_REDACTION_KEY"):
        redaction_key()


def test_a_provider_that_fails_on_load_refuses_the_session_quoting_no_secret(
        tmp_path: Path) -> None:
    store, sid = _paused(tmp_path)
    other = app.build(store)
    assert other.credentials is not None
    other.credentials.unregister("fetch_invoice")

    def provider() -> str:
        raise RuntimeError(f"vault sealed; last key was {app.SECRET}")

    other.credentials.register("fetch_invoice", provider=provider)
    with pytest.raises(HiddenNotRecalled, match="could not be read again") as refused:
        other.load(sid)
    assert app.SECRET not in str(refused.value)
