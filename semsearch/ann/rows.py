"""The rows of the ANN cache and how they are read from a ``.embed.db`` file.

Every function taking a ``conn`` runs inside one read transaction opened by the store, so the
version counter, the change-log position and the vectors it reads are one consistent snapshot.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from semsearch.ann import file as ann_file
from semsearch.ann import graph as ann_graph
from semsearch.ann.policy import AnnOptions
from semsearch.stores.sqlite.changes import high_water, pruned_to
from semsearch.stores.sqlite.vector_blobs import stored_precision
from semsearch.stores.sqlite.vector_reads import (
    fill_by_slot,
    packed_only,
    resolve,
    slot_column,
)

__all__ = ["AnnState", "LogPruned", "Reader"]

_FETCH = 4096


T = TypeVar("T")


class Reader(Protocol):
    """Runs a function inside one read transaction of the store's connection."""

    def __call__(self, fn: Callable[[sqlite3.Connection], T], /) -> T: ...


class LogPruned(Exception):
    """The change log was pruned past a cache's position: it cannot catch up, only reload."""


@dataclass(frozen=True)
class AnnState:
    """An immutable snapshot of one collection's cache (searches run on it without a lock).

    Attributes:
        version: the collection change counter it reflects.
        last_seq: the last change-log ``seq`` it reflects.
        identity: collection name, created_at, model_id, dim and stored precision it was
            built for.
        options: the collection's ANN options.
        chunk_ids, record_rowids: int64[n] per row.
        alive: bool[n], False for tombstones (deleted or re-embedded chunks).
        graph: the HNSW graph over rows [0, graph_rows), or None.
        graph_rows: rows covered by the graph.
        graph_vectors: [graph_rows, dim] vectors of the graph rows at the stored precision:
            float16 (a view of an fp16 graph's codes, or the sidecar's float16 array) or
            float32 (a view of a flat graph's storage); upcast before any product.
        fresh: float32[n - graph_rows, dim] rows added since the graph was built (the stored
            values, upcast); float16 (as stored) only in a graph-less state loaded for a graph
            build (:func:`load_rows` ``half``), where products upcast them as numpy promotes.
        token: the graph's build token when it is on disk, else None.
    """

    version: int
    last_seq: int
    identity: dict[str, Any]
    options: AnnOptions
    chunk_ids: NDArray[np.int64]
    record_rowids: NDArray[np.int64]
    alive: NDArray[np.bool_]
    graph: Any
    graph_rows: int
    graph_vectors: NDArray[np.floating]
    fresh: NDArray[np.floating]
    token: str | None = None

    @property
    def rows(self) -> int:
        """Rows, live and dead."""
        return int(self.chunk_ids.shape[0])

    @property
    def dim(self) -> int:
        """Vector dimension (0 before the first vector)."""
        return int(self.fresh.shape[1])

    def live(self) -> int:
        """Live rows, i.e. embedded chunks."""
        return int(np.count_nonzero(self.alive))


def collection_meta(
    conn: sqlite3.Connection, cid: int
) -> tuple[dict[str, Any], int, dict[str, Any]] | None:
    """(identity, version, options) of a collection, or None if it is gone.

    The identity includes the precision the file stores vectors at (``"float32"`` before
    format 5, ``"float16"`` from it): the format-5 migration rewrites vectors without logging
    changes, so a cache built on the float32 values is reloaded, never caught up.
    """
    row = conn.execute(
        "SELECT name, created_at, model_id, dim, version, options, "
        "(SELECT MAX(version) FROM semsearch_migrations) FROM collections WHERE id = ?",
        (cid,),
    ).fetchone()
    if row is None:
        return None
    identity = {
        "collection": row[0], "created_at": row[1], "model_id": row[2], "dim": row[3],
        "precision": stored_precision(int(row[6] or 0)),
    }  # fmt: skip
    return identity, int(row[4]), json.loads(row[5] or "{}")


def _position(conn: sqlite3.Connection, cid: int) -> tuple[int, int]:
    version = conn.execute("SELECT version FROM collections WHERE id = ?", (cid,)).fetchone()
    return int(version[0] if version else 0), high_water(conn)


