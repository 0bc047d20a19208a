"""Query planning: privacy excludes refill, folder scope, HyDE flag, argument validation.

Plumbing tests with the deterministic fake embedder.
"""

from __future__ import annotations

import pytest

import semsearch
from semsearch.search import PathScope, path_matches


@pytest.fixture
def notes(db: semsearch.Database) -> semsearch.Collection:
    coll = db.collection("notes", embedder="fake:32")
    records = [
        {"id": f"{folder}/note-{i:02d}.md", "text": f"garden tomatoes watering schedule {i}"}
        for folder in ("private", "public")
        for i in range(15)
    ]
    coll.upsert(records)
    return coll


def test_exclude_refills_up_to_limit(notes: semsearch.Collection) -> None:
    for mode in ("semantic", "keyword", "hybrid"):
        result = notes.search(
            "garden tomatoes", mode=mode, limit=10, exclude=["private/*"], min_score=None
        )
        assert len(result) == 10, mode
        assert all(hit.id.startswith("public/") for hit in result), mode


def test_exclude_returns_fewer_only_when_not_enough_matches(notes: semsearch.Collection) -> None:
    result = notes.search("garden tomatoes", mode="keyword", limit=20, exclude=["private"])
    assert len(result) == 15
    assert {hit.id for hit in result} == {f"public/note-{i:02d}.md" for i in range(15)}


def test_folder_restricts_to_prefix(notes: semsearch.Collection) -> None:
    result = notes.search("garden", mode="keyword", limit=30, folder="private")
    assert len(result) == 15
    assert all(hit.id.startswith("private/") for hit in result)


def test_each_record_appears_once(notes: semsearch.Collection) -> None:
    result = notes.search("watering schedule", limit=30, min_score=None)
    assert len(result.ids) == len(set(result.ids)) == 30


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("private/a.md", "private/*", True),
        ("private/deep/a.md", "private/*", True),
        ("private/deep/a.md", "private", True),
        ("private/deep/a.md", "private/", True),
        ("privateer.md", "private", False),
        ("notes/secret.md", "*secret*", True),
        ("notes/plain.md", "*secret*", False),
        ("a/b/c.md", "a/**", True),
    ],
)
def test_path_matches(path: str, pattern: str, expected: bool) -> None:
    assert path_matches(path, pattern) is expected


def test_scope_folder_and_exclude_combine() -> None:
    scope = PathScope(folder="work/", exclude=("work/hr/*",))
    assert scope.allows("work/plan.md")
    assert not scope.allows("work/hr/salaries.md")
    assert not scope.allows("home/plan.md")


def test_hyde_flag_only_when_hypothetical_answer_embedded(notes: semsearch.Collection) -> None:
    plain = notes.search("what should I water", min_score=None)
    assert plain.hyde is False
    hyde = notes.search(
        "what should I water", hypothetical_answer="garden tomatoes watering", min_score=None
    )
    assert hyde.hyde is True
    assert hyde.query == "what should I water"
    blank = notes.search("what should I water", hypothetical_answer="   ", min_score=None)
    assert blank.hyde is False
    assert notes.search("tomatoes", mode="keyword", hypothetical_answer="x").hyde is False


def test_min_score_drops_low_similarity(notes: semsearch.Collection) -> None:
    result = notes.search("garden tomatoes", min_score=0.999)
    assert all(hit.score >= 0.999 for hit in result)
    assert len(result) < 30


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "fuzzy"},
        {"limit": 0},
        {"limit": 1001},
        {"min_score": 1.5},
    ],
)
def test_bad_arguments_raise_invalid_query(notes: semsearch.Collection, kwargs: dict) -> None:
    with pytest.raises(semsearch.InvalidQuery) as info:
        notes.search("garden", **kwargs)
    assert info.value.hint


def test_offset_with_a_ranked_query_is_invalid(notes: semsearch.Collection) -> None:
    with pytest.raises(semsearch.InvalidQuery, match="offset"):
        notes.search("tomatoes", offset=1)


def test_keyword_scores_are_positive_and_sorted(notes: semsearch.Collection) -> None:
    result = notes.search("tomatoes schedule 3", mode="keyword")
    scores = [hit.score for hit in result]
    assert scores and all(s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert result.ids[0].endswith("note-03.md")


def test_embedder_failure_in_semantic_mode_raises_or_falls_back(db: semsearch.Database) -> None:
    from semsearch.embedders.fake import FakeEmbedder

    emb = FakeEmbedder()
    coll = db.collection("docs", embedder=emb)
    coll.upsert([{"id": "x", "text": "solar panels on the roof"}])
    emb.fail = True
    with pytest.raises(semsearch.EmbedderUnavailable):
        coll.search("solar panels")
    result = coll.search("solar panels", fallback="keyword")
    assert result.degraded and result.ids == ["x"]
    hybrid = coll.search("solar panels", mode="hybrid")
    assert hybrid.degraded and "semantic" in (hybrid.degraded_reason or "")
    assert hybrid.ids == ["x"]


def test_record_level_keyword_leg_asks_the_store_for_limit_rows(
    notes: semsearch.Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the SQLite store ranks whole records (one row each): no 4x over-fetch on the first ask
    asked: list[int] = []
    search = notes.store.keyword_search

    def counting(collection, text, k, where):  # type: ignore[no-untyped-def]
        asked.append(k)
        return search(collection, text, k, where)

    monkeypatch.setattr(notes.store, "keyword_search", counting)
    assert len(notes.search("garden tomatoes", mode="keyword", limit=5)) == 5
    assert asked == [5]
    asked.clear()
    # excludes go to the store's filter (before ranking): still one ask, for 5 rows
    found = notes.search("garden tomatoes", mode="keyword", limit=5, exclude=["private/*"])
    assert len(found) == 5 and all(h.id.startswith("public/") for h in found)
    assert asked == [5]
