"""Empty sub-filters through the HTTP API (issue 19, item 7): before, ``{"$and": [{}]}`` in a
search or a record listing answered 500 ``internal_error``. Real app, real SQLite; fake embedder.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def client(make_client):
    c, state = make_client()
    made = c.post("/collections", json={"name": "notes", "fields": {"i": "int"}})
    assert made.status_code == 201, made.text
    records = [{"id": "a", "text": "owls hunt", "i": 1}, {"id": "b", "text": "owls sleep", "i": 2}]
    assert c.post("/collections/notes/records", json={"records": records}).status_code == 200
    assert state.worker.wait_idle(10)  # embedded, so semantic search sees both
    return c


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
@pytest.mark.parametrize(
    ("where", "expected"),
    [({"$and": [{}]}, ["a", "b"]), ({"$or": [{}, {"i": 1}]}, ["a", "b"]), ({"$not": {}}, []),
     ({"$and": [{}, {"i": 2}]}, ["b"])],
)  # fmt: skip
def test_empty_subfilters_search_over_http(client, mode, where, expected) -> None:
    body = {"query": "owls", "mode": mode, "where": where, "limit": 10, "min_score": -1}
    if mode != "semantic":
        body.pop("min_score")
    found = client.post("/collections/notes/search", json=body)
    assert found.status_code == 200, found.text
    assert sorted(h["id"] for h in found.json()["hits"]) == expected
