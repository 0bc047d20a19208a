"""Hostile or careless request bodies get the one error shape with a hint and the right status,
and nothing stored changes. Plumbing tests with the FakeEmbedder (fake:32) on a real SQLite file.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from semsearch.filters import MAX_FILTER_DEPTH
from semsearch.server.http.state import Limits
from semsearch.validation import MAX_VALUE_DEPTH
from tests.http.conftest import ADMIN_KEY, KEYS, WRITE_KEY, auth
from tests.http.test_api_errors import assert_error

JSON = {"content-type": "application/json"}


def post_raw(client: Any, path: str, body: bytes) -> Any:
    return client.post(path, content=body, headers=JSON)


def test_fake_embedder_deep_record_is_refused_and_search_keeps_working(items_client) -> None:
    client, _ = items_client
    extra = json.loads("[" * 900 + "]" * 900)
    body = {"records": [{"id": "deep9", "name": "x", "extra": extra}]}
    error = assert_error(client.post("/collections/items/records", json=body), 400)
    assert error["error"] == "invalid_record"
    assert "deep9" in error["message"] and str(MAX_VALUE_DEPTH) in error["message"]
    assert client.get("/collections/items/records/deep9").status_code == 404
    search = client.post("/collections/items/search", json={"query": "x", "mode": "keyword"})
    assert search.status_code == 200


@pytest.mark.parametrize("levels", [MAX_FILTER_DEPTH + 1, 100, 400])
def test_fake_embedder_deep_where_is_400_invalid_filter(items_client, levels: int) -> None:
    client, _ = items_client
    where: dict[str, Any] = {"category": "clothing"}
    for _ in range(levels):
        where = {"$and": [where]}
    body = {"query": "blazer", "where": where}
    error = assert_error(client.post("/collections/items/search", json=body), 400)
    assert error["error"] == "invalid_filter" and str(MAX_FILTER_DEPTH) in error["message"]


@pytest.mark.parametrize(
    "where",
    [
        b'{"location": {"$gt": 99999999999999999999999}}',
        b'{"location": NaN}',
    ],
)
def test_fake_embedder_unbindable_filter_values_are_400(make_client, where: bytes) -> None:
    client, _ = make_client()
    spec = {"name": "n", "fields": {"location": "float"}, "text": ["name"]}
    assert client.post("/collections", json=spec).status_code == 201
    response = post_raw(client, "/collections/n/search", b'{"query":"x","where":' + where + b"}")
    assert assert_error(response, 400)["error"] == "invalid_filter"


@pytest.mark.parametrize(
    "body",
    [
        b'{"query": "caf\xe9"}',  # Latin-1, not UTF-8
        b'{"query": "x", "where": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # too deep to parse
    ],
)
def test_fake_embedder_unreadable_body_is_400_invalid_json_with_a_hint(items_client, body) -> None:
    client, _ = items_client
    error = assert_error(post_raw(client, "/collections/items/search", body), 400)
    assert error["error"] == "invalid_json" and "UTF-8" in error["hint"]


@pytest.mark.parametrize("key", ["query", "folder", "hypothetical_answer"])
def test_fake_embedder_lone_surrogate_is_400_in_every_search_field(items_client, key) -> None:
    client, _ = items_client
    body = json.dumps({"query": "x", key: "a"}).replace('"a"', '"a\\ud800"').encode()
    error = assert_error(post_raw(client, "/collections/items/search", body), 400)
    assert error["error"] == "invalid_query" and key in error["message"]
    assert "surrogate" in error["hint"]


def test_fake_embedder_lone_surrogate_in_record_text_and_schema_is_400(items_client) -> None:
    client, _ = items_client
    record = b'{"records": [{"id": "s", "text": "a\\ud800"}]}'
    error = assert_error(post_raw(client, "/collections/items/records", record), 400)
    assert error["error"] == "invalid_record"
    schema = b'{"name": "s1", "text": ["a\\ud800"]}'
    assert_error(post_raw(client, "/collections", schema), 400)
    assert "s1" not in [c["name"] for c in client.get("/collections").json()]


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"query": "x", "limit": "5"}, "limit"),
        ({"query": "x", "min_score": "0.1"}, "min_score"),
        ({"query": "x", "include_vectors": "true"}, "include_vectors"),
        ({"query": "x", "limt": 5}, "limt"),
    ],
)
def test_fake_embedder_search_body_is_strict_and_refuses_unknown_keys(
    items_client, body: dict[str, Any], key: str
) -> None:
    client, _ = items_client
    error = assert_error(client.post("/collections/items/search", json=body), 422)
    assert error["message"].startswith(f"{key}: ")
    ok = client.post("/collections/items/search", json={"query": "x", "limit": 5, "min_score": 0})
    assert ok.status_code == 200  # an int is a valid float, as in Python


def test_fake_embedder_collection_and_records_bodies_refuse_unknown_keys(items_client) -> None:
    client, _ = items_client
    spec = {"name": "c5", "fields": {}, "txt": ["name"]}
    assert (
        "txt: unknown key" in assert_error(client.post("/collections", json=spec), 422)["message"]
    )
    body = {"records": [{"id": "a", "text": "x"}], "upsert": True}
    assert_error(client.post("/collections/items/records", json=body), 422)
    extra = {"records": [{"id": "z", "name": "zebra", "colour": "striped"}]}  # records stay open
    assert client.post("/collections/items/records", json=extra).status_code == 200


def test_fake_embedder_text_template_naming_no_field_of_the_records_is_400(make_client) -> None:
    client, _ = make_client()
    spec = {"name": "c4", "fields": {"name": "str"}, "text": ["nosuch"]}
    assert client.post("/collections", json=spec).status_code == 201
    records = {"records": [{"id": "a", "name": "blazer"}, {"id": "b", "name": "umbrella"}]}
    error = assert_error(client.post("/collections/c4/records", json=records), 400)
    assert error["error"] == "invalid_record" and "nosuch" in error["message"]
    assert client.get("/collections/c4").json()["records"] == 0  # nothing was written


def test_fake_embedder_oversized_search_body_hint_fits_the_route(make_client) -> None:
    client, _ = make_client(limits=Limits(max_body_bytes=500))
    search = client.post("/collections/x/search", json={"query": "x" * 600})
    hint = assert_error(search, 413, "payload_too_large")["hint"]
    assert "records" not in hint and "500 bytes" in hint
    records = client.post("/collections/x/records", json={"records": [{"id": "x" * 600}]})
    assert "fewer records" in assert_error(records, 413)["hint"]


def test_fake_embedder_forbidden_message_uses_the_right_article(make_client) -> None:
    client, _ = make_client(keys=KEYS)
    body = {"name": "c", "fields": {}}
    error = assert_error(client.post("/collections", json=body, headers=auth(WRITE_KEY)), 403)
    assert "this needs an admin key; yours is write" in error["message"]
    assert client.post("/collections", json=body, headers=auth(ADMIN_KEY)).status_code == 201
