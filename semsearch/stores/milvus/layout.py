"""The Milvus layout of a semsearch store: collection names, schemas and index parameters.

Per semsearch collection ``name`` there is one Milvus collection, its chunk part (and another
for sentence windows, see :mod:`semsearch.stores.milvus.windows`), named from a prefix
``ss_<slug>_<hash8>`` (Milvus names allow only letters, digits and ``_``). This is layout 4
(:data:`LAYOUT`, stored as ``"layout"`` in the metadata document):

- the chunk part, named in the metadata (``"chunks"``: ``<prefix>_chunks_<g>``, a new
  ``g`` each time it is rebuilt): one row per chunk: ``chunk_id`` (int64), ``record_id``,
  ``ordinal``, ``text``, ``folded`` (the text casefolded, for the keyword substring scan),
  ``content_hash``, ``status`` (``embedded``/``pending``/``failed``, exact; :data:`RECORD`
  for rows that are no chunk), ``error``, ``loc`` (JSON: offsets, heading path, lines), the
  declared fields as typed nullable ``f_*`` columns, ``body``, ``record_hash``, ``nparts``,
  ``kw`` (head rows: the record's keyword terms, :mod:`semsearch.stores.milvus.keyword_columns`;
  ``""`` on other rows), and, once the dimension is known, ``vector`` (float32[dim], metric
  COSINE). A row not
  embedded holds :func:`placeholder` as its vector (Milvus vectors cannot be null), and vector
  reads filter on ``status == "embedded"`` (on Milvus Lite only while some row is not
  embedded: ``MilvusAccess.vector_filter``).
- each record has a **head row** there, id :func:`head_id` (a hash of the record id alone, so
  reading a record is a primary-key lookup): the row of its ordinal-0 chunk, or for a record
  without chunks a row of status :data:`RECORD` (no text, no terms, placeholder vector). The
  head row carries ``record_hash`` (the record's content hash: written last, it is the commit
  marker), ``nparts`` and ``body``, the first slice of the JSON document
  ``{"fields": ..., "text": ..., "chunks": [chunk ids]}``; when that exceeds
  :data:`BODY_PART_CHARS`, the further slices are **part rows** (id :func:`part_id` of part
  number, record id and record hash; ordinal ``-part``; status :data:`RECORD`; placeholder
  vector; no ``f_*`` values). Other chunk rows have an empty ``body`` and ``record_hash`` and
  ``nparts`` 0, and ids from :func:`chunk_id` (record id, ordinal, offsets, content hash).
  Rows of status :data:`RECORD` are never searched (empty ``terms`` match no keyword; vector
  reads keep ``embedded`` rows) and never counted as chunks. Records are counted, listed and
  found by ``ordinal == 0 and record_hash != ""`` (head rows).
- the id handed out for a record's ordinal-0 chunk (in ``WriteResult.pending`` and
  ``pending_chunks``) is its :func:`chunk_id` (its **ticket**), not the head row's id, which
  is the same for every version of the record: a vector, failure or windows for an old
  version's first chunk are then told apart from the new one's
  (``LocationState.tickets``, :mod:`semsearch.stores.milvus.writes`).

Write order (Milvus has no transactions): the other chunk rows and part rows, then the head
rows, then the rows the write replaces deleted (see :mod:`semsearch.stores.milvus.batch`).

The write path writes each chunk row once, with its vector: on Milvus Lite the rows of a
``write_records`` batch wait in the process (:mod:`semsearch.stores.milvus.batch`) until
``set_vectors`` brings their vectors, and go out with a placeholder only when anything else
touches the collection first (see there).

Vector reuse by content hash: a record's own previous chunks (found by primary key from the
chunk list of its stored body) give their vectors to new chunks of the same content. Across
records, a chunk reuses any embedded chunk of the same content: on a server through a filter on
the indexed ``content_hash``; on Milvus Lite (one process per folder) through a
``content_hash -> chunk_id`` map kept in the process, read by one scan of the collection the
first time a process writes to it (Lite evaluates a ``content_hash`` filter over every
unflushed row, which made filling a collection quadratic), each hit checked by primary key.

Layout 3 (metadata ``"layout": 3``) was layout 4 with ``terms`` (each chunk's snowball stems,
analysed by Milvus' BM25 function into ``sparse``, keyword search's ranking) in place of
``folded`` and ``kw``.

Layout 2 (metadata ``"layout": 2``) kept the records in a second Milvus collection
``<prefix>_records``: one row per record (more when its JSON body exceeds one VARCHAR):
``pk`` = ``"<part>:<id>"``, ``record_id``, ``part``, ``nparts``, ``content_hash``, ``body``,
and on part 0 the ``f_*`` columns; its chunk part had no ``body``, ``record_hash`` or
``nparts`` and no head rows (every chunk id from :func:`chunk_id`). Layout 1 (metadata without
``"layout"``) had ``<prefix>_chunks`` without vectors, ``<prefix>_vectors`` (one row per
embedded chunk) and ``<prefix>_hashes`` (``content_hash`` -> ``chunk_id``) besides
``_records``. Reads serve layouts 1 to 3 as they are; the first write to such a collection
(or ``semsearch compact``) migrates it to layout 4 (:mod:`semsearch.stores.milvus.migrate`).

A store-wide ``semsearch_meta`` collection holds one row per semsearch collection: its name
and a JSON document with schema, model id, dim, options, layout, chunk part name and
timestamps (and, on Milvus Lite while a process writes, the :data:`WRITING` mark of
:mod:`semsearch.stores.milvus.lookup`); on a server also each writing process's keyword stamp
rows (``<collection>#kw#<token>``, :mod:`semsearch.stores.milvus.keyword_build`).

Scalar INVERTED indexes (:data:`SCALAR_INDEXES`) cover the columns writes look rows up by.

Milvus needs a vector field in every collection: ``semsearch_meta`` (and layout 2's
``*_records``) carry a constant 2-d ``_v`` column that is never searched; the chunk part has
``vector`` once the dimension is known (before layout 4 also ``sparse``), and until then
``_v``.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

from semsearch.stores.milvus.expr import column

__all__ = [
    "BODY_PART_CHARS",
    "HEADS",
    "LAYOUT",
    "MAX_TOPK",
    "META",
    "RECORD",
    "VARCHAR_MAX",
    "WRITING",
    "chunk_id",
    "chunk_part",
    "chunks_schema",
    "create",
    "declared_fields",
    "hashes_schema",
    "head_id",
    "index_params",
    "meta_schema",
    "names",
    "now",
    "part_id",
    "part_name",
    "placeholder",
    "prefix",
    "record_pk",
    "records_schema",
    "vectors_schema",
]

META = "semsearch_meta"
#: The layout new writes produce (see the module docstring); metadata without one is layout 1.
LAYOUT = 4
#: The ``status`` of a chunk-part row that is not a chunk: the head row of a record without
#: chunks, and the rows holding a long body's further parts (never searched or counted).
RECORD = "record"
#: The head rows of a layout-3 or later chunk part: one per committed record.
HEADS = 'ordinal == 0 and record_hash != ""'
#: The metadata key of the mark a Milvus Lite write sets while it runs.
WRITING = "writing"
#: Milvus' largest ``limit`` (topk) per search or query page.
MAX_TOPK = 16384
#: Milvus' VARCHAR limit in bytes; a body slice of this many characters always fits (<= 4 B/char).
VARCHAR_MAX = 65535
#: Most items of a ``list[str]`` field (its ``ARRAY`` column's ``max_capacity``).
LIST_MAX_ITEMS = 4096
BODY_PART_CHARS = VARCHAR_MAX // 4
#: Index parameters per vector index type (metric COSINE). ``search`` holds query-time params.
INDEXES: dict[str, dict[str, Any]] = {
    "HNSW": {"build": {"M": 16, "efConstruction": 200}, "search": {"ef": 128}},
    "IVF_FLAT": {"build": {"nlist": 128}, "search": {"nprobe": 16}},
    "AUTOINDEX": {"build": {}, "search": {}},
    "FLAT": {"build": {}, "search": {}},
}
_DUMMY = "_v"
#: The dummy vector column (never searched) of collections that need one.
DUMMY_FIELD = _DUMMY


def prefix(collection: str) -> str:
    """``ss_<slug>_<hash8>``: the start of every Milvus collection name of ``collection``."""
    slug = re.sub(r"[^A-Za-z0-9_]", "_", collection)[:40]
    digest = hashlib.blake2b(collection.encode(), digest_size=4).hexdigest()
    return f"ss_{slug}_{digest}"


def names(collection: str) -> dict[str, str]:
    """Layout 1's Milvus collection names: ``records`` (layout 2's too), ``chunks``,
    ``vectors``."""
    return {kind: f"{prefix(collection)}_{kind}" for kind in ("records", "chunks", "vectors")}


def chunk_part(collection: str, generation: int) -> str:
    """The chunk part (layouts 2 and 3) of ``collection``, built ``generation`` (rebuilds count up)."""
    return f"{prefix(collection)}_chunks_{generation}"


def holds_vectors(name: str) -> bool:
    """True for a Milvus collection holding chunk vectors (``*_chunks_<g>``, layout 1's
    ``*_chunks`` and ``*_vectors``): its flush starts Milvus Lite's vector index build."""
    return re.search(r"_(chunks(_\d+)?|vectors)$", name) is not None


