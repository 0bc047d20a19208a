"""A dropped collection's cache files (ANN sidecar, HNSW graph, keyword sidecar) are deleted
with it, and ``compact`` deletes those a late writer left (stores/sqlite/cache_files.py).
Fake vectors: these tests are about files, not meaning."""

from __future__ import annotations

from pathlib import Path

import semsearch
from semsearch.stores.sqlite.cache_files import remove_collection_files, remove_orphans
from tests.ann import synthetic as syn

DIM, N = 8, 400


def files_of(db_path: Path, cid: int) -> list[str]:
    """Names of the files beside the index that belong to collection ``cid``."""
    return sorted(p.name for p in db_path.parent.glob(f"{db_path.name}.c{cid}.*"))


def fill(db: semsearch.Database, name: str, seed: int) -> int:
    """A collection with a graph sidecar and a keyword sidecar on disk; its id."""
    coll = db.collection(name, schema=syn.SCHEMA, embedder=syn.FakeEmbedder(DIM))
    syn.configure_ann(coll, threshold=100)
    vectors = syn.clustered(N, DIM, seed=seed)
    syn.write(coll, vectors, list(range(N)))
    coll.store.vector_search(name, vectors[0], 5, None)  # the graph and its .ann
    coll.search(syn.name(1), mode="keyword")  # the .kw sidecar
    coll.store._keywords.refresh(name, wait=True)
    (index,) = [i for i in coll.store._cache.values() if i.state.identity["collection"] == name]
    return int(index.collection_id)


def test_plumbing_dropping_a_collection_deletes_its_cache_files_and_no_others(
    db_path: Path,
) -> None:
    with semsearch.connect(db_path) as db:
        kept, dropped = fill(db, "kept", 1), fill(db, "dropped", 2)
        before = files_of(db_path, dropped)
        # the sidecar, one graph and the keyword file, as named in ann/file.py and bm25/file.py
        assert sorted(n.rsplit(".", 1)[-1] for n in before) == ["ann", "hnsw", "kw"]
        kept_before = files_of(db_path, kept)
        assert len(kept_before) == 3
        assert db.drop_collection("dropped")
        assert files_of(db_path, dropped) == []
        assert files_of(db_path, kept) == kept_before
        hits = db.collection("kept").search(syn.name(1), mode="keyword")
        assert [h.id for h in hits][:1] == [syn.name(1)]


def test_plumbing_replacing_a_collection_deletes_the_old_ones_cache_files(
    db_path: Path,
) -> None:
    with semsearch.connect(db_path) as db:
        old, new = fill(db, "live", 3), fill(db, "live_next", 4)
        assert db.store.replace_collection("live", "live_next")
        assert files_of(db_path, old) == []
        assert len(files_of(db_path, new)) == 3  # the renamed collection keeps its own


def test_plumbing_compact_deletes_files_a_late_writer_left_for_a_dropped_collection(
    db_path: Path,
) -> None:
    with semsearch.connect(db_path) as db:
        kept, dropped = fill(db, "kept", 5), fill(db, "dropped", 6)
        db.drop_collection("dropped")
        # a build in another process, still running at the drop, writes its files afterwards
        late = [f".c{dropped}.ann", f".c{dropped}.0123456789abcdef.hnsw", f".c{dropped}.kw"]
        late.append(f".c{dropped}.ann.tmp-4242-0a1b2c3d")
        # ids above the newest given may be a collection created meanwhile; other names are
        # not cache files at all
        keep = [f".c{dropped + 10}.ann", ".c1x.ann", f".c{dropped}.notes", ".backup"]
        for suffix in late + keep:
            Path(f"{db_path}{suffix}").write_bytes(b"x")
        kept_before = files_of(db_path, kept)
        db.compact()
        for suffix in late:
            assert not Path(f"{db_path}{suffix}").exists(), suffix
        for suffix in keep:
            assert Path(f"{db_path}{suffix}").exists(), suffix
        assert files_of(db_path, kept) == kept_before


def test_collection_ids_and_cache_names_are_matched_whole(tmp_path: Path) -> None:
    db = tmp_path / "a.embed.db"
    token = "0123456789abcdef"
    ours = [".c1.ann", f".c1.{token}.hnsw", ".c1.kw.tmp-7-beef0001"]
    # another id, zero-padded ids, a short token, temporaries not named as ours, user files
    theirs = [".c10.ann", ".c11.kw", ".c01.ann", ".c1.00ff.hnsw", ".c1.ann.tmp-ab-cd"]
    theirs += [".c1.ann.bak", ".c1.kw.old", ".c1.ANN"]
    for suffix in ours + theirs:
        Path(f"{db}{suffix}").write_bytes(b"")
    assert remove_collection_files(str(db), 1) == 3
    left = sorted(p.name[len(db.name) :] for p in tmp_path.iterdir())
    assert left == sorted(theirs)
    assert remove_orphans(str(db), live={11}, newest=10) == 1  # c10 gone, c11 live
    assert not Path(f"{db}.c10.ann").exists() and Path(f"{db}.c11.kw").exists()


def test_a_doubled_slash_in_the_index_path_still_finds_the_files(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    Path(tmp_path / "w" / "n.embed.db.c2.ann").write_bytes(b"")
    assert remove_collection_files(f"{tmp_path}/w//n.embed.db", 2) == 1
    assert list((tmp_path / "w").iterdir()) == []
