"""Index files forged with a valid digest: whatever the payload (malformed JSON, wrong shapes,
wrong sizes, another tenant's documents, vectors that are not numbers), loading it raises
IndexRefused with what is wrong and what to do — never a JSONDecodeError, a KeyError or a
numpy error from deep inside, and never an index that half works."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.knowledge.bm25 import BM25Retriever
from tether.knowledge.index import FORMAT, IndexRefused, read_index

HEADER: dict[str, Any] = {"format": FORMAT, "kind": "bm25", "tenant_id": "acme", "model": None,
                          "documents": 1, "documents_bytes": 0, "dim": None}
DOC = ["faq#1", "Refunds take 14 days.", "faq.md", "acme"]


def forge(path: Path, header: Any, docs: bytes, vectors: bytes = b"", *,
          raw_header: bytes | None = None, sized: bool = True) -> Path:
    """An index file with any header and payload, and the sha256 that matches them (what
    someone who can write the directory makes). ``sized``: documents_bytes is made right."""
    if sized and isinstance(header, dict) and "documents_bytes" in header:
        header = {**header, "documents_bytes": len(docs)}
    line = raw_header if raw_header is not None else json.dumps(header).encode()
    content = line + b"\n" + docs + vectors
    path.write_bytes(f"{FORMAT} {hashlib.sha256(content).hexdigest()}\n".encode() + content)
    return path


def docs_of(*rows: Any) -> bytes:
    return json.dumps(list(rows)).encode()


MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("header is not JSON", {"raw_header": b"{not json"}),
    ("header is not UTF-8", {"raw_header": b"\xff\xfe"}),
    ("header is a list", {"header": ["bm25", "acme"]}),
    ("header lacks documents_bytes", {"header": {k: v for k, v in HEADER.items()
                                                 if k != "documents_bytes"}}),
    ("header lacks dim", {"header": {k: v for k, v in HEADER.items() if k != "dim"}}),
    ("another format", {"header": {**HEADER, "format": "tether-index/9"}}),
    ("documents_bytes beyond the file", {"header": {**HEADER, "documents_bytes": 10 ** 6},
                                         "sized": False}),
    ("documents_bytes negative", {"header": {**HEADER, "documents_bytes": -3},
                                  "sized": False}),
    ("documents_bytes a string", {"header": {**HEADER, "documents_bytes": "12"},
                                  "sized": False}),
    ("documents count a bool", {"header": {**HEADER, "documents": True}}),
    ("documents count wrong", {"header": {**HEADER, "documents": 2}}),
    ("documents are not JSON", {"docs": b"[[\"faq#1\", "}),
    ("documents are not UTF-8", {"docs": b"[[\"\xff\"]]"}),
    ("documents nested too deep", {"docs": b"[" * 100_000 + b"]" * 100_000}),
    ("documents are an object", {"docs": b"{\"faq#1\": \"x\"}"}),
    ("a document is a string", {"docs": docs_of("faq#1")}),
    ("a document has three fields", {"docs": docs_of(DOC[:3])}),
    ("a document id is a number", {"docs": docs_of([7, *DOC[1:]])}),
    ("a document id is empty", {"docs": docs_of(["", *DOC[1:]])}),
    ("a document text is null", {"docs": docs_of([DOC[0], None, *DOC[2:]])}),
    ("a document's tenant is a number", {"docs": docs_of([*DOC[:3], 5])}),
    ("another tenant's document", {"docs": docs_of([*DOC[:3], "globex"])}),
    ("two documents share an id", {"header": {**HEADER, "documents": 2},
                                   "docs": docs_of(DOC, DOC)}),
    ("bytes after the documents", {"vectors": b"\x00\x01"}),
]


@pytest.mark.parametrize("case", [c for _, c in MALFORMED], ids=[n for n, _ in MALFORMED])
def test_hostile_a_forged_index_with_a_valid_digest_is_refused(
        case: dict[str, Any], tmp_path: Path) -> None:
    path = forge(tmp_path / "faq.index", case.get("header", HEADER),
                 case.get("docs", docs_of(DOC)), case.get("vectors", b""),
                 raw_header=case.get("raw_header"), sized=case.get("sized", True))
    with pytest.raises(IndexRefused, match=r"faq\.index.*rebuild it from the corpus"):
        BM25Retriever.load(path, tenant_id="acme")


def test_the_forger_is_right_about_a_well_formed_file(tmp_path: Path) -> None:
    """The fixture makes files the reader accepts when nothing is wrong in them."""
    path = forge(tmp_path / "faq.index", HEADER, docs_of(DOC))
    assert [d.doc_id for d in BM25Retriever.load(path, tenant_id="acme").documents] == ["faq#1"]


DENSE = {**HEADER, "kind": "dense", "model": "minilm", "dim": 2}
VECTORS: list[tuple[str, dict[str, Any], bytes]] = [
    ("too few vector bytes", DENSE, struct.pack("<f", 1.0)),
    ("too many vector bytes", DENSE, struct.pack("<3f", 1.0, 0.0, 0.0)),
    ("a ragged vector byte", DENSE, struct.pack("<2f", 1.0, 0.0) + b"\x00"),
    ("a vector that is not a number", DENSE, struct.pack("<2f", float("nan"), 0.0)),
    ("an infinite vector", DENSE, struct.pack("<2f", float("inf"), 0.0)),
    ("dim zero", {**DENSE, "dim": 0}, b""),
    ("dim negative", {**DENSE, "dim": -2}, struct.pack("<2f", 1.0, 0.0)),
    ("dim a float", {**DENSE, "dim": 2.0}, struct.pack("<2f", 1.0, 0.0)),
]


@pytest.mark.parametrize(("header", "vectors"), [(h, v) for _, h, v in VECTORS],
                         ids=[n for n, _, _ in VECTORS])
def test_hostile_forged_vectors_are_refused(header: dict[str, Any], vectors: bytes,
                                            tmp_path: Path) -> None:
    path = forge(tmp_path / "faq.index", header, docs_of(DOC), vectors)
    with pytest.raises(IndexRefused, match=r"faq\.index.*rebuild it from the corpus"):
        read_index(path, kind="dense", tenant_id="acme", model="minilm")
    good = forge(tmp_path / "good.index", DENSE, docs_of(DOC), struct.pack("<2f", 0.6, 0.8))
    stored = read_index(good, kind="dense", tenant_id="acme", model="minilm")
    assert stored.embeddings is not None and stored.embeddings.shape == (1, 2)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 10 ** 7) | st.floats()
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
FIELD = st.sampled_from(sorted(HEADER))


@settings(max_examples=200, deadline=None)
@given(header=st.one_of(JSON, st.builds(lambda k, v: {**HEADER, k: v}, FIELD, JSON),
                        st.builds(lambda k: {x: y for x, y in HEADER.items() if x != k}, FIELD)),
       docs=st.one_of(st.binary(max_size=40), JSON.map(lambda v: json.dumps(v).encode()),
                      st.lists(st.lists(JSON, max_size=5), max_size=3).map(
                          lambda v: json.dumps(v).encode())),
       vectors=st.binary(max_size=24), sized=st.booleans())
def test_hostile_any_forged_payload_is_refused_or_sound(header: Any, docs: bytes,
                                                         vectors: bytes, sized: bool,
                                                         tmp_path_factory: Any) -> None:
    path = forge(tmp_path_factory.mktemp("forged") / "x.index", header, docs, vectors,
                 sized=sized)
    for kind, model in (("bm25", None), ("dense", "minilm")):
        try:
            stored = read_index(path, kind=kind, tenant_id="acme", model=model)
        except IndexRefused as refused:
            assert "rebuild" in str(refused)
            continue
        # what was accepted is a sound index of acme: usable as it is
        assert all(d.tenant_id in (None, "acme") for d in stored.documents)
        if kind == "bm25":
            BM25Retriever(stored.documents, tenant_id="acme").retrieve("refunds", 3)
        else:
            assert stored.embeddings is not None
            assert stored.embeddings.shape[0] == len(stored.documents)
