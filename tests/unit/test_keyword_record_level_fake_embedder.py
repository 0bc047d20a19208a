"""Record-level BM25 with a weighted title column, on real SQLite files (issue 20, item 3).

The fake embedder only chunks and fills vectors nobody reads here. Expected orders come from
a BM25 written out in this file (Robertson and Zaragoza 2009, k1 = 1.2, b = 0.75, Lucene's
IDF log(1 + (N - n + 0.5) / (n + 0.5)), per-column weights multiplying term frequency)
over the words of each whole record, and from the hand-worked case in the field-weight test.
Every word used is left alone by the porter stemmer, so splitting on spaces is FTS5's
tokenisation here.
"""

from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path

import semsearch
from semsearch.keyword_query import TITLE_WEIGHT
from semsearch.schema import Field, Schema

FILLER = {f"filler{i}": f"plum {i} quartz zebra basalt" for i in range(6)}


def rel(ratio: float) -> float:
    """semsearch's relative length: |d| / avgdl up to 1.5 times the average, then growing
    with the logarithm: 1.5 * (1 + ln(ratio / 1.5))."""
    return ratio if ratio <= 1.5 else 1.5 * (1 + math.log(ratio / 1.5))


def bm25_reference(docs: dict[str, tuple[str, str]], query: list[str], w_title: float) -> list:
    """[(id, score)] best first: BM25 with Lucene's IDF over (title, body) columns, ties by id."""
    tokens = {i: (t.lower().split(), b.lower().split()) for i, (t, b) in docs.items()}
    n_docs = len(docs)
    avg = sum(len(t) + len(b) for t, b in tokens.values()) / n_docs
    scores = {}
    for i, (title, body) in tokens.items():
        total = 0.0
        for word in query:
            n = sum(1 for t, b in tokens.values() if word in t or word in b)
            if n == 0:
                continue
            idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
            tf = w_title * title.count(word) + body.count(word)
            length = len(title) + len(body)
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * rel(length / avg)))
        if total > 0:
            scores[i] = total
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def test_title_weight_puts_the_titled_record_first(db, fake_embedder) -> None:
    # By hand (BM25, 8 records of average length 42/8 = 5.25, "kiwi" in 2 of them):
    # "titled" has kiwi once, in its title, 5 words; "twice" has kiwi twice in its body,
    # 7 words. Unweighted, tf 1 against 2: "twice" wins (1.020 against 1.257 times the IDF).
    # With the title weighted 2, tf 2 in the shorter record: "titled" wins (1.394 > 1.257).
    coll = db.collection("fruit", schema=Schema((Field("title", "str"),)), embedder=fake_embedder)
    coll.upsert(
        [{"id": "titled", "title": "Kiwi", "text": "Kiwi orchard notes for spring"}]
        + [{"id": "twice", "text": "kiwi kiwi orchard notes for the spring"}]
        + [{"id": i, "text": t} for i, t in FILLER.items()]
    )
    assert TITLE_WEIGHT >= 2.0
    assert coll.search("kiwi", mode="keyword", limit=5).ids == ["titled", "twice"]
    # the reference agrees, and without a weight it would not
    docs = {
        "titled": ("Kiwi", "orchard notes for spring"),
        "twice": ("", "kiwi kiwi orchard notes for the spring"),
    }
    docs |= {i: ("", t) for i, t in FILLER.items()}
    assert [i for i, _ in bm25_reference(docs, ["kiwi"], TITLE_WEIGHT)] == ["titled", "twice"]
    assert [i for i, _ in bm25_reference(docs, ["kiwi"], 1.0)] == ["twice", "titled"]


def test_name_field_is_the_title_and_leaves_the_body(db, fake_embedder) -> None:
    schema = Schema((Field("name", "str"),), text=("name", "desc"))
    coll = db.collection("spells", schema=schema, embedder=fake_embedder)
    coll.upsert(
        [{"id": "s1", "name": "Kiwi", "desc": "orchard notes for spring"}]
        + [{"id": "s2", "name": "Other", "desc": "kiwi kiwi orchard notes for the spring"}]
        + [{"id": i, "name": "", "desc": t} for i, t in FILLER.items()]
    )
    docs = {
        "s1": ("Kiwi", "orchard notes for spring"),
        "s2": ("Other", "kiwi kiwi orchard notes for the spring"),
    }
    docs |= {i: ("", t) for i, t in FILLER.items()}
    expected = bm25_reference(docs, ["kiwi"], TITLE_WEIGHT)
    result = coll.search("kiwi", mode="keyword", limit=5)
    assert result.ids == [i for i, _ in expected] == ["s1", "s2"]
    for hit, (_, score) in zip(result, expected, strict=True):
        assert math.isclose(hit.score, score, rel_tol=1e-6)


