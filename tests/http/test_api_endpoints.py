"""Every endpoint of the HTTP API against the real app on a real SQLite file.

Plumbing tests: the deterministic FakeEmbedder (fake:32) embeds; expected scores are computed
here independently with numpy from a fresh FakeEmbedder.
"""

from __future__ import annotations

import math
import re
from importlib import resources

import numpy as np

from semsearch.embedders.fake import FakeEmbedder
from tests.contract.helpers import as_stored
from tests.http.conftest import ITEM_FIELDS, LOST_AND_FOUND


def _text(item: dict[str, str]) -> str:
    return f"{item['name']}\n\n{item['description']}"  # the template: name, blank line, description


def test_health_reports_ok_and_collection_count(items_client) -> None:
    client, _ = items_client
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["collections"] == 1


def test_health_answers_head_for_monitors(items_client) -> None:
    client, _ = items_client
    response = client.head("/health")  # curl -I, load balancer probes
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"


def test_list_and_get_collection_describe_schema_model_and_count(items_client) -> None:
    client, _ = items_client
    listed = client.get("/collections").json()
    assert [c["name"] for c in listed] == ["items"]
    one = client.get("/collections/items").json()
    assert one == listed[0]
    assert one["fields"] == ITEM_FIELDS
    assert one["text"] == ["name", "description"]
    assert one["model_id"] == "fake:32"
    assert one["dim"] == 32
    assert one["records"] == 3


def test_create_collection_is_idempotent_and_may_add_fields(items_client) -> None:
    client, _ = items_client
    same = {"name": "items", "fields": ITEM_FIELDS, "text": ["name", "description"]}
    assert client.post("/collections", json=same).status_code == 200
    wider = {**same, "fields": {**ITEM_FIELDS, "found_on": "str"}}
    response = client.post("/collections", json=wider)
    assert response.status_code == 200
    assert response.json()["fields"]["found_on"] == "str"


def test_upsert_counts_added_updated_unchanged(items_client) -> None:
    client, state = items_client
    again = client.post("/collections/items/records", json={"records": LOST_AND_FOUND}).json()
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 3)
    changed = [{**LOST_AND_FOUND[0], "location": "office"}, {"id": "new", "name": "red scarf"}]
    report = client.post("/collections/items/records", json={"records": changed}).json()
    assert (report["added"], report["updated"], report["unchanged"]) == (1, 1, 0)
    assert state.worker.wait_idle(10)


def test_get_record_returns_fields_and_text_without_vectors(items_client) -> None:
    client, _ = items_client
    body = client.get("/collections/items/records/blazer").json()
    item = LOST_AND_FOUND[0]
    assert body["id"] == "blazer"
    assert body["text"] == _text(item)
    assert body["fields"] == {k: v for k, v in item.items() if k != "id"}
    assert body["vectors"] is None


def test_get_record_with_vectors_returns_the_stored_unit_vector(items_client) -> None:
    client, _ = items_client
    body = client.get(
        "/collections/items/records/blazer", params={"include_vectors": "true"}
    ).json()
    (vector,) = body["vectors"]
    # the SQLite file stores float16 (docs/storage.md): the unit vector rounded value by value
    expected = as_stored("sqlite", FakeEmbedder().embed_documents([_text(LOST_AND_FOUND[0])]))[0]
    assert len(vector) == 32
    assert math.isclose(float(np.linalg.norm(vector)), 1.0, rel_tol=1e-3)
    np.testing.assert_array_equal(np.asarray(vector, dtype=np.float32), expected)


def test_record_ids_with_slashes_work_in_paths(items_client) -> None:
    client, _ = items_client
    record = {"id": "shelf/2/gloves.md", "name": "wool gloves"}
    assert client.post("/collections/items/records", json={"records": [record]}).status_code == 200
    assert client.get("/collections/items/records/shelf/2/gloves.md").json()["id"] == record["id"]
    assert client.delete("/collections/items/records/shelf/2/gloves.md").status_code == 200


