"""Every error status of the HTTP API has the one shape {error, message, hint}, and no response
leaks a stack trace or an absolute path. Plumbing tests with the FakeEmbedder (fake:32)."""

from __future__ import annotations

import json
import re

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.server.http.errors import redact_paths
from semsearch.server.http.state import Limits
from tests.http.conftest import ITEM_FIELDS

_TRACE = re.compile(r"Traceback|File \"|line \d+, in ")


def assert_error(response, status: int, error: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "hint"}
    assert isinstance(body["message"], str) and body["message"]
    if error is not None:
        assert body["error"] == error
    text = response.text
    assert not _TRACE.search(text), text
    assert "/tmp/" not in text and "/work/" not in text and "/home/" not in text, text
    return body


def test_400_bad_filter_names_the_field_and_hints_the_declared_ones(items_client) -> None:
    client, _ = items_client
    body = assert_error(
        client.post("/collections/items/search", json={"query": "x", "where": {"colour": "blue"}}),
        400,
        "invalid_filter",
    )
    assert "colour" in body["message"]
    assert "category" in body["hint"]


def test_400_offset_with_a_ranked_query(items_client) -> None:
    client, _ = items_client
    body = {"query": "umbrella", "offset": 1}
    assert_error(client.post("/collections/items/search", json=body), 400, "invalid_query")


def test_400_record_with_wrong_field_type_writes_nothing(items_client) -> None:
    client, _ = items_client
    records = [{"id": "ok", "name": "fine"}, {"id": "bad", "name": "x", "category": 5}]
    body = assert_error(
        client.post("/collections/items/records", json={"records": records}), 400, "invalid_record"
    )
    assert "category" in body["message"]
    assert client.get("/collections/items/records/ok").status_code == 404


def test_400_malformed_json_body(items_client) -> None:
    client, _ = items_client
    response = client.post(
        "/collections/items/search",
        content=b'{"query": ',
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_json")


def test_400_bad_field_type_when_creating_a_collection(items_client) -> None:
    client, _ = items_client
    body = {"name": "other", "fields": {"price": "money"}}
    assert_error(client.post("/collections", json=body), 400)


def test_404_unknown_collection_lists_the_existing_ones(items_client) -> None:
    client, _ = items_client
    for response in (
        client.get("/collections/nope/stats"),
        client.post("/collections/nope/search", json={"query": "x"}),
        client.post("/collections/nope/records", json={"records": [{"id": "a"}]}),
        client.post("/collections/nope/reindex"),
    ):
        body = assert_error(response, 404, "index_not_found")
        assert "items" in body["hint"]


def test_404_unknown_record_and_unknown_route(items_client) -> None:
    client, _ = items_client
    assert_error(client.get("/collections/items/records/nothing-here"), 404, "record_not_found")
    assert_error(client.get("/no/such/route"), 404, "not_found")


def test_405_wrong_method_has_the_same_shape(items_client) -> None:
    client, _ = items_client
    assert_error(client.put("/collections"), 405, "method_not_allowed")


def test_409_schema_conflict(items_client) -> None:
    client, _ = items_client
    body = {
        "name": "items",
        "fields": {**ITEM_FIELDS, "category": "int"},
        "text": ["name", "description"],
    }
    assert_error(client.post("/collections", json=body), 409, "schema_conflict")


def test_409_model_mismatch_when_the_server_model_differs(make_client, tmp_path) -> None:
    import semsearch

    with semsearch.connect(tmp_path / "mm.embed.db") as db:  # built with fake:16
        db.collection("old", embedder=FakeEmbedder(dim=16)).upsert([{"id": "a", "text": "owl"}])
    client, _ = make_client(
        name="mm.embed.db", embedder=FakeEmbedder(dim=32)
    )  # served with fake:32
    for mode in ("semantic", "hybrid"):
        search = client.post("/collections/old/search", json={"query": "owl", "mode": mode})
        body = assert_error(search, 409, "model_mismatch")
        assert "fake:16" in body["message"]
    # keyword search and reads need no embedder: they still work (plumbing, fake embedder)
    keyword = client.post("/collections/old/search", json={"query": "owl", "mode": "keyword"})
    assert keyword.status_code == 200 and [h["id"] for h in keyword.json()["hits"]] == ["a"]
    assert client.get("/collections/old/stats").status_code == 200


def test_413_too_many_records_in_one_batch(make_client) -> None:
    client, _ = make_client(limits=Limits(max_batch=5))
    client.post("/collections", json={"name": "c"})
    records = [{"id": str(i), "text": "x"} for i in range(6)]
    body = assert_error(
        client.post("/collections/c/records", json={"records": records}), 413, "payload_too_large"
    )
    assert "5" in body["message"]
    assert client.get("/collections/c/stats").json()["records"] == 0


def test_413_body_larger_than_the_limit(make_client) -> None:
    client, _ = make_client(limits=Limits(max_body_bytes=1000))
    client.post("/collections", json={"name": "c"})
    big = json.dumps({"records": [{"id": "a", "text": "x" * 2000}]})
    response = client.post(
        "/collections/c/records", content=big, headers={"Content-Type": "application/json"}
    )
    assert_error(response, 413, "payload_too_large")


def test_413_body_without_content_length_is_measured(make_client) -> None:
    client, _ = make_client(limits=Limits(max_body_bytes=1000))
    client.post("/collections", json={"name": "c"})

    def chunks():
        yield b'{"records": [{"id": "a", "text": "'
        for _ in range(10):
            yield b"y" * 200
        yield b'"}]}'

    response = client.post(
        "/collections/c/records", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert_error(response, 413, "payload_too_large")


def test_422_validation_names_the_bad_field(items_client) -> None:
    client, _ = items_client
    body = assert_error(
        client.post("/collections/items/search", json={"query": "x", "limit": 0}),
        422,
        "validation_error",
    )
    assert "limit" in body["message"]
    body = assert_error(
        client.post("/collections/items/search", json={"query": "x", "mode": "fuzzy"}), 422
    )
    assert "mode" in body["message"]


def test_503_semantic_search_while_the_embedder_is_down(make_client) -> None:
    embedder = FakeEmbedder()
    client, _ = make_client(embedder=embedder)
    client.post("/collections", json={"name": "c"})
    embedder.fail = True
    body = assert_error(
        client.post("/collections/c/search", json={"query": "x"}), 503, "embedder_unavailable"
    )
    assert body["hint"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no collection 'x' in /tmp/abc/def.embed.db", "no collection 'x' in def.embed.db"),
        ("cannot open '/work/main/x.db': gone", "cannot open 'x.db': gone"),
        ("create one with POST /collections", "create one with POST /collections"),
        ("see /collections/items/stats", "see /collections/items/stats"),
    ],
)
def test_redact_paths_keeps_routes_and_drops_directories(text: str, expected: str) -> None:
    assert redact_paths(text) == expected


def test_500_unexpected_error_hides_the_trace_and_paths(items_client, monkeypatch) -> None:
    client, state = items_client

    def broken(name: str):
        raise RuntimeError(f"disk on fire at {state.db.location}")

    monkeypatch.setattr(state, "collection", broken)
    body = assert_error(client.get("/collections/items/stats"), 500, "internal_error")
    assert "fire" not in body["message"]
