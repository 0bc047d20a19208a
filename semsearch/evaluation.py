"""Retrieval evaluation on BEIR-format data sets: load, index (cached), run, score.

A BEIR folder (Thakur et al. 2021, "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of
Information Retrieval Models") holds ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``,
``score``, with a header line). Each document becomes one record whose text is
``title + " " + text`` (BEIR's own convention for dense models); hits are record-level (one per
document, its best chunk), so the evaluation scores documents.

The index is cached in a SQLite file named after the corpus file's sha256 and the embedder's
model id, so a second run reuses every vector. Metrics come from trec_eval through
``pytrec-eval-terrier`` (nDCG@10, recall@100, MRR@10); only the mean over queries is ours.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from semsearch.collection import Collection
from semsearch.embedders.base import Embedder
from semsearch.errors import InvalidQuery
from semsearch.rerank.stage import RerankPlan
from semsearch.schema import Field, Schema

__all__ = [
    "COLLECTION",
    "DEFAULT_MODES",
    "RECALL_DEPTH",
    "BeirDataset",
    "EvalReport",
    "InvalidDataset",
    "MinScore",
    "ModeReport",
    "check_args",
    "index_path",
    "load_beir",
    "open_index",
    "run_eval",
    "run_mode",
    "score_run",
]

#: Modes evaluated when none are named.
DEFAULT_MODES = ("keyword", "semantic", "hybrid")
#: trec_eval measure names asked of pytrec_eval, and the keys our reports use for them.
_MEASURES = {"ndcg_cut.10": "ndcg_cut_10", "recall.100": "recall_100"}
COLLECTION = "beir"
_SCHEMA = Schema((Field("title", "str"),))

#: A search's ``min_score``: ``"default"`` (each mode's floor), a number, or None (no floor).
MinScore = float | Literal["default"] | None
#: A run: ``{query_id: {doc_id: score}}``, higher score is better (the trec_eval format).
Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


class InvalidDataset(InvalidQuery):
    """Raised when a folder is not a readable BEIR data set (missing file, bad line, no qrels)."""


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR data set, restricted to the queries judged in one split.

    Attributes:
        name: the folder's name (e.g. ``scifact``).
        split: the qrels split (e.g. ``test``).
        corpus: ``{doc_id: (title, text)}``.
        queries: ``{query_id: text}`` for the queries that have judgments in ``split``.
        qrels: ``{query_id: {doc_id: relevance}}``, relevance an int (> 0 is relevant).
        corpus_sha256: hex sha256 of ``corpus.jsonl``'s bytes; names the cached index.
    """

    name: str
    split: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: Qrels
    corpus_sha256: str


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidDataset(
                    f"{path.name} line {number} is not JSON: {exc.msg}",
                    hint="BEIR files hold one JSON object per line",
                ) from exc
            if not isinstance(row, dict) or "_id" not in row:
                raise InvalidDataset(
                    f"{path.name} line {number} has no '_id'", hint="each line needs an _id"
                )
            yield row


def _read_qrels(path: Path) -> Qrels:
    qrels: Qrels = {}
    with path.open(encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        for number, row in enumerate(rows, 1):
            if not row or (number == 1 and row[0] == "query-id"):
                continue
            try:
                qid, did, rel = row[0], row[1], int(row[2])
            except (IndexError, ValueError) as exc:
                raise InvalidDataset(
                    f"{path.name} line {number} is not 'query-id<TAB>corpus-id<TAB>score'",
                    hint="BEIR qrels are tab-separated with an integer score",
                ) from exc
            qrels.setdefault(qid, {})[did] = rel
    return qrels


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_beir(path: str | Path, split: str = "test") -> BeirDataset:
    """Read a BEIR folder: corpus, the queries judged in ``split``, and their qrels.

    Raises:
        InvalidDataset: a file is missing or malformed, or the split judges no known query.
    """
    root = Path(path)
    files = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"]
    for file in files:
        if not file.is_file():
            raise InvalidDataset(
                f"{file.name} not found in the BEIR folder {root.name!r}",
                hint="expected corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
            )
    corpus = {
        str(r["_id"]): (str(r.get("title") or ""), str(r.get("text") or ""))
        for r in _jsonl(files[0])
    }
    qrels = _read_qrels(files[2])
    all_queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(files[1])}
    queries = {q: all_queries[q] for q in sorted(qrels) if q in all_queries}
    if not queries:
        raise InvalidDataset(
            f"qrels/{split}.tsv judges none of the queries in queries.jsonl",
            hint="check the split name (e.g. --split test)",
        )
    qrels = {q: qrels[q] for q in queries}
    return BeirDataset(root.resolve().name, split, corpus, queries, qrels, _sha256(files[0]))


