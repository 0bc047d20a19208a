"""A JSON body sent without ``Content-Type: application/json`` (``curl -d`` without ``-H``).

The server keeps refusing such bodies (a web page elsewhere cannot make a browser send a
JSON-typed request to 127.0.0.1 without a CORS preflight, so this also blocks cross-site form
posts), but it says why and how to fix it. Plumbing only: the fake embedder (``fake:32``) via
the ``items_client`` fixture, the real app on a real SQLite file.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("content_type", [None, "application/x-www-form-urlencoded", "text/plain"])
@pytest.mark.parametrize(
    "path", ["/collections/items/search", "/collections/items/records", "/collections"]
)
def test_fake_embedder_a_json_body_without_json_content_type_is_explained(
    items_client, content_type, path
) -> None:
    client, _ = items_client
    headers = {"content-type": content_type} if content_type else {}
    answer = client.post(path, content=b'{"query": "umbrella"}', headers=headers)
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "invalid_json"
    assert "Content-Type" in body["message"]
    assert (content_type or "no Content-Type") in body["message"]
    assert "-H 'Content-Type: application/json'" in body["hint"]


def test_fake_embedder_a_wrong_body_with_json_content_type_is_still_422(items_client) -> None:
    client, _ = items_client
    answer = client.post("/collections/items/search", json=["umbrella"])
    assert answer.status_code == 422
    assert answer.json()["error"] == "validation_error"
