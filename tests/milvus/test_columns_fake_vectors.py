"""Column-wise writes and index creation of the Milvus store (issue 23): real Milvus Lite, fake
8-d vectors (rows of the identity matrix).

``milvus_columns.write_rows`` inserts on Milvus Lite, relying on Lite replacing a row whose
primary key exists; these tests check that behaviour of Lite itself, that re-writing a stored
record through the store still replaces it (no duplicate rows, the new text and fields), and
that a new collection's indexes are created without pymilvus' polling sleep.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from semsearch.filters import parse_filter
from semsearch.results import Chunk
from semsearch.schema import Schema
from semsearch.stores.base import ChunkWrite, CollectionInfo, RecordWrite
from semsearch.stores.milvus import layout as lay
from semsearch.stores.milvus.columns import write_rows
from semsearch.stores.milvus.store import MilvusStore

NAME = "cols"
SCHEMA = Schema.from_types({"kind": "str"})


def _record(rid: str, text: str, kind: str | None) -> RecordWrite:
    digest = hashlib.sha256(text.encode()).hexdigest()
    chunk = ChunkWrite(Chunk(text, 0, 0, len(text)), text, digest)
    fields: dict[str, Any] = {} if kind is None else {"kind": kind}
    record_hash = hashlib.sha256(f"{text}|{kind}".encode()).hexdigest()
    return RecordWrite(rid, fields, fields, text, record_hash, [chunk])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MilvusStore]:
    s = MilvusStore(f"milvus-lite://{tmp_path / 'cols.db'}")
    s.create_collection(CollectionInfo(NAME, SCHEMA.to_json(), "fake:8", 8))
    try:
        yield s
    finally:
        s.close()


def _write(store: MilvusStore, records: list[RecordWrite], first_axis: int) -> None:
    result = store.write_records(NAME, records)
    ids = [p.chunk_id for p in result.pending]
    vectors = np.eye(8, dtype=np.float32)[first_axis : first_axis + len(ids)]
    store.set_vectors(NAME, ids, vectors)


def _rows(store: MilvusStore, kind: str) -> list[dict[str, Any]]:
    store.flush()
    return list(store.scan(NAME, kind, "chunk_id >= 0", ["chunk_id", "record_id"]))


def test_lite_insert_over_a_stored_primary_key_replaces_the_row_fake_vectors(
    store: MilvusStore,
) -> None:
    # a layout-2 records collection: the insert rule is Lite's, whatever the schema
    client, name = store.client(), "probe_records"
    fields = lay.declared_fields(SCHEMA.to_json())
    lay.create(client, name, lay.records_schema(fields), lay.index_params(client, "records"))
    row = {"pk": "0:a", "record_id": "a", "part": 0, "nparts": 1, "content_hash": "h1",
           "body": "one", "_v": lay.DUMMY_VECTOR, "f_kind": None}  # fmt: skip
    write_rows(client, name, [row], True)
    write_rows(client, name, [{**row, "body": "two"}], True)  # over the unflushed row
    client.flush(name)
    write_rows(client, name, [{**row, "body": "three"}], True)  # over a sealed segment
    found = client.query(name, filter='pk == "0:a"', output_fields=["body"])
    assert [r["body"] for r in found] == ["three"]
    client.flush(name)
    count = client.query(name, filter="part >= 0", output_fields=["count(*)"])
    assert count[0]["count(*)"] == 1


def test_column_writes_store_nulls_for_unset_fields_fake_vectors(store: MilvusStore) -> None:
    _write(store, [_record("a", "alpha", None), _record("b", "beta", "spell")], 0)
    store.flush()
    for kind, key in (("chunks", "record_id"),):  # layout 3: head rows hold the record
        client, name = store._coll(NAME, kind) or (None, "")
        rows = client.query(name, filter=f"{key} >= ''", output_fields=["record_id", "f_kind"])
        assert {r["record_id"]: r["f_kind"] for r in rows} == {"a": None, "b": "spell"}, kind
    spell = parse_filter({"kind": "spell"}, SCHEMA)
    query = np.eye(8, dtype=np.float32)[0]
    assert [h.record_id for h in store.vector_search(NAME, query, 5, spell)] == ["b"]


def test_rewriting_a_record_replaces_its_rows_fake_vectors(store: MilvusStore) -> None:
    _write(store, [_record("a", "alpha", "spell"), _record("b", "beta", "spell")], 0)
    # "a": the same text (its chunk and vector are kept and rewritten) with a new field value;
    # "b": a new text (a new chunk id; the old chunk and vector are deleted)
    _write(store, [_record("a", "alpha", "monster"), _record("b", "gamma", "spell")], 2)
    assert store.count(NAME) == 2
    assert {r.id: (r.text, r.fields) for r in store.get_records(NAME, ["a", "b"])} == {
        "a": ("alpha", {"kind": "monster"}),
        "b": ("gamma", {"kind": "spell"}),
    }
    assert sorted(r["record_id"] for r in _rows(store, "chunks")) == ["a", "b"]
    monster = parse_filter({"kind": "monster"}, SCHEMA)
    spell = parse_filter({"kind": "spell"}, SCHEMA)
    eye = np.eye(8, dtype=np.float32)
    # a kept its first vector (axis 0); b has the new text's vector (axis 2)
    assert [(h.record_id, round(h.score, 4)) for h in store.vector_search(NAME, eye[0], 5, monster)] == [("a", 1.0)]  # fmt: skip
    assert [(h.record_id, round(h.score, 4)) for h in store.vector_search(NAME, eye[2], 5, spell)] == [("b", 1.0)]  # fmt: skip


def test_a_new_collection_waits_for_no_index_fake_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pymilvus.client.grpc_handler import GrpcHandler

    waits: list[Any] = []
    monkeypatch.setattr(GrpcHandler, "wait_for_creating_index", lambda *a, **k: waits.append(a))
    store = MilvusStore(f"milvus-lite://{tmp_path / 'idx.db'}")
    try:
        store.create_collection(CollectionInfo(NAME, SCHEMA.to_json(), "fake:8", 8))
        client = store.client()
        names = {kind: store.part_name(NAME, kind) or "" for kind in ("chunks",)}
        indexed = {
            kind: sorted(
                client.describe_index(name, i)["field_name"] for i in client.list_indexes(name)
            )
            for kind, name in names.items()
        }
        parts = sorted(n for n in client.list_collections() if n.startswith(lay.prefix(NAME)))
    finally:
        store.close()
    assert waits == []
    # layout 4: no BM25 function, so no sparse index (keyword search ranks in the process)
    assert indexed == {"chunks": ["content_hash", "record_id", "vector"]}
    # layout 3 on: vectors and record bodies live in the chunk rows; no other Milvus collection
    assert parts == [f"{lay.prefix(NAME)}_chunks_1"]


class _RowClient:
    """A fake client with only the row API (no connection handler)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def insert(self, name: str, rows: list[dict[str, Any]]) -> None:
        self.calls.append(("insert", name, len(rows)))

    def upsert(self, name: str, rows: list[dict[str, Any]]) -> None:
        self.calls.append(("upsert", name, len(rows)))