def test_delete_record_then_it_is_gone(items_client) -> None:
    client, _ = items_client
    response = client.delete("/collections/items/records/umbrella")
    assert response.status_code == 200
    assert response.json() == {"id": "umbrella", "deleted": True}
    assert client.get("/collections/items/records/umbrella").status_code == 404
    assert client.delete("/collections/items/records/umbrella").status_code == 404
    hits = client.post("/collections/items/search", json={"query": "umbrella", "mode": "keyword"})
    assert hits.json()["hits"] == []


def test_keyword_search_finds_the_word_and_has_no_percentage(items_client) -> None:
    client, _ = items_client
    body = client.post(
        "/collections/items/search", json={"query": "umbrella", "mode": "keyword"}
    ).json()
    assert body["mode"] == "keyword"
    assert [h["id"] for h in body["hits"]] == ["umbrella"]
    hit = body["hits"][0]
    assert hit["rank"] == 1 and hit["percent"] is None and hit["score"] > 0
    assert "umbrella" in hit["chunk"]["text"]
    assert hit["vector"] is None


def test_semantic_search_percent_is_rounded_cosine_similarity(items_client) -> None:
    client, _ = items_client
    query = "blue wool blazer"
    body = client.post(
        "/collections/items/search", json={"query": query, "mode": "semantic", "min_score": -1}
    ).json()
    fake = FakeEmbedder()
    q = fake.embed_query(query)
    docs = as_stored("sqlite", fake.embed_documents([_text(i) for i in LOST_AND_FOUND]))
    cosines = {item["id"]: float(docs[n] @ q) for n, item in enumerate(LOST_AND_FOUND)}
    expected_order = sorted(cosines, key=lambda i: (-cosines[i], i))
    assert [h["id"] for h in body["hits"]] == expected_order
    for hit in body["hits"]:
        assert math.isclose(hit["score"], cosines[hit["id"]], abs_tol=1e-5)
        assert hit["percent"] == round(cosines[hit["id"]] * 100)


def test_semantic_min_score_drops_dissimilar_hits(items_client) -> None:
    client, _ = items_client
    body = client.post(
        "/collections/items/search", json={"query": "blue wool blazer", "min_score": 0.99}
    ).json()
    assert body["hits"] == []


def test_hybrid_hits_carry_fused_rank_and_both_legs(items_client) -> None:
    client, state = items_client
    body = client.post(
        "/collections/items/search", json={"query": "umbrella", "mode": "hybrid"}
    ).json()
    assert body["mode"] == "hybrid"
    top = body["hits"][0]
    assert top["id"] == "umbrella" and top["rank"] == 1 and top["percent"] is None
    legs = top["components"]
    assert legs["keyword"]["rank"] == 1 and legs["keyword"]["score"] > 0
    assert legs["semantic"]["rank"] is not None
    assert legs["semantic"]["percent"] == round(legs["semantic"]["score"] * 100)
    # the calibrated fusion (docs/search-modes.md), written out: a quarter of a sigmoid of the
    # cosine around the model's threshold (the fake embedder's 0.30, scale 0.2), a quarter of
    # x / (x + 0.5) for the keyword evidence x, and a half for a confident match (the top hit
    # holds "umbrella", the query's only word: coverage 1)
    evidence = {
        h.record_id: h.evidence
        for h in state.db.store.keyword_search("items", "umbrella", 10, None)
    }
    semantic = 1 / (1 + math.exp(-(legs["semantic"]["score"] - 0.30) / 0.2))
    x = evidence["umbrella"]
    expected = 0.25 * semantic + 0.25 * x / (x + 0.5) + 0.5
    assert math.isclose(top["score"], expected, rel_tol=1e-6)