def embedded_count(conn: sqlite3.Connection, cid: int) -> int:
    """Embedded chunks of a collection in the file (a walk of its ``chunks_by_status`` index
    entries: O(n): about 33 ns a chunk measured, 10 ms at 300,000)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE collection_id = ? AND status = 'embedded'", (cid,)
    ).fetchone()
    return int(row[0])


def embedded_at_least(conn: sqlite3.Connection, cid: int, n: int) -> bool:
    """True when the collection has ``n`` or more embedded chunks; walks at most ``n`` index
    entries, so a check against a threshold costs the same at any size of collection (``n``
    may exceed SQLite's INTEGER range: the LIMIT is capped at 2**63 - 1, more rows than any
    file holds)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE collection_id = ? "
        "AND status = 'embedded' LIMIT ?)",
        (cid, min(max(int(n), 0), 2**63 - 1)),
    ).fetchone()
    return int(row[0]) >= n


def _fetch(
    conn: sqlite3.Connection,
    cid: int,
    cursor: sqlite3.Cursor,
    n: int,
    dim: int,
    half: bool = False,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[Any]]:
    """Read (chunk id, record rowid, inline vector blob, vector slot) rows into preallocated
    arrays, in batches: vectors float32[n, dim], or with ``half`` float16[n, dim] as stored
    (each from its inline blob or its slot, stores/sqlite/vector_blocks.py)."""
    ids = np.empty(n, np.int64)
    rowids = np.empty(n, np.int64)
    vectors = np.empty((n, dim), np.float16 if half else np.float32)
    filled = 0
    while batch := cursor.fetchmany(_FETCH):
        end = min(filled + len(batch), n)
        take = batch[: end - filled]
        ids[filled:end] = [r[0] for r in take]
        rowids[filled:end] = [r[1] for r in take]
        values, _ = resolve(
            conn, cid, dim, [r[2] for r in take], [r[3] for r in take], vectors.dtype.type
        )
        vectors[filled:end] = values
        filled = end
    return ids[:filled], rowids[:filled], vectors[:filled]


def load_rows(
    conn: sqlite3.Connection,
    cid: int,
    identity: dict[str, Any],
    opts: AnnOptions,
    half: bool = False,
) -> AnnState:
    """A graph-less cache holding every embedded chunk of the collection.

    With ``half`` and at least ``opts.threshold`` chunks (a graph is built from these rows
    next), ``fresh`` keeps the stored float16 values instead of a float32 copy: the build
    upcasts them a batch at a time, so loading and building never hold n x dim float32.
    """
    version, last_seq = _position(conn, cid)
    meta = collection_meta(conn, cid)  # this snapshot's: the first vectors may have come since
    identity = identity if meta is None else meta[0]
    dim = int(identity["dim"] or 0)
    n = embedded_count(conn, cid)
    cursor = conn.execute(
        f"SELECT id, record_rowid, vector, {slot_column(conn)} FROM chunks "
        "WHERE collection_id = ? AND status = 'embedded' ORDER BY id",
        (cid,),
    )
    ids, rowids, vectors = _fetch(conn, cid, cursor, n, dim, half and n >= opts.threshold)
    return AnnState(
        version, last_seq, identity, opts, ids, rowids, np.ones(ids.size, np.bool_),
        None, 0, np.empty((0, dim), np.float32), vectors,
    )  # fmt: skip


