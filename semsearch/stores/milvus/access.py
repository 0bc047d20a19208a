"""Low-level access to Milvus for the Milvus store: the client, loaded collections, the
metadata rows, and batched queries. :class:`semsearch.stores.milvus.store.MilvusStore` builds the
Store protocol on top of it; the read and write modules take a :class:`MilvusAccess` and use
these helpers.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from semsearch.errors import IndexNotFound, SemsearchError
from semsearch.filters import Filter, IdMatch
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.conn import (
    MilvusTarget,
    close_client,
    open_client,
    parse_location,
    translated,
)
from semsearch.stores.milvus.expr import column, compile_filter, compiles_id_match, literal
from semsearch.stores.milvus.state import FLUSH_ROWS, META_TTL, acquire, release
from semsearch.stores.write_rules import check_vectors_dim

__all__ = ["MilvusAccess"]

#: Values per ``in [...]`` query (Milvus Lite scans every row per query, so fewer is faster).
_BATCH = 2000
_PAGE = 1000  # rows per page of a scan
#: The primary key of each part.
PRIMARY_KEYS = {"records": "pk", "chunks": "chunk_id", "vectors": "chunk_id"}


class MilvusAccess:
    """The connection, shared state and query helpers under :class:`MilvusStore`, opened with
    the same arguments (``location``, ``index``) and raising the same errors (see there). The
    modules of the read and write paths take it, never the store."""

    def __init__(self, location: str, *, index: str | None = None) -> None:
        target = parse_location(location)
        if index is not None:
            target = MilvusTarget(target.lite_path, target.uri, target.token, target.db_name, index)
        self.target = target
        self.location = target.display
        self._lock = threading.RLock()
        self._client: Any = None
        self._loaded: set[str] = set()
        #: The caches shared by this process's stores on the location (state.py).
        self.state = acquire(target.display, target.lite_path is not None)
        self._open = True
        self._writing = False
        #: Query-time index parameters overriding the defaults (e.g. ``{"nprobe": 32}``,
        #: ``{"ef": 256}``); see ``layout.INDEXES``.
        self.search_params: dict[str, Any] = {}
        if target.lite_path is None or os.path.exists(target.lite_path):
            self._connect()

    def _connect(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = open_client(self.target)
            return self._client

    def _read_client(self) -> Any | None:
        """The client, or None when a Milvus Lite folder does not exist yet (reads find nothing)."""
        return self._client

    def close(self) -> None:
        """Close the client; for Milvus Lite, stop its server when no other store uses the folder."""
        with self._lock:
            if self._client is not None:
                for name in list(self.state.batches):  # nothing held back is lost
                    with contextlib.suppress(SemsearchError):
                        self._settle(name)
                if self.state.users <= 1:  # the last store: no write of this process is left
                    with contextlib.suppress(SemsearchError):
                        self._clear_marks()
                with contextlib.suppress(SemsearchError):
                    self.flush()  # the next open replays no log
                close_client(self.target, self._client)
                self._client = None
                self._loaded.clear()
            if self._open:
                self._open = False
                release(self.target.display, self.state)

    def flush(self) -> None:
        """Flush every Milvus collection with rows written since its last flush (Milvus seals
        them into indexed segments). Writes flush per ``FLUSH_ROWS`` rows on a server, reads
        before they read, ``close()`` at the end; call it to time a write with its flush."""
        client = self._read_client()
        if client is None:
            return
        with self._lock:
            self._flush_in_order(client, list(self.state.unflushed))

    def _flush_in_order(self, client: Any, names: list[str]) -> None:
        """Flush ``names``, vector parts last: Lite starts building a flushed part's vector
        index at once, in a background thread that would slow the flushes after it."""
        for name in sorted(names, key=lay.holds_vectors):
            self._flush(client, name)

    def _clear_marks(self) -> None:
        """Clear the ``writing`` marks this process set (every write it made finished)."""
        for name in sorted(self.state.marked):
            meta = self.meta_cached(name)
            if meta is not None and meta.pop(lay.WRITING, None):
                self.put_meta(meta)
        self.state.marked.clear()

    def _load(self, client: Any, name: str) -> bool:
        """Load a Milvus collection once per store; False when it does not exist."""
        if name in self._loaded:
            return True
        with translated(f"loading {name}"):
            if not client.has_collection(name):
                return False
            client.load_collection(name)
        self._loaded.add(name)
        return True

    def _settle(self, collection: str) -> None:
        """Write what this process holds back for ``collection`` before anything reads it
        (the store's batch of chunk rows waiting for vectors; nothing here)."""

    def layout(self, collection: str) -> int:
        """The stored layout of ``collection`` (1 when its metadata names none or is gone)."""
        meta = self._meta_entry(collection)
        return int(meta.get("layout", 1)) if meta is not None else 1

    def part_name(self, collection: str, kind: str) -> str | None:
        """The Milvus name of a part (records/chunks/vectors/hashes) in the stored layout;
        None when it has none (layout 2: no chunk part yet, or no vectors before the dim;
        layout 3: no records part either)."""
        meta = self._meta_entry(collection)
        layout = int(meta.get("layout", 1)) if meta is not None else 1
        if kind == "records":
            return lay.part_name(collection, kind) if layout < 3 else None
        if meta is None or layout < 2:
            return lay.part_name(collection, kind)
        if kind == "hashes" or (kind == "vectors" and not meta.get("dim")):
            return None
        return meta.get("chunks")

    def vector_filter(self, collection: str) -> str:
        """The expression that keeps embedded rows of the vectors part: '' in layout 1 (only
        embedded chunks have vector rows), and on Milvus Lite when every chunk is embedded
        (counted once per write generation: a filter on every row made an unfiltered ANN
        search about 10% slower)."""
        if self.layout(collection) < 2:
            return ""
        embedded = 'status == "embedded"'
        if not self.state.lite:
            return embedded
        generation = self.state.generation
        known = self.state.all_embedded.get(collection)
        if known is None or known[0] != generation:
            waiting = self.count_where(collection, "chunks", 'status != "embedded"')
            known = self.state.all_embedded[collection] = (generation, waiting == 0)
        return "" if known[1] else embedded

    def _coll(self, collection: str, kind: str, flush: bool = True) -> tuple[Any, str] | None:
        """(client, Milvus name) of a loaded collection part, or None if it does not exist;
        flushed first when rows were written to it (outside a write, unless not ``flush``)."""
        client = self._read_client()
        if client is None:
            return None
        self._settle(collection)
        name = self.part_name(collection, kind)
        if name is None or not self._load(client, name):
            return None
        if flush and not self._writing and self.state.unflushed.get(name):
            self._flush(client, name)
        return client, name

    def _flush(self, client: Any, name: str) -> None:
        with translated(f"flushing {name}"):
            client.flush(name)
        self.state.unflushed.pop(name, None)

    def written(self, name: str, rows: int) -> None:
        """Count ``rows`` written to Milvus collection ``name``; on a server, flush it at
        FLUSH_ROWS (Milvus Lite flushes by itself: see there)."""
        left = self.state.unflushed.get(name, 0) + rows
        self.state.unflushed[name] = left
        if left >= FLUSH_ROWS and not self.state.lite:
            self._flush(self._connect(), name)

    def _meta_rows(self, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
        found = self._coll_meta()
        if found is None:
            return []
        client, meta = found
        expr = f"name in [{', '.join(literal(n) for n in names)}]" if names else 'name != ""'
        with translated("reading collection metadata"):
            rows = client.query(meta, filter=expr, output_fields=["name", "info"])
        # '#' is never in a collection's name: such rows are keyword stamps (keyword_build.py)
        return [{"name": r["name"], **json.loads(r["info"])} for r in rows if "#" not in r["name"]]

    def _coll_meta(self) -> tuple[Any, str] | None:
        client = self._read_client()
        if client is None or not self._load(client, lay.META):
            return None
        return client, lay.META

    def meta(self, name: str) -> dict[str, Any]:
        """The stored metadata document of collection ``name`` (a copy; see :meth:`meta_cached`).

        Raises:
            IndexNotFound: no such collection.
        """
        found = self.meta_cached(name)
        if found is None:
            raise IndexNotFound(f"no collection {name!r} in {self.location}", hint="create it")
        return found

    def meta_cached(self, name: str) -> dict[str, Any] | None:
        """A copy of collection ``name``'s metadata row, or None when there is none.

        Served from the location's shared cache (:mod:`semsearch.stores.milvus.state`): always
        on Milvus Lite, for ``META_TTL`` seconds on a server. Searches read health and dim
        here, so they make no metadata round trip.
        """
        found = self._meta_entry(name)
        return copy.deepcopy(found) if found is not None else None

    def _meta_entry(self, name: str) -> dict[str, Any] | None:
        """The cached metadata row itself (not to be changed), as :meth:`meta_cached`."""
        hit = self.state.meta.get(name)
        lite = self.target.lite_path is not None
        if hit is None or not (lite or time.monotonic() - hit[0] < META_TTL):
            rows = self._meta_rows([name])
            if not rows:
                self.state.meta.pop(name, None)
                return None
            hit = self.state.meta[name] = (time.monotonic(), rows[0])
        return hit[1]

    def forget_meta(self, name: str) -> None:
        """Drop ``name``'s cached metadata row (its collection was dropped)."""
        self.state.meta.pop(name, None)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the write lock for a block of writes and note the write
        (``LocationState.wrote``) when it ends, however it ends. Reads inside the block do not
        flush (see FLUSH_ROWS): a flush per batch is what this avoids."""
        with self._lock:
            outer, self._writing = self._writing, True
            try:
                yield
            except BaseException:
                self.state.failed()
                raise
            finally:
                self._writing = outer
                self.state.wrote()

    def put_meta(self, meta: dict[str, Any]) -> None:
        """Write a collection's metadata row (creating ``semsearch_meta`` if needed)."""
        client = self._connect()
        with self._lock, translated("writing collection metadata"):
            if not client.has_collection(lay.META):
                lay.create(client, lay.META, lay.meta_schema(), lay.index_params(client, "meta"))
            self._load(client, lay.META)
            doc = {k: v for k, v in meta.items() if k != "name"}
            row = {"name": meta["name"], "info": json.dumps(doc), "_v": lay.DUMMY_VECTOR}
            client.upsert(lay.META, [row])
            # no flush: Milvus persists inserts itself, and a flush per write seals a tiny
            # segment each time (Lite keeps unflushed writes across a crash too)
            self.state.meta[meta["name"]] = (time.monotonic(), copy.deepcopy(meta))

    def create_part(
        self,
        collection: str,
        kind: str,
        fields: list[dict[str, Any]],
        dim: int = 0,
        name: str | None = None,
        index: str | None = None,
    ) -> bool:
        """Create one Milvus collection of a semsearch collection: ``records`` (layout 2), or
        a ``chunks`` part called ``name`` (float32[dim] ``vector`` when ``dim``); False if it
        was."""
        client = self._connect()
        name = name or lay.part_name(collection, kind)
        schema = {
            "records": lambda: lay.records_schema(fields),
            "chunks": lambda: lay.chunks_schema(fields, dim),
        }[kind]()  # a chunk part of the current layout
        with self._lock, translated(f"creating {name}"):
            if created := not client.has_collection(name):
                params = lay.index_params(client, kind, index or self.target.index, dim)
                lay.create(client, name, schema, params)
            self._load(client, name)
        return created

    def rows_by(
        self,
        collection: str,
        kind: str,
        key: str,
        values: Sequence[Any],
        fields: list[str],
        extra: str = "",
    ) -> list[dict[str, Any]]:
        """Rows of one part whose ``key`` is among ``values`` (batched ``in`` queries).

        With ``key`` the primary key (:data:`PRIMARY_KEYS`) and no ``extra``, Milvus Lite
        answers by point lookups instead of a filter pass, in unflushed rows as fast as in
        flushed ones, so such a read does not flush first (ingestion asks for record hashes
        between its writes). (Not ``client.get``: pymilvus 3.0.2 writes string ids into its
        expression unescaped.)
        """
        point = not extra and PRIMARY_KEYS.get(kind) == key
        found = self._coll(collection, kind, flush=not point)
        if found is None or not values:
            return []
        client, name = found
        out: list[dict[str, Any]] = []
        unique = list(dict.fromkeys(values))
        for start in range(0, len(unique), _BATCH):
            batch = unique[start : start + _BATCH]
            expr = f"{key} in [{', '.join(literal(v) for v in batch)}]"
            with translated(f"reading {kind}"):
                out += client.query(
                    name, filter=f"{expr} and {extra}" if extra else expr, output_fields=fields
                )
        return out

    def scan(
        self, collection: str, kind: str, expr: str, fields: list[str]
    ) -> Iterator[dict[str, Any]]:
        """Every row of one part matching ``expr``, in pages (a query iterator).

        A short page is the last: pymilvus 3.0.2 writes the string key cursor of the next
        page into its expression unescaped (``pk > "<last key>"``), which fails when that key
        holds ``"``, ``\\`` or a newline; stopping there keeps scans of up to one page safe.
        """
        found = self._coll(collection, kind)
        if found is None:
            return
        client, name = found
        with translated(f"scanning {kind}"):
            it = client.query_iterator(name, batch_size=_PAGE, filter=expr, output_fields=fields)
            try:
                while page := it.next():
                    yield from page
                    if len(page) < _PAGE:
                        break
            finally:
                it.close()

    def count_where(self, collection: str, kind: str, expr: str) -> int:
        """Number of rows of one part matching ``expr``."""
        found = self._coll(collection, kind)
        if found is None:
            return 0
        client, name = found
        with translated(f"counting {kind}"):
            rows = client.query(name, filter=expr, output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def check_dim(self, collection: str, dim: int) -> int | None:
        """The stored dim; raises DimensionMismatch when it differs from ``dim``."""
        stored = self.meta(collection).get("dim")
        check_vectors_dim(collection, stored, dim)
        return stored

    @staticmethod
    def filter_expr(where: Filter | None) -> str:
        """The Milvus expression of a filter AST ('' for none)."""
        return compile_filter(where) if where is not None else ""

    @staticmethod
    def compiles_id_match(match: IdMatch) -> bool:
        """True when filters express this record-id match exactly (``PartialIdFilters``): path
        globs with ``?`` or ``[...]`` are not, and search checks them in Python instead."""
        return compiles_id_match(match)

    @staticmethod
    def attr_columns(fields: list[dict[str, Any]]) -> list[str]:
        """The ``f_*`` columns of the declared fields."""
        return [column(f["name"]) for f in fields]

    @staticmethod
    def all_expr(expr: str) -> str:
        """``expr``, or a match-all expression on ``chunk_id`` when it is empty."""
        return expr or "chunk_id >= 0"

    def client(self) -> Any:
        """The connected pymilvus client (connecting, and for Lite creating the folder, if needed)."""
        return self._connect()
