"""``tether audit keygen|checkpoint`` and ``verify --public-key``: signed records an outsider
verifies with no secret.

Why a module of its own: signing is an option beside the chain and the HMAC (``cli/audit.py``
runs them), with its own keys, its own commands and its own report — the assurance level a
verify reached, which ``tether.journal.signed`` states.

Decision: the private key lives in a file outside the database, named by ``TETHER_SIGNING_KEY``
(or ``--key``), refused when others may read it; verify takes only public keys (``--public-key``
for the operator's, ``--witness-key`` for each witness's) and checkpoints from outside the store
(``--checkpoint FILE``, ``--witness URL``), so the verifying process holds no secret at all.
Exit codes as verify's: 1 a finding (a checkpoint the anchors do not reach, a forged one, none
signed); 2 a key or witness that cannot be read or reached.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tether.cli.common import (
    EXIT_FINDING,
    EXIT_OK,
    EXIT_USAGE,
    add_store_option,
    error,
    open_existing,
)

if TYPE_CHECKING:
    from tether.journal.note import Verifier
    from tether.store.anchor_chain import Anchor
    from tether.store.base import Store
    from tether.types import Event


def add(sub: Any) -> None:
    keygen = sub.add_parser(
        "keygen", help="create an Ed25519 key pair for signing (or witnessing)",
        description="Write NAME.key (the private key, mode 0600; keep it outside the database "
        "and point TETHER_SIGNING_KEY at it) and NAME.pub (the public key, a C2SP vkey, for "
        "whoever verifies). Never overwrites a key.")
    keygen.add_argument("--name", required=True, help="the key's name, a schema-less URL such "
                        "as example.com/tether/prod (a checkpoint's origin line)")
    keygen.add_argument("--out", metavar="STEM", help="write STEM.key and STEM.pub (default: "
                        "the name's last part)")
    keygen.add_argument("--witness", action="store_true",
                        help="a witness's cosigning key (C2SP tlog-cosignature, type 0x04)")
    keygen.set_defaults(run=run_keygen)

    point = sub.add_parser(
        "checkpoint", help="sign a checkpoint of the anchor chain (and have witnesses cosign)",
        description="Sign the store's anchor chain as it stands with TETHER_SIGNING_KEY (a "
        "C2SP checkpoint), ask each --witness to cosign it, and keep it in the store. Run it "
        "after each batch, or from cron: what a checkpoint covers, no later cut can hide.")
    add_store_option(point)
    point.add_argument("--key", metavar="FILE", help="the private key (default: the file "
                       "TETHER_SIGNING_KEY names)")
    point.add_argument("--witness", metavar="URL", action="append", default=[],
                       help="a `tether witness` to cosign the checkpoint (repeatable)")
    point.add_argument("-o", "--output", metavar="FILE", help="also write the signed note here")
    point.set_defaults(run=run_checkpoint)


def add_verify_options(verify: argparse.ArgumentParser) -> None:
    verify.add_argument("--public-key", metavar="FILE",
                        help="the operator's public key (.pub from `tether audit keygen`): "
                        "check the store's signed checkpoints, or an export's signed manifest, "
                        "with no secret")
    verify.add_argument("--witness-key", metavar="FILE", action="append", default=[],
                        help="a witness's public key, to count its cosignatures (repeatable)")
    verify.add_argument("--checkpoint", metavar="FILE", action="append", default=[],
                        help="a signed checkpoint kept outside the store (repeatable)")
    verify.add_argument("--witness", metavar="URL", action="append", default=[],
                        help="bring in this witness's newest cosigned checkpoint (repeatable)")


def run_keygen(args: argparse.Namespace) -> int:
    from tether.journal.note import COSIGNATURE_V1, ED25519, KeyFileError, generate, write_pair

    stem = args.out or args.name.rstrip("/").rsplit("/", 1)[-1]
    try:
        private, public = write_pair(generate(args.name, COSIGNATURE_V1 if args.witness
                                              else ED25519), stem)
    except KeyFileError as exc:
        error(str(exc))
        return EXIT_USAGE
    print(f"wrote {private} (private: keep it outside the database) and {public} (public)")
    return EXIT_OK


def run_checkpoint(args: argparse.Namespace) -> int:
    from tether.journal.note import KeyFileError, read_private, signing_key
    from tether.serve.witness import checkpoint_store

    try:
        signer = read_private(args.key) if args.key else signing_key()
    except KeyFileError as exc:
        error(str(exc))
        return EXIT_USAGE
    if signer is None:
        error("no signing key: set TETHER_SIGNING_KEY to the .key file `tether audit keygen` "
              "wrote, or give --key")
        return EXIT_USAGE
    store = open_existing(args.store)
    if store is None:
        return EXIT_USAGE
    try:
        note, refused = checkpoint_store(store, signer, args.witness)
    finally:
        store.close()
    if args.output:
        Path(args.output).write_text(note, encoding="utf-8")
    print(note, end="")
    for reason in refused:
        error(reason)
    return EXIT_FINDING if refused else EXIT_OK


def export_jsonl(store: Store, ids: Sequence[str], out: IO[str]) -> int:
    """Write the sessions as JSON lines (``write_jsonl``), then, with a signing key, the
    signed manifest; the number of events written."""
    from tether.journal.note import signing_key
    from tether.journal.views.export import write_jsonl
    from tether.journal.views.signed_export import manifest_line

    signer = signing_key()
    count, written = 0, []
    for sid in ids:
        events = store.read(sid)
        count += write_jsonl(events, out)
        if events:
            written.append((sid, len(events), events[-1].hash))
    if signer is not None:
        out.write(manifest_line(signer, written))
    return count


def verify_keys(args: argparse.Namespace) -> tuple[Verifier, list[Verifier]] | None:
    from tether.journal.note import KeyFileError, read_public

    try:
        return read_public(args.public_key), [read_public(p) for p in args.witness_key]
    except KeyFileError as exc:
        error(str(exc))
        return None


def report_signed(store: Store, anchors: Sequence[Anchor], args: argparse.Namespace) -> int:
    """Check the store against its signed checkpoints and those given from outside; print the
    assurance reached."""
    from tether.journal.signed import check_signed
    from tether.serve.witness import WitnessRefused, newest
    from tether.store.anchor_chain import audit_key

    hmac = audit_key() is not None
    if args.public_key is None:
        print(f"assurance: {'HMAC with the shared audit key' if hmac else 'chain only'} (give "
              "--public-key to check signed checkpoints)")
        return EXIT_OK
    keys = verify_keys(args)
    if keys is None:
        return EXIT_USAGE
    operator, witnesses = keys
    notes = [(f"the store's checkpoint {n}", c.note)
             for n, c in enumerate(store.checkpoints(), start=1)]
    try:
        notes += [(f"the checkpoint file {p}", Path(p).read_text(encoding="utf-8"))
                  for p in args.checkpoint]
        for url in args.witness:
            seen = newest(url, operator.name)
            if seen is not None:
                notes.append((f"the witness at {url}", str(seen["note"])))
    except (OSError, WitnessRefused) as exc:
        error(f"cannot read a checkpoint from outside the store: {exc}")
        return EXIT_USAGE
    findings, assurance = check_signed(anchors, store.anchor_lanes(), notes, operator,
                                       witnesses, hmac)
    for finding in findings:
        print(f"BROKEN  {finding}")
    print(f"assurance: {assurance.level()}")
    return EXIT_FINDING if findings else EXIT_OK


def manifest_problems(path: str, args: argparse.Namespace,
                      sessions: Mapping[str, Sequence[Event]],
                      only: str | None) -> dict[str, str] | None:
    """Per session (``""``: the file), what the signed manifest does not vouch for; empty
    without ``--public-key``; None when the key cannot be read (reported)."""
    from tether.journal.views.signed_export import check_manifest, find_manifest

    if args.public_key is None:
        return {}
    keys = verify_keys(args)
    if keys is None:
        return None
    args.public_key_name = keys[0].name
    with open(path, encoding="utf-8") as fh:
        note = find_manifest(fh)
    return check_manifest(note, keys[0], sessions, only)


def report_manifest(problems: Mapping[str, str], sessions: Mapping[str, Sequence[Event]],
                    args: argparse.Namespace) -> int:
    """Print what concerns the file as a whole, or a removed session; the assurance."""
    for sid, problem in problems.items():
        if sid not in sessions:
            where = f"session {sid}: " if sid else ""
            print(f"BROKEN  {where}{problem}")
    if args.public_key is None:
        print("assurance: chain and trailers only (give --public-key to check the signed "
              "manifest)")
    elif not problems:
        print(f"assurance: signed by operator key {args.public_key_name} (the export's "
              "manifest vouches for every session in it)")
    missing = [sid for sid in problems if sid not in sessions]
    return EXIT_FINDING if missing else EXIT_OK