def catch_up(conn: sqlite3.Connection, cid: int, state: AnnState, half: bool = False) -> AnnState:
    """Apply the change log since ``state.last_seq``: tombstone touched chunks, append them anew.

    A chunk touched by any number of adds and deletes ends as its current row in ``chunks``
    (appended if still embedded), so the order of operations in the log does not matter.
    ``half``: the appended rows stay float16 as stored (for a graph build, like
    :func:`load_rows`), a state with no fresh rows then gets float16 ``fresh``.

    The appended vectors are read into one array sized for the touched chunks, and become
    ``fresh`` as they are when the state had none: a catch-up of 800,000 rows copies no
    vector twice.

    Raises:
        LogPruned: the log rows after ``state.last_seq`` were pruned (stores/sqlite/changes.py):
            the caller reloads the cache instead.
    """
    if state.last_seq < pruned_to(conn, cid):
        raise LogPruned(f"change log pruned past seq {state.last_seq}")
    version, last_seq = _position(conn, cid)
    touched = [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT chunk_id FROM changes WHERE seq > ? AND collection_id = ?",
            (state.last_seq, cid),
        )
    ]
    if not touched:
        return replace(state, version=version, last_seq=last_seq)
    dim = state.dim or int(_dim(conn, cid))
    ids = np.empty(len(touched), np.int64)
    rowids = np.empty(len(touched), np.int64)
    vectors = np.empty((len(touched), dim), np.float16 if half else np.float32)
    filled = 0
    for i in range(0, len(touched), 500):
        got_ids, got_rowids, got = _touched_rows(conn, cid, touched[i : i + 500], dim, half)
        end = filled + got_ids.size
        ids[filled:end], rowids[filled:end], vectors[filled:end] = got_ids, got_rowids, got
        filled = end
    ids, rowids, vectors = ids[:filled], rowids[:filled], vectors[:filled]
    alive = state.alive & ~np.isin(state.chunk_ids, np.asarray(touched, np.int64))
    if state.dim and state.fresh.shape[0]:
        fresh = np.concatenate([state.fresh, vectors])
    else:
        fresh = vectors
    return replace(
        state,
        version=version,
        last_seq=last_seq,
        chunk_ids=np.concatenate([state.chunk_ids, ids]),
        record_rowids=np.concatenate([state.record_rowids, rowids]),
        alive=np.concatenate([alive, np.ones(ids.size, np.bool_)]),
        fresh=fresh,
        graph_vectors=state.graph_vectors.reshape(-1, dim),
    )


def _dim(conn: sqlite3.Connection, cid: int) -> int:
    row = conn.execute("SELECT dim FROM collections WHERE id = ?", (cid,)).fetchone()
    return int(row[0] or 0) if row else 0


def _touched_rows(
    conn: sqlite3.Connection, cid: int, ids: Sequence[int], dim: int, half: bool
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.floating]]:
    marks = ", ".join("?" for _ in ids)
    cursor = conn.execute(
        f"SELECT id, record_rowid, vector, {slot_column(conn)} FROM chunks "
        f"WHERE collection_id = ? AND status = 'embedded' AND id IN ({marks}) ORDER BY id",
        (cid, *ids),
    )
    return _fetch(conn, cid, cursor, len(ids), dim, half)


def open_sidecar(
    conn: sqlite3.Connection,
    db_path: str,
    cid: int,
    car: ann_file.Sidecar,
    identity: dict[str, Any],
    opts: AnnOptions,
) -> AnnState:
    """The cache state of a read sidecar, caught up with the change log (one transaction).

    A graph file with its codes (sidecar format 3, int8 and float32 graphs) is memory-mapped.
    An fp16 graph written without codes (format 4, header ``graph.codes_in_sqlite``) gets them
    from the file's float16 vectors, read in this transaction (:func:`_fill_codes`): rows whose
    chunk is no longer embedded are tombstoned, and the catch-up that follows in the same
    transaction tombstones every row whose chunk was re-embedded since the save, so a live row's
    code is always its chunk's current stored vector.

    Raises:
        ann_file.SidecarInvalid: the graph is missing, truncated, built with other parameters,
            or does not match the arrays; or the caught-up live rows are not the file's
            embedded chunks.
        LogPruned: the change log was pruned past the sidecar's position.
    """
    head = car.header
    info = head.get("graph") or {}
    if {k: info.get(k) for k in opts.graph_key()} != opts.graph_key():
        raise ann_file.SidecarInvalid("built with other HNSW parameters")
    gpath = ann_file.graph_path(db_path, cid, str(info.get("token")))
    if not os.path.exists(gpath) or os.path.getsize(gpath) != info.get("size"):
        raise ann_file.SidecarInvalid("graph file missing or truncated")
    rows, dim = int(head.get("graph_rows", -1)), int(identity["dim"] or 0)
    chunk_ids, alive = np.asarray(car.chunk_ids), car.alive.astype(np.bool_)
    if chunk_ids.shape[0] != rows:
        raise ann_file.SidecarInvalid("graph and arrays disagree")
    if info.get("codes_in_sqlite"):
        found = np.zeros(rows, np.bool_)
        graph = ann_graph.load_graph_without_codes(
            gpath, dim, lambda out: _fill_codes(conn, cid, chunk_ids, out, found, car.slots)
        )
        alive &= found
    else:
        graph = ann_graph.load_graph(gpath, mmap=True)
    if graph.ntotal != rows or graph.d != dim:
        raise ann_file.SidecarInvalid("graph and arrays disagree")
    vectors = ann_graph.graph_vectors(graph)
    if vectors is None:  # int8 codes: exact scans and rescoring read the SQLite file
        vectors = np.empty((0, graph.d), np.float16)
    state = catch_up(conn, cid, AnnState(
        int(head["version"]), int(head["last_seq"]), identity, opts,
        chunk_ids, np.asarray(car.record_rowids), alive,
        graph, rows, vectors, np.empty((0, graph.d), np.float32), str(info["token"]),
    ))  # fmt: skip
    embedded = embedded_count(conn, cid)
    if embedded != state.live():
        raise ann_file.SidecarInvalid(f"holds {state.live()} live vectors, the file {embedded}")
    return state


