"""Signed notes, keys and checkpoints: the C2SP formats checked against the ecosystem's own
vectors, key files refused when unsafe, checkpoints that parse back exactly, and every store
keeping what it is given."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.cli import main
from tether.journal import checkpoint
from tether.journal.note import (
    COSIGNATURE_V1,
    KeyFileError,
    NoteInvalid,
    generate,
    open_note,
    parse_skey,
    parse_vkey,
    read_private,
    read_public,
    signing_key,
    write_pair,
)
from tether.store.base import Store

# golang.org/x/mod/sumdb/note's example: its private key, public key and signed note
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = ("If you think cryptography is the answer to your problem,\n"
           "then you don't know what your problem is.\n")
GO_NOTE = (GO_TEXT + "\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1"
           "FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n")

# a real CT log checkpoint with its log's signature and a real witness's cosignature/v1
# (as transparency-dev's tests carry it), and the two public keys
CT_CHECKPOINT = """arche2025h1.staging.ct.transparency.dev
1432088532
U7WM79jrzyhGZ5/GUBTpM7NzwdyfFx61t3RovgcC4Ro=

\u2014 arche2025h1.staging.ct.transparency.dev zTM8sQAAAZ5W0WdjBAMARjBEAiBjW5IQf9pvsYLfQFX6hoGREPMHbdQ3urbllzalApkptQIgIpwtEroeW2BXaHAI4kJXFbon5Ch9MNL5zRNZ55lvGt0=
\u2014 arche2025h1.staging.ct.transparency.dev ui8GwCF1+kWqZrxGdhj4aX3gcw7XUlXQQabg/27lefwhUkzbC3NygNI75MdhL1bfTW9g8Ei59RA23oHP7Ry1k3ZFWwQ=
\u2014 remora.n621.de 2net5wAAAABqEiEgPlfF3V06o0Y+fHM+J5J9s27wgxxcOVSpZ/2g/KSiXCg9DEZI+aVCIobWX9sXTynk5XeU/zZ0WBxtqB0DrAWfBw==
"""  # noqa: E501
CT_LOG = ("arche2025h1.staging.ct.transparency.dev+ba2f06c0+"
          "AU0vHmlGCS/PdN8b2OaGmKprLI8HKM+dJ472xgFYh15f")
CT_WITNESS = "remora.n621.de+da77ade7+BOvN63jn/bLvkieywe8R6UYAtVtNbZpXh34x7onlmtw2"


def test_signing_reproduces_the_go_reference_note_byte_for_byte() -> None:
    signer = parse_skey(GO_SKEY)
    assert signer.verifier().vkey() == GO_VKEY
    assert GO_TEXT + "\n" + signer.sign(GO_TEXT) == GO_NOTE
    text, signed = open_note(GO_NOTE, [parse_vkey(GO_VKEY)])
    assert text == GO_TEXT and signed[0].verifier.name == "PeterNeumann"
    assert "AYEKFALV" not in repr(signer)  # the private key never shows in a repr


def test_a_real_witness_cosignature_verifies_and_a_changed_checkpoint_does_not() -> None:
    text, signed = open_note(CT_CHECKPOINT, [parse_vkey(CT_LOG), parse_vkey(CT_WITNESS)])
    assert text.startswith("arche2025h1.staging.ct.transparency.dev\n1432088532\n")
    witness = [s for s in signed if s.verifier.kind == COSIGNATURE_V1]
    assert witness[0].verifier.name == "remora.n621.de" and witness[0].timestamp == 1779573024
    with pytest.raises(NoteInvalid, match="does not verify"):
        open_note(CT_CHECKPOINT.replace("1432088532", "1432088531"), [parse_vkey(CT_WITNESS)])


def test_unknown_keys_are_ignored_and_a_note_signed_by_none_is_refused() -> None:
    other = generate("example.com/other")
    note = GO_NOTE + other.sign(GO_TEXT)  # a second signature by a key the reader does not know
    assert open_note(note, [parse_vkey(GO_VKEY)])[1][0].verifier.name == "PeterNeumann"
    with pytest.raises(NoteInvalid, match="no signature of a known key"):
        open_note(GO_NOTE, [other.verifier()])
    forged = GO_NOTE.replace("x08go/ZJ", "x08go/ZK")  # the known key's signature, broken
    with pytest.raises(NoteInvalid, match="does not verify"):
        open_note(forged, [parse_vkey(GO_VKEY)])


def test_a_vkey_whose_id_does_not_match_its_key_is_refused() -> None:
    with pytest.raises(KeyFileError, match="does not match"):
        parse_vkey(GO_VKEY.replace("c74f20a3", "c74f20a4"))
    with pytest.raises(KeyFileError, match="not a public key"):
        parse_vkey("PeterNeumann")


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stem = tmp_path / "prod"
    assert main(["audit", "keygen", "--name", "example.com/prod", "--out", str(stem)]) == 0
    assert stat.S_IMODE(os.stat(f"{stem}.key").st_mode) == 0o600
    signer, public = read_private(f"{stem}.key"), read_public(f"{stem}.pub")
    assert signer.verifier() == public and signer.name == "example.com/prod"
    assert main(["audit", "keygen", "--name", "example.com/prod", "--out", str(stem)]) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert read_private(f"{stem}.key") == signer  # the first key is still there


def test_a_key_file_others_may_read_or_a_missing_one_is_refused_with_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    private, _ = write_pair(generate("example.com/prod"), tmp_path / "prod")
    os.chmod(private, 0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        read_private(private)
    monkeypatch.setenv("TETHER_SIGNING_KEY", str(private))
    with pytest.raises(KeyFileError, match="readable by others"):
        signing_key()
    assert main(["audit", "checkpoint", "--store", "memory://"]) == 2
    assert "chmod 600" in capsys.readouterr().err
    monkeypatch.setenv("TETHER_SIGNING_KEY", str(tmp_path / "absent.key"))
    assert main(["audit", "checkpoint", "--store", "memory://"]) == 2
    assert "tether audit keygen" in capsys.readouterr().err
    monkeypatch.delenv("TETHER_SIGNING_KEY")
    assert signing_key() is None
    assert main(["audit", "checkpoint", "--store", "memory://"]) == 2
    assert "no signing key" in capsys.readouterr().err
    assert main(["audit", "verify", "--store", "memory://", "--public-key",
                 str(tmp_path / "absent.pub")]) == 2
    assert "cannot read the public key" in capsys.readouterr().err
    assert main(["audit", "verify", "--store", "memory://", "--witness", "http://x"]) == 2
    assert "give the operator's --public-key too" in capsys.readouterr().err


heads_strategy = st.lists(st.tuples(st.integers(0, 10**9), st.text("0123456789abcdef", min_size=64,
                                                                    max_size=64)),
                          min_size=1, max_size=16).map(tuple)


@given(heads_strategy, st.from_regex(r"[a-z][a-z0-9./-]{0,30}", fullmatch=True))
def test_a_checkpoint_parses_back_to_itself(heads: checkpoint.Heads, origin: str) -> None:
    point = checkpoint.checkpoint_of(origin, heads)
    assert checkpoint.parse(point.text()) == point
    assert point.size == sum(c for c, _ in heads)


@given(heads_strategy, st.integers(0, 3), st.integers(1, 10**6))
def test_a_checkpoint_with_any_line_changed_does_not_parse_as_the_same(
        heads: checkpoint.Heads, line: int, delta: int) -> None:
    text = checkpoint.checkpoint_of("example.com/prod", heads).text()
    lines = text.split("\n")
    if line == 1:
        lines[1] = str(int(lines[1]) + delta)
    elif line == 3:
        lines[3] += f" {delta}"
    else:
        lines[line] += "x"
    changed = "\n".join(lines)
    try:
        parsed = checkpoint.parse(changed)
    except NoteInvalid:
        return
    assert parsed != checkpoint.parse(text)


def test_every_store_keeps_its_checkpoints_as_given(store: Store) -> None:
    assert store.checkpoints() == []
    note = "example.com/prod\n0\nAAAA\n\n\u2014 example.com/prod AAAA\n"
    store.put_checkpoint(0, note)
    store.put_checkpoint(7, "second\n")
    kept = store.checkpoints()
    assert [(c.size, c.note) for c in kept] == [(0, note), (7, "second\n")]
    assert kept[0].created_at <= kept[1].created_at


@given(st.integers(1, 16), st.lists(st.integers(0, 15), max_size=60), st.data())
def test_a_proof_from_any_earlier_checkpoint_reaches_the_later_one(
        lanes: int, picks: list[int], data: st.DataObject) -> None:
    """What the witness relies on: hashing each lane's bodies since an earlier checkpoint onto
    its heads gives exactly the later checkpoint, whatever the lanes' interleaving."""
    from tether.store.anchor_chain import Anchor, lane_genesis, seal_anchor

    heads: dict[int, str] = {}
    anchors = []
    for n, pick in enumerate(picks):
        lane = pick % lanes
        prev = heads.get(lane, lane_genesis(lane))
        text, digest, _ = seal_anchor(prev, {"session_id": "s", "seq": n}, None)
        anchors.append(Anchor(n + 1, "head", "s", text, prev, digest, None, lane))
        heads[lane] = digest
    cut = data.draw(st.integers(0, len(anchors)))
    earlier = checkpoint.current(anchors[:cut], lanes)
    proved = checkpoint.extend(earlier, checkpoint.proof(anchors, lanes,
                                                         [c for c, _ in earlier]))
    assert proved == checkpoint.current(anchors, lanes)
    assert all(head == (anchors_of[-1].hash if anchors_of else lane_genesis(lane))
               for lane, ((_, head), anchors_of) in enumerate(zip(
                   proved, [[a for a in anchors if a.lane == k] for k in range(lanes)],
                   strict=True)))
