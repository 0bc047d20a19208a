"""Hit.highlight on the faces: HTTP (offsets), MCP (the sentence), CLI (bold); the web page's
<mark> is tested in a browser (tests/web/test_page_highlight_fake_embedder.py)."""

from __future__ import annotations

from semsearch.cli.search_cmd import _snippet
from semsearch.server.http.views import search_out
from semsearch.server.mcp.views import hit_view

NOTE = "Compost needs air and water every week. The lighthouse key is under the blue pot."
SECOND = (40, 81)  # "The lighthouse key is under the blue pot."


def test_every_face_returns_the_highlighted_sentence(db, fake_embedder) -> None:
    coll = db.collection("notes", embedder=fake_embedder)
    coll.upsert([{"id": "long", "text": NOTE}])
    result = coll.search("lighthouse", mode="keyword", limit=1)
    assert result[0].highlight == SECOND
    body = search_out(result, coll, include_vectors=False).model_dump()
    assert body["hits"][0]["highlight"] == SECOND
    assert hit_view(result[0])["highlight"] == "The lighthouse key is under the blue pot."
    assert _snippet(NOTE, SECOND) == (
        "Compost needs air and water every week. "
        "[bold]The lighthouse key is under the blue pot.[/bold]"
    )
    assert _snippet(NOTE, None) == NOTE
