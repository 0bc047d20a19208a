"""Calibrate an embedder's default ``min_score`` on BEIR SciFact's judged pairs.

Usage (from the project root; needs the cached SciFact index of ``semsearch eval`` or
``benchmarks/beir.py``, copied anywhere):

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/thresholds.py ../shared/data/scifact INDEX.embed.db [SPEC]

For every test query the query is embedded with ``SPEC`` (default: the packaged model) and
scored against every document (a document's score is its best chunk's cosine, as search sees
it). Printed per threshold t: the share of judged relevant (query, document) pairs scoring >= t
(recall of judged pairs) and the precision of the top-10 hits that pass t. The calibrated
default is the highest t (in steps of 0.05) that keeps at least 95% of the judged pairs: a floor
that drops noise without dropping answers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from semsearch.embedders.registry import resolve_embedder
from semsearch.embedders.thresholds import default_min_score
from semsearch.evaluation import load_beir

KEEP = 0.95


def doc_vectors(index: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(record ids, float32[n, dim] chunk vectors, owner index per chunk) of the index's
    ``beir`` collection, read through the store (the vectors' layout is the store's own)."""
    import semsearch
    from semsearch.evaluation import COLLECTION

    with semsearch.connect(index) as db:
        coll = db.collection(COLLECTION, strict_model=False)
        ids = sorted(coll.store.list_ids(COLLECTION))
        by_record = coll.store.chunk_vectors(COLLECTION, ids)  # type: ignore[attr-defined]
    vecs, owner = [], []
    for n, record_id in enumerate(ids):
        for vector in by_record.get(record_id, []):
            if vector is not None:
                vecs.append(vector)
                owner.append(n)
    return ids, np.stack(vecs), np.array(owner)


def main(beir_dir: str, index: str, spec: str | None) -> None:
    data = load_beir(beir_dir)
    ids, vecs, owner = doc_vectors(index)
    embedder = resolve_embedder(spec)
    qids = [q for q in data.queries if q in data.qrels]
    queries = np.stack([embedder.embed_query(data.queries[q]) for q in qids])
    chunk_scores = queries @ vecs.T
    scores = np.full((len(qids), len(ids)), -1.0, dtype=np.float32)
    for n in range(len(qids)):
        np.maximum.at(scores[n], owner, chunk_scores[n])
    pos = {i: n for n, i in enumerate(ids)}
    judged = np.array(
        [
            scores[n, pos[d]]
            for n, q in enumerate(qids)
            for d, g in data.qrels[q].items()
            if g > 0 and d in pos
        ]
    )
    top = np.argsort(-scores, axis=1)[:, :10]
    print(f"model {embedder.model_id}: {len(qids)} queries, {len(judged)} judged relevant pairs")
    print(
        "judged-pair cosine percentiles 5/10/25/50:",
        " ".join(f"{np.percentile(judged, p):.3f}" for p in (5, 10, 25, 50)),
    )
    best = None
    for t in np.arange(0.0, 0.81, 0.05):
        kept = float((judged >= t).mean())
        hits = [(n, j) for n in range(len(qids)) for j in top[n] if scores[n, j] >= t]
        rel = sum(1 for n, j in hits if data.qrels[qids[n]].get(ids[j], 0) > 0)
        prec = rel / len(hits) if hits else float("nan")
        print(f"t={t:.2f} judged kept {kept:.3f}  top-10 hits passing {len(hits):5d}  P {prec:.3f}")
        if kept >= KEEP:
            best = round(float(t), 2)
    print(f"calibrated default (highest t keeping >= {KEEP:.0%} of judged pairs): {best}")
    current = default_min_score(embedder)
    print(
        f"the model's default now, {current}: judged kept {float((judged >= current).mean()):.3f}"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