def test_write_rows_falls_back_to_the_row_api_fake_client() -> None:
    client = _RowClient()
    write_rows(client, "x", [{"a": 1}, {"a": 2}], True)
    write_rows(client, "y", [{"a": 1}], False)
    write_rows(client, "z", [], False)
    assert client.calls == [("insert", "x", 2), ("upsert", "y", 1)]


def test_lite_inserts_are_blocking_calls_not_futures_fake_vectors(
    store: MilvusStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Milvus Lite a column-wise write is one blocking Insert call: gRPC Python starts a
    thread per future call (pymilvus' ``batch_insert`` path), about 2 ms each."""
    handler = store.client()._get_connection()
    futures: list[str] = []
    real = handler.batch_insert
    monkeypatch.setattr(
        handler, "batch_insert", lambda *a, **k: futures.append(a[0]) or real(*a, **k)
    )
    _write(store, [_record("a", "alpha", "spell")], 0)
    assert futures == []
    assert [r.id for r in store.get_records(NAME, ["a"])] == ["a"]
    eye = np.eye(8, dtype=np.float32)
    assert [h.record_id for h in store.vector_search(NAME, eye[0], 5, None)] == ["a"]


@pytest.mark.parametrize("rows_as", ["numpy", "lists"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 8), (256, 384)], ids=["1x1", "3x8", "256x384"])
def test_packed_float_vectors_parse_as_the_same_floats_fake_vectors(
    rows_as: str, shape: tuple[int, int]
) -> None:
    """The packed vector column is a valid protobuf ``FloatArray`` holding exactly the
    float32 values row after row (lengths of 1-, 2- and 3-byte varints: 4, 96 and 393,216
    bytes), whether the rows are float32 arrays or float lists."""
    from pymilvus.grpc_gen import schema_pb2

    from semsearch.stores.milvus.columns import packed_floats

    values = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    rows: list[Any] = list(values) if rows_as == "numpy" else [r.tolist() for r in values]
    dim, wire = packed_floats(rows)
    parsed = schema_pb2.FloatArray()
    parsed.ParseFromString(wire)
    assert dim == shape[1]
    np.testing.assert_array_equal(np.array(parsed.data, dtype=np.float32), values.ravel())


def test_vectors_written_as_float32_rows_read_back_exactly_fake_vectors(
    store: MilvusStore,
) -> None:
    """Vectors handed to ``set_vectors`` as a float32 array (kept as rows, packed at insert)
    are stored value for value: read back from Milvus, they equal the array given, also when
    the caller overwrites its array while the batch still waits for its other vectors."""
    rng = np.random.default_rng(9)
    records = [_record(f"r{i}", f"text number {i}", "a") for i in range(5)]
    result = store.write_records(NAME, records)
    vectors = rng.standard_normal((5, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = vectors.copy()
    ids = [p.chunk_id for p in result.pending]
    store.set_vectors(NAME, ids[:4], vectors[:4])  # the batch waits for its fifth vector
    vectors[:4] = 0.0  # meanwhile the caller reuses its buffer
    store.set_vectors(NAME, ids[4:], vectors[4:])
    store.flush()
    order = {p.chunk_id: k for k, p in enumerate(result.pending)}
    got = store.chunk_vectors(NAME, [r.id for r in records])
    for p in result.pending:
        (vector,) = got[p.record_id]
        np.testing.assert_array_equal(np.asarray(vector), expected[order[p.chunk_id]])
