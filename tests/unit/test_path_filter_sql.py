"""Path scopes compiled to SQLite SQL select exactly the ids ``PathScope.allows`` selects.

Property tests (hypothesis) over ids and patterns drawn from a small alphabet full of glob, LIKE
and SQL syntax, so every escaping path is exercised; the reference is Python's own fnmatch
through ``PathScope.allows``. The other backends run the same property in
tests/contract/test_path_scope_fake_embedder.py.
"""

from __future__ import annotations

import fnmatch
import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from semsearch.errors import InvalidFilter
from semsearch.filters import IdMatch, path_filter
from semsearch.globs import CharSet, Lit, Many, One, parse_glob, prefix_end
from semsearch.search import PathScope
from semsearch.stores.sqlite.sql import (
    FNMATCH_FUNCTION,
    compile_filter,
    fnmatch_function,
    glob_text,
)

#: Glob syntax, LIKE syntax, SQL quotes, a backslash, a set's "-" and "^", a newline, a
#: multi-byte letter and NUL (which SQLite's GLOB cannot see past).
ALPHABET = "ab/*?[]!%_'\"\\-^ \né\x00"
IDS = st.lists(st.text(ALPHABET, max_size=8), max_size=30, unique=True)
PATTERNS = st.lists(st.text(ALPHABET, max_size=7), max_size=3).map(tuple)
FOLDERS = st.none() | st.text(ALPHABET, max_size=5)


def _selected(ids: list[str], scope: PathScope) -> list[str]:
    conn = sqlite3.connect(":memory:")
    conn.create_function(FNMATCH_FUNCTION, 2, fnmatch_function, deterministic=True)
    conn.execute("CREATE TABLE records (id TEXT NOT NULL)")
    conn.executemany("INSERT INTO records VALUES (?)", [(i,) for i in ids])
    where = scope.as_filter()
    sql, params = compile_filter(where) if where is not None else ("1", [])
    rows = conn.execute(f"SELECT id FROM records AS r WHERE {sql}", params).fetchall()
    conn.close()
    return sorted(r[0] for r in rows)


@settings(max_examples=600, deadline=None)
@given(ids=IDS, folder=FOLDERS, include=PATTERNS, exclude=PATTERNS)
@example(ids=["a/b", "[!]x", "^", "a]", "-"], folder=None, include=("[!]a]",), exclude=())
@example(ids=["a\x00b", "a"], folder=None, include=("a",), exclude=("*b",))
@example(ids=['x\'" or "1', "%", "_"], folder=None, include=(), exclude=("%", "_", "'*"))
def test_sqlite_selects_exactly_what_path_scope_allows(ids, folder, include, exclude) -> None:
    scope = PathScope(folder, exclude, include)
    assert _selected(ids, scope) == sorted(i for i in ids if scope.allows(i))


@settings(max_examples=800, deadline=None)
@given(name=st.text(ALPHABET, max_size=8), pattern=st.text(ALPHABET + "c", max_size=8))
@example(name="]", pattern="[]-a]")
@example(name="b", pattern="[b-a]")
@example(name="x", pattern="[!b-a]")
@example(name="^", pattern="[^]")
def test_glob_text_matches_like_fnmatchcase(name: str, pattern: str) -> None:
    conn = sqlite3.connect(":memory:")
    glob = glob_text(parse_glob(pattern))
    expected = fnmatch.fnmatchcase(name, pattern)
    if "\x00" in name or "\x00" in pattern:
        return  # GLOB stops at NUL; compile_id_match routes these to the Python function
    found = glob is not None and conn.execute("SELECT ? GLOB ?", (name, glob)).fetchone()[0] == 1
    assert found == expected, (name, pattern, glob)


def test_parse_glob_tokens_worked_by_hand() -> None:
    assert parse_glob("a**b?[!x-z]") == (
        Lit("a"),
        Many(),
        Lit("b"),
        One(),
        CharSet(((ord("x"), ord("z")),), True),
    )
    assert parse_glob("[ab") == (Lit("[ab"),)  # no closing bracket: literal
    assert parse_glob("[]]") == (CharSet(((ord("]"), ord("]")),), False),)
    assert parse_glob("[z-a]") == (CharSet((), False),)  # a reversed range is empty


def test_prefix_end_is_the_least_string_above_the_prefix() -> None:
    assert prefix_end("notes/") == "notes0"
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\ud7ff"[:0] + "x\ud7ff") == "x\ue000"  # surrogates skipped
    assert prefix_end("") is None


def test_folder_and_folder_globs_compile_to_one_index_range() -> None:
    sql, params = compile_filter(path_filter("notes", (), ("private/*", "old/**")))
    assert params == ["notes/", "notes0", "private/", "private0", "old/", "old0"]
    assert "GLOB" not in sql and "LIKE" not in sql
    # a bare folder also hides the id equal to it, as fnmatch("private", "private") does
    sql, params = compile_filter(path_filter(None, (), ("private",)))
    assert params == ["private", "private/", "private0"] and "GLOB" not in sql


def test_glob_with_wildcards_in_the_middle_uses_glob_with_bound_pattern() -> None:
    sql, params = compile_filter(IdMatch("glob", "*.md"))
    assert "GLOB ?" in sql and params == ["*.md", "*.md"]
    sql, params = compile_filter(IdMatch("glob", "[!a]*"))
    assert params == ["[!a]*", "[^a]*"]  # GLOB negates with ^


def test_a_lone_surrogate_in_a_pattern_is_a_clear_error() -> None:
    with pytest.raises(InvalidFilter, match="surrogate"):
        path_filter(None, (), ("a\ud800",))


def test_plumbing_listing_a_folder_asks_the_store_once_fake_embedder(monkeypatch) -> None:
    """1,200 records, the folder holds the last 5 by id: one find call, not three pages."""
    import semsearch
    from semsearch.embedders.fake import FakeEmbedder

    with semsearch.connect(":memory:") as db:
        coll = db.collection("notes", embedder=FakeEmbedder(8))
        ids = [f"a/{i:04d}" for i in range(1195)] + [f"z/{i}" for i in range(5)]
        coll.upsert([{"id": i, "text": "x"} for i in ids], embed=False)
        calls = []
        find = coll.store.find
        monkeypatch.setattr(coll.store, "find", lambda *a: calls.append(a) or find(*a))
        result = coll.search("", folder="z", limit=3)
    assert result.ids == ["z/0", "z/1", "z/2"]
    assert len(calls) == 1