def test_search_filter_on_declared_field(items_client) -> None:
    client, _ = items_client
    body = client.post(
        "/collections/items/search",
        json={
            "query": "bottle umbrella blazer",
            "mode": "keyword",
            "where": {"category": "clothing"},
        },
    ).json()
    assert [h["id"] for h in body["hits"]] == ["blazer"]


def test_search_limit_caps_hits(items_client) -> None:
    client, _ = items_client
    body = client.post(
        "/collections/items/search",
        json={"query": "with", "mode": "semantic", "limit": 2, "min_score": -1},
    ).json()
    assert len(body["hits"]) == 2


def test_stats_counts_records_chunks_and_worker_state(items_client) -> None:
    client, _ = items_client
    stats = client.get("/collections/items/stats").json()
    assert (stats["records"], stats["chunks"], stats["embedded"]) == (3, 3, 3)
    assert (stats["pending"], stats["failed"]) == (0, 0)
    assert stats["worker"]["embedded"] == 3
    assert stats["worker"]["queued"] is False and stats["worker"]["last_error"] is None


def test_reindex_with_nothing_pending_embeds_nothing(items_client) -> None:
    client, _ = items_client
    assert client.post("/collections/items/reindex").json() == {
        "embedded": 0,
        "pending": 0,
        "failed": 0,
        "queued": False,
    }


def test_openapi_lists_every_route_of_the_issue(items_client) -> None:
    client, _ = items_client
    paths = client.get("/openapi.json").json()["paths"]
    expected = {
        "/health": {"get"},
        "/collections": {"get", "post"},
        "/collections/{name}/records": {"post"},
        "/collections/{name}/records/{record_id}": {"get", "delete"},
        "/collections/{name}/search": {"post"},
        "/collections/{name}/reindex": {"post"},
        "/collections/{name}/stats": {"get"},
    }
    for path, methods in expected.items():
        assert methods <= set(paths[path]), path


def test_api_docs_page_loads_its_assets_from_this_server_not_a_cdn(items_client) -> None:
    client, _ = items_client
    docs = client.get("/docs")
    assert docs.status_code == 200
    assert "cdn" not in docs.text.lower() and "https://" not in docs.text
    scripts = re.findall(r'src="([^"]+\.js)"', docs.text)
    styles = re.findall(r'href="([^"]+\.css)"', docs.text)
    assert scripts and styles
    for url in scripts + styles:
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 10_000, url


def test_page_and_static_files_are_served_without_external_urls(items_client) -> None:
    client, _ = items_client
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    web = resources.files("semsearch.server") / "web"
    for name in ("index.html", "app.js", "style.css"):
        text = (web / name).read_text(encoding="utf-8")
        assert "http://" not in text and "https://" not in text, name


def test_hypothetical_answer_is_embedded_instead_of_the_query(items_client) -> None:
    client, _ = items_client
    body = client.post(
        "/collections/items/search",
        json={
            "query": "zzz qqq",
            "hypothetical_answer": "folding umbrella wooden handle",
            "min_score": -1,
        },
    ).json()
    assert body["hyde"] is True and body["query"] == "zzz qqq"
    fake = FakeEmbedder()
    answer = fake.embed_query("folding umbrella wooden handle")
    docs = fake.embed_documents([_text(i) for i in LOST_AND_FOUND])
    best = max(range(3), key=lambda n: float(docs[n] @ answer))
    assert body["hits"][0]["id"] == LOST_AND_FOUND[best]["id"] == "umbrella"


def test_folder_limits_hits_to_an_id_prefix(items_client) -> None:
    client, state = items_client
    records = [{"id": "shelf/hat", "name": "wool hat"}, {"id": "desk/hat", "name": "straw hat"}]
    client.post("/collections/items/records", json={"records": records})
    assert state.worker.wait_idle(10)
    body = client.post(
        "/collections/items/search", json={"query": "hat", "mode": "keyword", "folder": "shelf"}
    ).json()
    assert [h["id"] for h in body["hits"]] == ["shelf/hat"]
