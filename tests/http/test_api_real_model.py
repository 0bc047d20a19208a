"""Meaning through the HTTP API with the real model (all-MiniLM-L6-v2): "my blue jacket" finds the
navy school blazer among the garments, and each percentage is round(cosine similarity x 100),
recomputed here with numpy from the model's own vectors."""

from __future__ import annotations

import pytest

from tests.http.conftest import ITEM_FIELDS, LOST_AND_FOUND

pytestmark = pytest.mark.slow


def test_semantic_percentages_are_rounded_cosine_similarity(make_client, minilm) -> None:
    client, state = make_client(embedder=minilm)
    client.post(
        "/collections",
        json={"name": "items", "fields": ITEM_FIELDS, "text": ["name", "description"]},
    )
    assert (
        client.post("/collections/items/records", json={"records": LOST_AND_FOUND}).status_code
        == 200
    )
    assert state.worker.wait_idle(60)
    body = client.post(
        "/collections/items/search",
        json={"query": "my blue jacket", "mode": "semantic", "min_score": -1},
    ).json()
    assert body["hits"][0]["id"] == "blazer"
    query = minilm.embed_query("my blue jacket")
    texts = {i["id"]: f"{i['name']}\n\n{i['description']}" for i in LOST_AND_FOUND}
    for hit in body["hits"]:
        cosine = float(minilm.embed_documents([texts[hit["id"]]])[0] @ query)
        assert hit["score"] == pytest.approx(cosine, abs=1e-4)
        assert hit["percent"] == round(cosine * 100)
