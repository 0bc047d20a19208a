"""Fill each store with the same chunks for benchmarks/capacity.py, and count its bytes on disk.

Every store gets the same data through the Store protocol (what ingestion calls): one record
per chunk, ``n`` clustered 384-d unit vectors (benchmarks/ann_data.py), a deterministic text of
``words`` words per chunk drawn from a Zipf-like vocabulary (so full-text indexes grow as they
do on prose), an int field ``bucket`` (``i % 100``) for filters, and ``windows`` sentence
windows per chunk (random unit vectors, stored as int8 codes, so no compressor shrinks them; spans cut the
text into equal parts). Disk counters return ``{part: bytes}``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.ann_bytes import sqlite_bytes

NAME = "bench"
BATCH = 2000  # records per write_records call
#: SQLite tables (by name prefix, from dbstat) grouped into the parts the page reports.
SQLITE_PARTS = (
    ("windows", ("chunk_windows", "sqlite_autoindex_chunk_windows")),
    ("full-text (FTS5)", ("fts_",)),
    ("change logs", ("changes", "record_changes", "idx_changes", "idx_record_changes")),
)


def schema() -> Any:
    from semsearch.schema import Schema

    return Schema.from_types({"bucket": "int"})


def word(rank: int) -> str:
    """The vocabulary's word of ``rank`` (0 = most frequent): ``t<rank in base 36>x``."""
    return f"t{np.base_repr(rank, 36).lower()}x"


def texts(n: int, words: int, seed: int = 7) -> list[str]:
    """``n`` texts of ``words`` words each; word of rank r has probability ~ 1 / (r + 10)."""
    vocab = np.array([word(r) for r in range(50_000)])
    weights = 1.0 / (np.arange(len(vocab)) + 10.0)
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(vocab), size=(n, words), p=weights / weights.sum())
    return [" ".join(vocab[row]) for row in picks]


def fill(
    store: Any,
    x: np.ndarray,
    chunk_texts: list[str],
    windows: int,
    options: dict[str, Any] | None = None,
    after_first: Callable[[], None] | None = None,
) -> None:
    """Write ``len(x)`` single-chunk records, their vectors and ``windows`` windows each.

    ``after_first`` runs once after the first batch's vectors (pgvector: drop the HNSW index
    for the bulk load, as benchmarks/pgvector.py does).
    """
    from semsearch.results import Chunk
    from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite, WindowSet

    store.create_collection(
        CollectionInfo(NAME, schema().to_json(), "bench:384", None, options or {})
    )
    rng = np.random.default_rng(3)
    for start in range(0, len(x), BATCH):
        stop = min(start + BATCH, len(x))
        writes = []
        for i in range(start, stop):
            text, attrs = chunk_texts[i], {"bucket": i % 100}
            chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, f"c{i}")
            writes.append(RecordWrite(f"r{i:08d}", attrs, attrs, text, f"h{i}", [chunk]))
        pending = store.write_records(NAME, writes).pending
        ids = [p.chunk_id for p in pending]
        store.set_vectors(NAME, ids, x[start:stop])
        if after_first is not None and start == 0:
            after_first()
        if windows:
            vecs = rng.standard_normal((stop - start, windows, x.shape[1])).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=2, keepdims=True)
            sets = {}
            for j, chunk_id in enumerate(ids):
                cuts = np.linspace(0, len(chunk_texts[start + j]), windows + 1).astype(np.int32)
                spans = np.stack([cuts[:-1], cuts[1:]], axis=1)
                sets[chunk_id] = WindowSet(spans, vecs[j].astype(np.float16))
            store.set_windows(NAME, sets)


def sqlite_parts(path: Path) -> dict[str, int]:
    """Bytes of a closed SQLite index file by part (dbstat pages; the rest is rows + indexes)."""
    parts = {name: 0 for name, _ in SQLITE_PARTS}
    parts["records, chunks (text, fp16 vectors), indexes"] = 0
    for table, size in sqlite_bytes(path):
        part = next(
            (p for p, prefixes in SQLITE_PARTS if any(table.startswith(x) for x in prefixes)),
            "records, chunks (text, fp16 vectors), indexes",
        )
        parts[part] += size
    parts["file"] = path.stat().st_size
    return parts


def sidecar_bytes(path: Path, suffixes: tuple[str, ...]) -> int:
    """Bytes of the files beside ``path`` whose names end with one of ``suffixes``."""
    return sum(
        p.stat().st_size for p in path.parent.glob(path.name + ".*") if p.name.endswith(suffixes)
    )


def copy_index(src: Path, dst: Path, suffixes: tuple[str, ...]) -> None:
    """Copy a closed SQLite index file (no WAL) to ``dst``, with its sidecars that end with
    one of ``suffixes`` (renamed to follow ``dst``)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    for side in src.parent.glob(src.name + ".*"):
        if side.name.endswith(suffixes):
            shutil.copyfile(side, dst.parent / (dst.name + side.name[len(src.name) :]))


def folder_bytes(path: Path) -> dict[str, int]:
    """Bytes of a Milvus Lite folder by Milvus collection (``ss_<slug>_<hash>_chunks`` counts
    as ``chunks``; write-ahead logs and indexes included) and ``whole folder``."""
    out: dict[str, int] = {}
    for root, _, files in os.walk(path):
        rel = Path(root).relative_to(path).parts
        part = rel[1].rsplit("_", 1)[-1] if len(rel) > 1 and rel[0] == "collections" else "other"
        if part != "meta":  # semsearch_meta: one row per collection
            out[part] = out.get(part, 0) + sum(os.path.getsize(Path(root, f)) for f in files)
    out["whole folder"] = sum(out.values())
    return out


def postgres_parts(url: str) -> dict[str, int]:
    """Bytes of the collection's PostgreSQL relations by part (heap + TOAST, indexes, HNSW)."""
    import psycopg

    sql = (
        "SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c "
        "WHERE c.relkind = 'r' AND c.relname LIKE 'semsearch_c%'"
    )
    hnsw_sql = (
        "SELECT COALESCE(SUM(pg_relation_size(format('%I', indexname)::regclass)), 0) "
        "FROM pg_indexes WHERE indexdef ILIKE '%USING hnsw%' AND tablename LIKE 'semsearch_c%'"
    )
    parts = {"records (rows + indexes)": 0, "chunks (text, tsvector, float32 vector)": 0,
             "chunk indexes (B-tree, GIN tsvector)": 0, "HNSW index": 0, "windows": 0}  # fmt: skip
    with psycopg.connect(url) as conn:
        hnsw = int(conn.execute(hnsw_sql).fetchone()[0])
        for name, table, indexes in conn.execute(sql).fetchall():
            if name.endswith("_records"):
                parts["records (rows + indexes)"] += table + indexes
            elif name.endswith("_chunks"):
                parts["chunks (text, tsvector, float32 vector)"] += table
                parts["chunk indexes (B-tree, GIN tsvector)"] += indexes - hnsw
            elif name.endswith("_windows"):
                parts["windows"] += table + indexes
    parts["HNSW index"] = hnsw
    return parts