def index_path(dataset: BeirDataset, model_id: str, cache_dir: str | Path) -> Path:
    """The cached index file for a corpus and a model: ``<name>-<sha256[:16]>-<model>.embed.db``."""
    model = re.sub(r"[^A-Za-z0-9.]+", "-", model_id).strip("-")
    return (
        Path(cache_dir).expanduser()
        / f"{dataset.name}-{dataset.corpus_sha256[:16]}-{model}.embed.db"
    )


def _records(dataset: BeirDataset) -> Iterator[dict[str, Any]]:
    for doc_id, (title, text) in dataset.corpus.items():
        yield {"id": doc_id, "title": title, "text": f"{title} {text}".strip()}


def open_index(
    dataset: BeirDataset,
    embedder: Embedder,
    cache_dir: str | Path,
    *,
    embed: bool = True,
    progress: Callable[[int], None] | None = None,
    location: str | None = None,
) -> Collection:
    """Open the index of ``dataset`` for ``embedder`` (the cached SQLite file, or the ``beir``
    collection at ``location``: a PostgreSQL URL, a Milvus location, a SQLite file), building
    what is missing.

    Upserting an unchanged record is a hash lookup, so a complete index costs seconds; an
    interrupted build resumes where it stopped. With ``embed=False`` chunks are stored without
    vectors (enough for keyword mode); a later call with ``embed=True`` embeds them. At a
    ``location``, the cached file's chunk vectors are reused when it exists (same vectors on
    both stores, :mod:`semsearch.embedders.cached`); sentence windows go to the model.

    Args:
        progress: called with counts of chunks embedded, per embedder batch (they add up).
    Returns:
        The ``beir`` collection; close it with ``coll.store.close()``.
    """
    import semsearch

    path = index_path(dataset, embedder.model_id, cache_dir)
    if location is not None:
        embedder = _reusing(path, embedder) if embed else embedder
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    coll = semsearch.connect(location or path).collection(
        COLLECTION, schema=_SCHEMA, embedder=embedder
    )
    coll.upsert(_records(dataset), embed=embed, progress=progress)
    if embed:
        coll.reindex(progress=progress)
    return coll


def _reusing(cache: Path, embedder: Embedder) -> Embedder:
    """``embedder`` reusing the chunk vectors of the cached index ``cache``, if it has them."""
    import semsearch
    from semsearch.embedders.cached import TableEmbedder, vectors_by_text

    if not cache.is_file():
        return embedder
    with semsearch.connect(cache) as db:
        if COLLECTION not in db.collections():
            return embedder
        source = db.collection(COLLECTION, embedder=embedder, strict_model=True)
        return TableEmbedder(embedder, vectors_by_text(source))


@dataclass(frozen=True)
class ModeReport:
    """One mode's scores over a split.

    Attributes:
        mode: keyword, semantic or hybrid.
        ndcg_at_10, mrr_at_10: means over every judged query, in [0, 1], of the search a user
            runs (``limit`` hits, the default floor unless another ``min_score`` was asked).
        recall_at_100: mean recall of a second search of 100 hits (same ``min_score``).
        latency_p50_ms, latency_p95_ms: per-query wall time of the first search, ms.
        queries: number of queries.
        degraded: queries whose result was marked degraded (e.g. no keyword match in hybrid).
        empty: queries that came back with no hit (the floor found no confident match).
    """

    mode: str
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_p50_ms: float
    latency_p95_ms: float
    queries: int
    degraded: int
    empty: int = 0


@dataclass(frozen=True)
class EvalReport:
    """An evaluation: the data set, model, limit, cached index file and one report per mode."""

    dataset: str
    split: str
    model_id: str
    limit: int
    index: str
    modes: list[ModeReport] = field(default_factory=list)
    #: The reranker's model_id when every mode was reranked (``semsearch eval --rerank``).
    reranker: str | None = None
    #: The floor every search ran with: ``"default"`` (each mode's), a number, or None.
    min_score: float | str | None = "default"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        from dataclasses import asdict

        return asdict(self)


#: Hits of the second search of each query, from which recall@100 is scored.
RECALL_DEPTH = 100