def _fill_codes(
    conn: sqlite3.Connection,
    cid: int,
    chunk_ids: NDArray[np.int64],
    out: NDArray[np.float16],
    found: NDArray[np.bool_],
    slots: NDArray[np.int64] | None = None,
) -> None:
    """Write the stored float16 vector of each graph row's chunk into ``out`` (graph row order).

    With the sidecar's ``slots`` in a file of format 6 (every vector in a block): one pass over
    the collection's vector blocks (:func:`~semsearch.stores.sqlite.vector_blocks.fill_by_slot`);
    a row whose chunk was deleted since the save may get the value a reused slot holds now,
    but the catch-up that follows in the same transaction tombstones it (the delete is in the
    change log), as it tombstones re-embedded chunks' old rows.

    Otherwise one pass over the collection's embedded chunks in id order, matched to the rows
    by a sorted copy of ``chunk_ids`` (a re-embedded chunk can own two rows: its dead old row
    and its new one; both get the current vector, and the dead one is never returned). Rows
    whose chunk is not embedded any more keep zeros and are left False in ``found``; at most
    one batch of :data:`_FETCH` rows is held besides ``out``.

    Raises:
        ann_file.SidecarInvalid: the graph's row count is not the arrays'.
    """
    if out.shape[0] != chunk_ids.shape[0]:
        raise ann_file.SidecarInvalid("graph and arrays disagree")
    if slots is not None and slots.shape[0] == chunk_ids.shape[0] and packed_only(conn):
        fill_by_slot(conn, cid, np.asarray(slots), out, found)
        return
    dim = out.shape[1]
    ascending = bool(np.all(chunk_ids[1:] >= chunk_ids[:-1]))  # the usual case: no sort
    order = None if ascending else np.argsort(chunk_ids, kind="stable")
    by_id = chunk_ids if order is None else chunk_ids[order]
    cursor = conn.execute(
        f"SELECT id, vector, {slot_column(conn)} FROM chunks WHERE collection_id = ? "
        "AND status = 'embedded' ORDER BY id",
        (cid,),
    )
    while batch := cursor.fetchmany(_FETCH):
        id_list, blobs, slot_list = zip(*batch, strict=True)
        ids = np.array(id_list, np.int64)
        lo = int(np.searchsorted(by_id, ids[0], side="left"))
        hi = int(np.searchsorted(by_id, ids[-1], side="right"))
        wanted = by_id[lo:hi]
        at = np.searchsorted(ids, wanted)  # < len(ids): every wanted id is <= ids[-1]
        hit = ids[at] == wanted
        if not hit.any():
            continue
        values, _ = resolve(conn, cid, dim, blobs, slot_list)
        if order is None and hi - lo == ids.size and bool(hit.all()):  # rows lo..hi: these
            out[lo:hi] = values
            found[lo:hi] = True
            continue
        rows = (np.arange(lo, hi) if order is None else order[lo:hi])[hit]
        out[rows] = values[at[hit]]
        found[rows] = True
