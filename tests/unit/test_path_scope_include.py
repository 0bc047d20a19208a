"""PathScope's allowlist (``include``) and Collection.search(include=...): plumbing, fake embedder."""

from __future__ import annotations

import semsearch
from semsearch.search import PathScope


def test_include_is_an_allowlist_and_exclude_wins() -> None:
    scope = PathScope(include=("public/*", "readme.md"), exclude=("public/drafts",))
    assert scope.allows("public/a.md")
    assert scope.allows("public/deep/b.md")
    assert scope.allows("readme.md")
    assert not scope.allows("private/a.md")
    assert not scope.allows("public/drafts/c.md")


def test_empty_include_allows_everything() -> None:
    assert PathScope().allows("anything/at/all.md")


def test_search_include_refills_to_limit_with_fake_embedder(fake_embedder, db) -> None:
    notes = db.collection("notes", embedder=fake_embedder)
    # 30 private notes share every query word; 3 public ones do too.
    records = [{"id": f"private/p{i:02d}.md", "text": "garden tomato watering"} for i in range(30)]
    records += [{"id": f"public/q{i}.md", "text": "garden tomato watering"} for i in range(3)]
    notes.upsert(records)
    for mode in ("semantic", "keyword", "hybrid"):
        result = notes.search("garden tomato", mode=mode, limit=3, include=("public",))
        assert sorted(result.ids) == ["public/q0.md", "public/q1.md", "public/q2.md"], mode


def test_search_include_returns_fewer_rather_than_leak(fake_embedder, db) -> None:
    notes = db.collection("notes", embedder=fake_embedder)
    notes.upsert([{"id": f"private/p{i}.md", "text": "alpha beta"} for i in range(5)])
    notes.upsert([{"id": "public/only.md", "text": "alpha beta"}])
    result = notes.search("alpha", mode="keyword", limit=4, include=("public",))
    assert result.ids == ["public/only.md"]
    assert isinstance(result, semsearch.SearchResult)
