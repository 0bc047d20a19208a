"""The systems compared by benchmarks/ann.py, each behind the same four calls.

``build(x, buckets, folder)`` stores float32 unit vectors with an int ``bucket`` per row;
``set_ef(ef)`` picks the search-time knob (None where a system has none); ``search(q, k, lt)``
returns row numbers, best first, keeping only rows with ``bucket < lt`` when ``lt`` is given.
Similarity is inner product (= cosine on unit vectors) everywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

M, EF_CONSTRUCTION = 32, 80  # the same graph parameters for every HNSW system that takes them
EFS = [16, 32, 64, 128, 256, 512]


class Numpy:
    """The exact reference: one float32 matrix-vector product and a partial sort."""

    name, efs, filters = "numpy float32 scan (exact)", [None], True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        self.x, self.buckets = x, buckets
        np.save(folder / "x.npy", x)

    def set_ef(self, ef: int | None) -> None:
        pass

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        if lt is None:
            s = self.x @ q
            top = np.argpartition(-s, k)[:k]
            return top[np.argsort(-s[top])].tolist()
        rows = np.flatnonzero(self.buckets < lt)
        s = self.x[rows] @ q
        top = np.argsort(-s)[:k]
        return rows[top].tolist()


class Faiss:
    """Raw faiss HNSW (the near-limit reference); filters via IDSelectorBitmap, no fallback."""

    name, efs, filters = f"raw faiss HNSW (M={M})", EFS, True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        import faiss

        self.faiss = faiss
        self.index = faiss.IndexHNSWFlat(x.shape[1], M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = EF_CONSTRUCTION
        self.index.add(x)
        faiss.write_index(self.index, str(folder / "faiss.hnsw"))
        self.buckets, self.bits = buckets, {}

    def set_ef(self, ef: int | None) -> None:
        self.ef = ef

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        params = self.faiss.SearchParametersHNSW()
        params.efSearch = self.ef
        if lt is not None:
            if lt not in self.bits:
                self.bits[lt] = np.packbits(self.buckets < lt, bitorder="little")
            params.sel = self.faiss.IDSelectorBitmap(self.bits[lt])
        _, rows = self.index.search(q.reshape(1, -1), k, params=params)
        return [int(r) for r in rows[0] if r >= 0]


class Semsearch:
    """semsearch's SQLite store through ``vector_search`` (what Collection.search calls)."""

    filters = True

    def __init__(self, exact: bool, storage: str | None = None, grow: bool = True) -> None:
        self.exact = exact
        self.storage = storage  # the graph's vector storage; None: the library default (fp16)
        self.grow = grow  # False: the first search builds the graph (build_while_writing off)
        self.distinct_filters = False  # benchmarks/ann.py: a new filter per query when True
        self._fresh = 0
        self.name = "semsearch SQLite, exact" if exact else "semsearch SQLite, HNSW"
        self.name += f" ({storage} graph)" if storage else ""
        self.name += "" if grow else " (graph built by the first search)"
        self.efs = [None] if exact else EFS

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        import semsearch
        from semsearch.filters import parse_filter
        from semsearch.schema import Field, Schema

        self.path = folder / "bench.embed.db"
        self.db = semsearch.connect(self.path)
        self.schema = Schema(fields=(Field("bucket", "int"),))
        self._options(None)
        write_vectors(self.db.store, x, buckets)
        self.parse = parse_filter
        self.where: dict[int, Any] = {}
        self.db.store.vector_search("bench", x[0], 10, None, self.exact)  # builds graph / cache

    def _options(self, ef: int | None) -> None:
        from semsearch.stores.base import CollectionInfo

        ann: dict[str, Any] = {"M": M, "ef_construction": EF_CONSTRUCTION}
        if self.storage is not None:
            ann["storage"] = self.storage
        if not self.grow:
            ann["build_while_writing"] = False
        if ef is not None:
            ann["ef_search"] = ef
        info = CollectionInfo("bench", self.schema.to_json(), "bench:384", None, {"ann": ann})
        current = self.db.store.get_collection("bench")
        if current is None:
            self.db.store.create_collection(info)
        else:
            self.db.store.update_collection(
                CollectionInfo(
                    "bench", current.schema_json, current.model_id, current.dim, {"ann": ann}
                )
            )

    def reopen_first_result(self, q: np.ndarray) -> float:
        """Seconds from connect() to the first result, in this (warm page cache) process."""
        import time

        import semsearch

        self.db.close()
        started = time.perf_counter()
        self.db = semsearch.connect(self.path)
        self.db.store.vector_search("bench", q, 10, None, self.exact)
        return time.perf_counter() - started

    def set_ef(self, ef: int | None) -> None:
        if ef is not None:
            self._options(ef)

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        where = None
        if lt is not None and self.distinct_filters:
            self._fresh += 1  # bucket != -n never excludes a row but makes the filter new
            spec = {"bucket": {"$lt": lt, "$ne": -self._fresh}}
            where = self.parse(spec, self.schema)
        elif lt is not None:
            where = self.where.setdefault(lt, self.parse({"bucket": {"$lt": lt}}, self.schema))
        hits = self.db.store.vector_search("bench", q, k, where, self.exact)
        return [int(h.record_id) for h in hits]