def long_record(words: str) -> str:
    """A record of about 150 words (several 64-token chunks of the fake embedder)."""
    return " ".join(["granite"] * 70 + words.split()[:1] + ["granite"] * 70 + words.split()[1:])


def test_words_in_different_chunks_score_the_record_as_one_document(
    db, db_path, fake_embedder
) -> None:
    coll = db.collection("long", embedder=fake_embedder)
    spread = long_record("lantern harbour")
    coll.upsert(
        [
            {"id": "spread", "text": spread},
            {"id": "one", "text": "lantern " + " ".join(["granite"] * 20)},
            {"id": "two", "text": "harbour " + " ".join(["granite"] * 25)},
        ]
        + [{"id": i, "text": t} for i, t in FILLER.items()]
    )
    conn = sqlite3.connect(db_path)
    chunks = conn.execute(
        "SELECT count(*) FROM chunks k JOIN records r ON r.rowid = k.record_rowid "
        "WHERE r.id = 'spread'"
    ).fetchone()[0]
    conn.close()
    assert chunks >= 3  # the two words lie in different chunks
    docs = {r: ("", t) for r, t in [("spread", spread)]}
    docs |= {"one": ("", "lantern " + " ".join(["granite"] * 20))}
    docs |= {"two": ("", "harbour " + " ".join(["granite"] * 25))}
    docs |= {i: ("", t) for i, t in FILLER.items()}
    expected = bm25_reference(docs, ["lantern", "harbour"], TITLE_WEIGHT)
    result = coll.search("lantern harbour", mode="keyword", limit=5)
    assert result.ids == [i for i, _ in expected]
    for hit, (_, score) in zip(result, expected, strict=True):
        assert math.isclose(hit.score, score, rel_tol=1e-6)
    spread_hit = next(h for h in result if h.id == "spread")
    assert spread_hit.chunk is not None
    assert "lantern" in spread_hit.chunk.text or "harbour" in spread_hit.chunk.text


RECORD_TABLE = re.compile(r"fts_rec_\d+")


def table_names(conn: sqlite3.Connection) -> list[str]:
    """The record-level FTS5 tables (not their shadow tables ``fts_rec_<n>_data`` etc.)."""
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [n for n in names if RECORD_TABLE.fullmatch(n)]


def as_format_1(path: Path) -> None:
    """Turn a file into what semsearch wrote before format 2: no record-level tables."""
    conn = sqlite3.connect(path)
    for name in table_names(conn):
        conn.execute(f"DROP TABLE {name}")
    conn.execute("DELETE FROM semsearch_migrations WHERE version >= 2")
    conn.commit()
    conn.close()


def record_tables(path: Path) -> tuple[list[str], int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = table_names(conn)
        version = conn.execute("SELECT MAX(version) FROM semsearch_migrations").fetchone()[0]
    finally:
        conn.close()
    return names, int(version)


def test_format_1_file_searches_unchanged_until_a_write_migrates_it(db_path, fake_embedder) -> None:
    docs = {
        "titled": ("Kiwi", "orchard notes for spring"),
        "twice": ("", "kiwi kiwi orchard notes for the spring"),
    }
    docs |= {i: ("", t) for i, t in FILLER.items()}
    rows = [{"id": i, "title": t, "text": f"{t} {b}".strip()} for i, (t, b) in docs.items()]
    schema = Schema((Field("title", "str"),))
    db = semsearch.connect(db_path)
    db.collection("fruit", schema=schema, embedder=fake_embedder).upsert(rows)
    db.close()
    as_format_1(db_path)

    db = semsearch.connect(db_path)
    coll = db.collection("fruit", embedder=fake_embedder)
    # chunk-level BM25 of format 1 (each record is one chunk): no title column, tf 2 wins
    assert coll.search("kiwi", mode="keyword", limit=5).ids == ["twice", "titled"]
    assert record_tables(db_path) == ([], 1)  # the read changed nothing

    coll.upsert([{"id": "late", "text": "basalt plum"}])
    names, version = record_tables(db_path)
    assert version >= 2 and len(names) == 1
    assert coll.search("kiwi", mode="keyword", limit=5).ids == ["titled", "twice"]
    db.close()


def test_a_record_level_hit_shows_its_matching_chunk_not_its_first(db, fake_embedder) -> None:
    coll = db.collection("tail", embedder=fake_embedder)
    coll.upsert(
        [{"id": "tail", "text": " ".join(["granite"] * 150) + " lantern at the end"}]
        + [{"id": i, "text": t} for i, t in FILLER.items()]
    )
    for mode in ("keyword", "hybrid"):
        hit = coll.search("lantern", mode=mode, limit=1)[0]
        assert hit.id == "tail" and hit.chunk is not None and hit.chunk.ordinal > 0, mode
        assert "lantern" in hit.chunk.text, mode