def placeholder(dim: int) -> list[float]:
    """The vector of a chunk row not embedded (a unit vector; reads never return it)."""
    return [1.0] + [0.0] * (dim - 1)


def part_name(collection: str, kind: str) -> str:
    """The Milvus name of one part: a kind of :func:`names`, or ``hashes``."""
    if kind == "hashes":
        return names(collection)["records"].removesuffix("_records") + "_hashes"
    return names(collection)[kind]


def declared_fields(schema_json: str) -> list[dict[str, Any]]:
    """The declared fields (``{"name", "type", ...}`` each) of a stored schema's JSON."""
    return list(json.loads(schema_json)["fields"])


def now() -> str:
    """The metadata's write time: UTC, ISO 8601, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_pk(part: int, record_id: str) -> str:
    """The primary key of body part ``part`` of record ``record_id`` in layout 2's
    ``*_records``."""
    return f"{part}:{record_id}"


def chunk_id(record_id: str, ordinal: int, start: int, end: int, content_hash: str) -> int:
    """A stable positive int63 id for a chunk (blake2b of its identity; collisions ~2**-63)."""
    key = f"{record_id}\x00{ordinal}\x00{start}\x00{end}\x00{content_hash}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") >> 1


def _id(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


def head_id(record_id: str) -> int:
    """Layout 3: the chunk id of record ``record_id``'s head row (its ordinal-0 chunk, or a
    row of status :data:`RECORD` when it has no chunk): a positive int63 hash of the record id
    alone, so a record is read by primary key."""
    return _id(f"head\x00{record_id}")


def part_id(part: int, record_id: str, record_hash: str) -> int:
    """Layout 3: the chunk id of body part ``part`` (>= 1) of record ``record_id`` at content
    hash ``record_hash`` (a new version's parts never overwrite the committed version's)."""
    return _id(f"part\x00{part}\x00{record_id}\x00{record_hash}")


def _schema(dynamic: bool = False) -> Any:
    from pymilvus import MilvusClient

    return MilvusClient.create_schema(auto_id=False, enable_dynamic_field=dynamic)


def _add_fields(schema: Any, fields: list[dict[str, Any]]) -> None:
    from pymilvus import DataType

    for f in fields:
        name, kind = column(f["name"]), f["type"]
        if kind == "list[str]":
            schema.add_field(
                name,
                DataType.ARRAY,
                element_type=DataType.VARCHAR,
                max_capacity=LIST_MAX_ITEMS,
                max_length=VARCHAR_MAX,
                nullable=True,
            )
        elif kind == "str":
            schema.add_field(name, DataType.VARCHAR, max_length=VARCHAR_MAX, nullable=True)
        else:
            dtype = {"int": DataType.INT64, "float": DataType.DOUBLE, "bool": DataType.BOOL}[kind]
            schema.add_field(name, dtype, nullable=True)


def meta_schema() -> Any:
    """``semsearch_meta``: ``name`` (pk), ``info`` (JSON text), ``_v`` (dummy 2-d vector)."""
    from pymilvus import DataType

    s = _schema()
    s.add_field("name", DataType.VARCHAR, is_primary=True, max_length=256)
    s.add_field("info", DataType.VARCHAR, max_length=VARCHAR_MAX)
    s.add_field(_DUMMY, DataType.FLOAT_VECTOR, dim=2)
    return s


def records_schema(fields: list[dict[str, Any]]) -> Any:
    """Layout 2's ``*_records`` with the declared fields as ``f_*`` columns (kept for the
    tests that build layout 2: tests/milvus/layout2.py)."""
    from pymilvus import DataType

    s = _schema()
    s.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=VARCHAR_MAX)
    s.add_field("record_id", DataType.VARCHAR, max_length=VARCHAR_MAX)
    s.add_field("part", DataType.INT64)
    s.add_field("nparts", DataType.INT64)
    s.add_field("content_hash", DataType.VARCHAR, max_length=128)
    s.add_field("body", DataType.VARCHAR, max_length=VARCHAR_MAX)
    s.add_field(_DUMMY, DataType.FLOAT_VECTOR, dim=2)
    _add_fields(s, fields)
    return s


def chunks_schema(fields: list[dict[str, Any]], dim: int = 0, layout: int = LAYOUT) -> Any:
    """The chunk part: with ``dim``, a float32[dim] ``vector`` (layout >= 2); from layout 3 the
    record columns ``body``, ``record_hash`` and ``nparts``; in layout 4 the keyword columns
    ``folded`` (chunks) and ``kw`` (head rows; :mod:`semsearch.stores.milvus.keyword_columns`),
    before it ``terms`` (snowball stems of ``text``) with the BM25 function into ``sparse``."""
    from pymilvus import DataType, Function, FunctionType

    s = _schema()
    s.add_field("chunk_id", DataType.INT64, is_primary=True)
    s.add_field("record_id", DataType.VARCHAR, max_length=VARCHAR_MAX)
    s.add_field("ordinal", DataType.INT64)
    s.add_field("text", DataType.VARCHAR, max_length=VARCHAR_MAX)
    if layout >= 4:
        s.add_field("folded", DataType.VARCHAR, max_length=VARCHAR_MAX)
    else:
        s.add_field("terms", DataType.VARCHAR, max_length=VARCHAR_MAX, enable_analyzer=True)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    s.add_field("content_hash", DataType.VARCHAR, max_length=128)
    s.add_field("status", DataType.VARCHAR, max_length=16)
    s.add_field("error", DataType.VARCHAR, max_length=1024)
    s.add_field("loc", DataType.VARCHAR, max_length=VARCHAR_MAX)
    if dim:
        s.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    elif layout >= 4:  # Milvus needs a vector field (before layout 4, ``sparse`` was one)
        s.add_field(_DUMMY, DataType.FLOAT_VECTOR, dim=2)
    if layout >= 3:
        s.add_field("body", DataType.VARCHAR, max_length=VARCHAR_MAX)
        s.add_field("record_hash", DataType.VARCHAR, max_length=128)
        s.add_field("nparts", DataType.INT64)
    if layout >= 4:
        s.add_field("kw", DataType.VARCHAR, max_length=VARCHAR_MAX)
    _add_fields(s, fields)
    if layout < 4:
        s.add_function(
            Function(
                name="bm25",
                function_type=FunctionType.BM25,
                input_field_names=["terms"],
                output_field_names=["sparse"],
            )
        )
    return s


def hashes_schema() -> Any:
    """Layout 1's ``*_hashes``: ``content_hash`` (pk) -> ``chunk_id`` of a vector with that
    content (kept for the tests that build layout 1: tests/milvus/layout1.py)."""
    from pymilvus import DataType

    s = _schema()
    s.add_field("content_hash", DataType.VARCHAR, is_primary=True, max_length=128)
    s.add_field("chunk_id", DataType.INT64)
    s.add_field(_DUMMY, DataType.FLOAT_VECTOR, dim=2)
    return s


def vectors_schema(fields: list[dict[str, Any]], dim: int) -> Any:
    """Layout 1's ``*_vectors`` with a float32[dim] ``vector`` (kept as ``hashes_schema``)."""
    from pymilvus import DataType

    s = _schema()
    s.add_field("chunk_id", DataType.INT64, is_primary=True)
    s.add_field("record_id", DataType.VARCHAR, max_length=VARCHAR_MAX)
    s.add_field("content_hash", DataType.VARCHAR, max_length=128)
    s.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    _add_fields(s, fields)
    return s