def write_vectors(store: Any, x: np.ndarray, buckets: np.ndarray, batch: int = 5000) -> None:
    """Records ``"0".."n-1"`` with one chunk each, via the Store primitives, then their vectors."""
    from semsearch.results import Chunk
    from semsearch.stores.base import ChunkWrite, RecordWrite

    for start in range(0, x.shape[0], batch):
        stop = min(start + batch, x.shape[0])
        writes = [
            RecordWrite(
                str(i), {"bucket": int(buckets[i])}, {"bucket": int(buckets[i])}, str(i),
                f"h{i}", [ChunkWrite(Chunk(str(i), 0, 0, len(str(i))), str(i), f"c{i}")],
            )
            for i in range(start, stop)
        ]  # fmt: skip
        result = store.write_records("bench", writes)
        ids = [p.chunk_id for p in result.pending]
        rows = [int(p.embed_text) for p in result.pending]
        store.set_vectors("bench", ids, x[rows])


class Chroma:
    """chromadb PersistentClient, our own vectors, HNSW with inner product."""

    name, efs, filters = f"chromadb PersistentClient (HNSW M={M})", EFS, True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        import chromadb

        client = chromadb.PersistentClient(path=str(folder / "chroma"))
        conf = {"hnsw": {"space": "ip", "max_neighbors": M, "ef_construction": EF_CONSTRUCTION}}
        self.coll = client.create_collection("bench", configuration=conf, embedding_function=None)
        step = 5000
        for s in range(0, x.shape[0], step):
            e = min(s + step, x.shape[0])
            self.coll.add(
                ids=[str(i) for i in range(s, e)],
                embeddings=x[s:e],
                metadatas=[{"bucket": int(b)} for b in buckets[s:e]],
            )
        self.coll.query(query_embeddings=[x[0]], n_results=1)

    def set_ef(self, ef: int | None) -> None:
        self.coll.modify(configuration={"hnsw": {"ef_search": ef}})

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        where = None if lt is None else {"bucket": {"$lt": lt}}
        res = self.coll.query(query_embeddings=[q], n_results=k, where=where, include=[])
        return [int(i) for i in res["ids"][0]]


class Lance:
    """LanceDB: exact scan (its advice below ~1M rows); filters prefiltered."""

    name, efs, filters = "LanceDB (flat scan)", [None], True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        import lancedb
        import pyarrow as pa

        db = lancedb.connect(str(folder / "lance"))
        vec = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1), pa.float32()), x.shape[1])
        data = pa.table({"id": np.arange(x.shape[0]), "bucket": buckets, "vector": vec})
        self.table = db.create_table("bench", data=data)

    def set_ef(self, ef: int | None) -> None:
        pass

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        query = self.table.search(q).metric("dot").limit(k).select(["id"])
        if lt is not None:
            query = query.where(f"bucket < {int(lt)}", prefilter=True)
        return [int(i) for i in query.to_arrow()["id"].to_pylist()]


class SqliteVec:
    """sqlite-vec ``vec0`` (exact scan) through apsw; ``bucket`` as a vec0 metadata column."""

    name, efs, filters = "sqlite-vec vec0 (exact)", [None], True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        import apsw
        import sqlite_vec

        self.conn = apsw.Connection(str(folder / "vec.db"))
        self.conn.enable_load_extension(True)
        self.conn.load_extension(sqlite_vec.loadable_path())
        self.conn.execute(
            f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{x.shape[1]}] "
            "distance_metric=cosine, bucket integer)"
        )
        with self.conn:
            self.conn.executemany(
                "INSERT INTO v(rowid, embedding, bucket) VALUES (?, ?, ?)",
                ((i, x[i].tobytes(), int(buckets[i])) for i in range(x.shape[0])),
            )

    def set_ef(self, ef: int | None) -> None:
        pass

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        extra = "" if lt is None else f" AND bucket < {int(lt)}"
        sql = f"SELECT rowid FROM v WHERE embedding MATCH ? AND k = ?{extra} ORDER BY distance"
        return [int(r[0]) for r in self.conn.execute(sql, (q.tobytes(), k))]


class Milvus:
    """Milvus Lite (in-process server) with an HNSW index, inner product."""

    name, efs, filters = f"Milvus Lite (HNSW M={M})", EFS, True

    def build(self, x: np.ndarray, buckets: np.ndarray, folder: Path) -> None:
        from pymilvus import DataType, MilvusClient

        self.client = MilvusClient(str(folder / "milvus.db"))
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("bucket", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=x.shape[1])
        params = self.client.prepare_index_params()
        params.add_index(
            "vector", index_type="HNSW", metric_type="IP",
            params={"M": M, "efConstruction": EF_CONSTRUCTION},
        )  # fmt: skip
        self.client.create_collection("bench", schema=schema, index_params=params)
        for s in range(0, x.shape[0], 5000):
            e = min(s + 5000, x.shape[0])
            rows = [{"id": i, "bucket": int(buckets[i]), "vector": x[i]} for i in range(s, e)]
            self.client.insert("bench", rows)
        self.client.flush("bench")
        self.client.load_collection("bench")

    def set_ef(self, ef: int | None) -> None:
        self.ef = ef

    def search(self, q: np.ndarray, k: int, lt: int | None) -> list[int]:
        res = self.client.search(
            "bench", data=[q.tolist()], limit=k, search_params={"params": {"ef": max(self.ef, k)}},
            filter="" if lt is None else f"bucket < {int(lt)}",
        )  # fmt: skip
        return [int(h["id"]) for h in res[0]]


SYSTEMS = {
    "numpy": Numpy,
    "semsearch-exact": lambda: Semsearch(exact=True),
    "semsearch-hnsw": lambda: Semsearch(exact=False),
    "semsearch-hnsw-int8": lambda: Semsearch(exact=False, storage="int8"),
    "semsearch-hnsw-first-search": lambda: Semsearch(exact=False, grow=False),
    "faiss": Faiss,
    "chromadb": Chroma,
    "lancedb": Lance,
    "sqlite-vec": SqliteVec,
    "milvus-lite": Milvus,
}
