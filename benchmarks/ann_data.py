"""Data for benchmarks/ann.py: clustered synthetic vectors and real MiniLM SciFact embeddings.

Clustered vectors: ``clusters`` random unit centres plus isotropic noise of about the centre's
norm (cosine to the centre about 0.7), 384-d like all-MiniLM-L6-v2. Uniform noise is avoided on
purpose: no graph index finds neighbours in it (recall@10 < 0.1 for every library here).

SciFact: the BEIR SciFact corpus (5,183 abstracts, ../shared/data/scifact) cut into chunks by
semsearch's own text chunker and embedded once with semsearch's LocalEmbedder
(all-MiniLM-L6-v2); the 1,109 queries are embedded with ``embed_query``. The arrays are cached
as .npy under ``SEMSEARCH_BENCH_CACHE`` (default ~/.cache/semsearch-bench), never in the repo.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
CACHE = Path(os.environ.get("SEMSEARCH_BENCH_CACHE", Path.home() / ".cache" / "semsearch-bench"))


def clustered(n: int, queries: int, dim: int = 384, clusters: int = 1000, seed: int = 0):
    """(float32[n, dim], float32[queries, dim]) unit vectors from the same clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = []
    for m in (n, queries):
        x = np.empty((m, dim), np.float32)
        for start in range(0, m, 100_000):  # bounded temporaries at 1M
            size = min(100_000, m - start)
            part = centres[rng.integers(0, clusters, size)]
            part += rng.standard_normal((size, dim)).astype(np.float32) / np.sqrt(dim)
            x[start : start + size] = part / np.linalg.norm(part, axis=1, keepdims=True)
        out.append(x)
    return out[0], out[1]


def scifact() -> tuple[np.ndarray, np.ndarray]:
    """(float32[chunks, 384], float32[1109, 384]) MiniLM vectors of SciFact, cached as .npy."""
    docs_path, queries_path = CACHE / "scifact_chunks.npy", CACHE / "scifact_queries.npy"
    if docs_path.exists() and queries_path.exists():
        return np.load(docs_path), np.load(queries_path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from semsearch.chunking import chunk_text, embedding_text
    from semsearch.embedders.local import LocalEmbedder

    embedder = LocalEmbedder()
    texts = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            text = f"{doc['title']}\n\n{doc['text']}".strip()
            for span in chunk_text(text, embedder, embedder.max_tokens):
                texts.append(embedding_text(span.text, span.heading_path))
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f]
    started = time.perf_counter()
    docs = np.asarray(embedder.embed_documents(texts), np.float32)
    qs = np.stack([np.asarray(embedder.embed_query(q), np.float32) for q in queries])
    print(f"embedded {len(texts)} SciFact chunks + {len(queries)} queries in "
          f"{time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(docs_path, docs)
    np.save(queries_path, qs)
    return docs, qs


if __name__ == "__main__":
    d, q = scifact()
    print(d.shape, q.shape)