def run_mode(
    coll: Collection,
    queries: dict[str, str],
    mode: str,
    limit: int,
    rerank: RerankPlan | None = None,
    min_score: MinScore = "default",
) -> tuple[Run, list[float], int, int]:
    """Search every query in ``mode`` with ``limit`` hits and ``min_score`` (default: each
    mode's default floor, what a user gets), reranked by ``rerank`` when given.

    Scores in the returned run are ``limit - rank + 1`` (rank 1-based), not the hits' own
    scores: trec_eval re-sorts tied scores by document id, which would undo our id tie-break.

    Returns:
        (run, per-query latencies in ms, number of degraded results, number of queries that
        came back empty).
    """
    run: Run = {}
    latencies: list[float] = []
    degraded = empty = 0
    for qid, text in queries.items():
        start = time.perf_counter()
        result = coll.search(
            text, mode=mode, limit=limit, min_score=min_score,
            rerank=rerank.reranker if rerank else None,
            rerank_top_n=rerank.top_n if rerank else None,
        )  # fmt: skip
        latencies.append((time.perf_counter() - start) * 1000)
        run[qid] = {hit.id: float(limit - rank) for rank, hit in enumerate(result.hits)}
        degraded += result.degraded
        empty += not result.hits
    return run, latencies, degraded, empty


def score_run(qrels: Qrels, run: Run) -> dict[str, float]:
    """nDCG@10, recall@100 and MRR@10 of ``run`` by trec_eval (pytrec-eval-terrier).

    MRR@10 is trec_eval's ``recip_rank`` on the run cut to each query's 10 best documents.
    Means are over every query in ``qrels``; a query missing from the run scores 0.

    Returns:
        ``{"ndcg_cut_10": …, "recall_100": …, "mrr_10": …}``, each in [0, 1].
    """
    import pytrec_eval

    full = pytrec_eval.RelevanceEvaluator(qrels, set(_MEASURES)).evaluate(run)
    top10 = {q: dict(sorted(d.items(), key=lambda kv: -kv[1])[:10]) for q, d in run.items()}
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    n = len(qrels)
    out = {key: sum(full.get(q, {}).get(key, 0.0) for q in qrels) / n for key in _MEASURES.values()}
    out["mrr_10"] = sum(mrr.get(q, {}).get("recip_rank", 0.0) for q in qrels) / n
    return out


def check_args(modes: Sequence[str], limit: int) -> list[str]:
    """Validate an evaluation's modes and limit before any indexing; returns the unique modes.

    Raises:
        InvalidQuery: an unknown or missing mode, or a limit outside [1, 1000].
    """
    from semsearch.search import MAX_LIMIT, MODES

    wanted = list(dict.fromkeys(m.strip() for m in modes if m.strip()))
    bad = [m for m in wanted if m not in MODES]
    if bad or not wanted:
        raise InvalidQuery(
            f"unknown evaluation mode(s): {', '.join(bad) or 'none given'}",
            hint=f"use a comma-separated list of: {', '.join(MODES)}",
        )
    if isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidQuery(
            f"limit must be in [1, {MAX_LIMIT}], got {limit}", hint="e.g. --limit 100"
        )
    return wanted


def _percentile(values: Sequence[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else 0.0


def run_eval(
    dataset: BeirDataset,
    coll: Collection,
    modes: Sequence[str] = DEFAULT_MODES,
    limit: int = 10,
    rerank: RerankPlan | None = None,
    min_score: MinScore = "default",
) -> EvalReport:
    """Evaluate each mode on ``dataset``'s judged queries against an index from :func:`open_index`.

    nDCG@10 and MRR@10 score a search of ``limit`` hits (default 10: what a user gets, hybrid
    legs included), recall@100 a second search of :data:`RECALL_DEPTH` hits; both with
    ``min_score`` (default: each mode's default floor; None: no floor). The embedder (and the
    reranker, when given) is warmed up first so that model loads are not counted as query
    latency. With ``rerank`` every mode's hits are reranked; a query whose reranking failed
    counts in ``ModeReport.degraded``.

    Raises:
        InvalidQuery: an unknown mode or a limit outside [1, 1000].
    """
    if any(m != "keyword" for m in modes):
        coll.embedder.embed_query("warm up")
    report = EvalReport(
        dataset.name, dataset.split, coll.model_id, limit, coll.store.location,
        reranker=rerank.reranker.model_id if rerank else None, min_score=min_score,
    )  # fmt: skip
    if rerank is not None:
        with contextlib.suppress(Exception):  # a failing reranker shows as degraded queries
            rerank.reranker.rerank("warm up", ["warm up"])
    for mode in modes:
        run, latencies, degraded, empty = run_mode(
            coll, dataset.queries, mode, limit, rerank, min_score
        )
        scores = score_run(dataset.qrels, run)
        deep = run_mode(coll, dataset.queries, mode, RECALL_DEPTH, rerank, min_score)[0]
        report.modes.append(
            ModeReport(
                mode=mode,
                ndcg_at_10=scores["ndcg_cut_10"],
                recall_at_100=score_run(dataset.qrels, deep)["recall_100"],
                mrr_at_10=scores["mrr_10"],
                latency_p50_ms=_percentile(latencies, 50),
                latency_p95_ms=_percentile(latencies, 95),
                queries=len(run),
                degraded=degraded,
                empty=empty,
            )
        )
    return report