#: Scalar columns with an INVERTED index, per kind: the keys writes look rows up by (old
#: chunks of a record, vectors to reuse by content hash), so a write reads its own rows instead
#: of scanning every row (Milvus Lite evaluates unindexed filters row by row).
SCALAR_INDEXES: dict[str, tuple[str, ...]] = {
    "records": ("record_id",),
    "chunks": ("record_id", "content_hash"),
    "vectors": ("record_id", "content_hash"),
}


def index_params(
    client: Any, kind: str, vector_index: str = "HNSW", dim: int = 0, layout: int = LAYOUT
) -> Any:
    """Index parameters for a collection of ``kind`` (meta/records/chunks/vectors); a chunk
    part with ``dim`` also indexes its ``vector``, before layout 4 its ``sparse`` too."""
    params = client.prepare_index_params()
    if kind in ("meta", "records", "hashes"):
        params.add_index(field_name=_DUMMY, index_type="FLAT", metric_type="L2")
    elif kind == "chunks" and layout < 4:
        params.add_index(
            field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25"
        )
    elif kind == "chunks" and not dim:
        params.add_index(field_name=_DUMMY, index_type="FLAT", metric_type="L2")
    if kind == "vectors" or (kind == "chunks" and dim):
        params.add_index(
            field_name="vector",
            index_type=vector_index,
            metric_type="COSINE",
            params=INDEXES[vector_index]["build"],
        )
    for name in SCALAR_INDEXES.get(kind, ()):
        params.add_index(field_name=name, index_type="INVERTED")
    return params


def create(client: Any, name: str, schema: Any, params: Any) -> None:
    """Create an empty Milvus collection with its indexes, and load it.

    ``create_index(..., sync=False)`` (pymilvus' documented option): with the default
    ``sync=True`` pymilvus polls each index's state and sleeps 0.5 s before the first poll,
    even though an index on an empty collection is ready at once (9 indexes made a new
    semsearch collection cost 4.5 s of sleep on Milvus Lite). The server has accepted the index
    when the call returns, and it indexes the rows written later as they are sealed.
    """
    client.create_collection(name, schema=schema)
    client.create_index(name, params, sync=False)
    client.load_collection(name)


DUMMY_VECTOR = [1.0, 0.0]


def loc_json(
    char_start: int,
    char_end: int,
    heading_path: tuple[str, ...],
    line_start: int | None,
    line_end: int | None,
) -> str:
    """The ``loc`` column: a chunk's offsets, heading path and line range as JSON."""
    return json.dumps([char_start, char_end, list(heading_path), line_start, line_end])
