"""Progress that never goes quiet (issue 45): one large markdown note, indexed through the CLI
off a terminal, moves the progress line batch by batch, for its chunks and then for their
sentence windows; the repair of an interrupted sync shows the same progress. The fake embedder
(``fake:32``, batches of 32 texts) stands in for the model: this is plumbing. The commands run
as real subprocesses with stderr in a file and ``SEMSEARCH_PROGRESS_SECONDS=0`` (a line at every
update), so the lines depend on the work done, never on timing. The heartbeat (a line when
nothing is updated) is checked in process.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import semsearch
from semsearch.cli.progress import ProgressLine
from semsearch.ingest import EMBED_GROUP
from tests.cli.test_progress_off_terminal import run
from tests.e2e.mcp_client import server_env

REPO = Path(__file__).resolve().parents[2]
SECTIONS = 1000  # each one chunk (a heading and two sentences, far below fake:32's 64 tokens)
BATCH = 32  # the fake embedder's texts per batch
EMBEDDED = re.compile(r"chunks: (?:[\d,]+ cut, )?([\d,]+)/([\d,]+) embedded")
WINDOWS = re.compile(r"([\d,]+) sentence windows")


def write_big_note(folder: Path) -> Path:
    """A note of SECTIONS sections; each body is two sentences of at least five words, so its
    chunk has two sentence windows (the heading line alone is a label, not a window)."""
    folder.mkdir()
    parts = [
        f"## Section {i}\n\nThe garden number {i} grows tall green beans. "
        f"Its keeper waters row {i} every single morning.\n"
        for i in range(SECTIONS)
    ]
    note = folder / "big.md"
    note.write_text("\n".join(parts))
    return note


def run_cli(args: list[str], tmp_path: Path) -> tuple[str, str]:
    return run(args, tmp_path, timeout=300)


def counts(pattern: re.Pattern[str], err: str) -> list[tuple[int, ...]]:
    return [tuple(int(g.replace(",", "")) for g in m.groups()) for m in pattern.finditer(err)]


def chunks_in_store(index: Path) -> int:
    with semsearch.connect(index) as db:
        return db.collection("notes").stats().chunks


def assert_moves_batch_by_batch(err: str, total: int) -> None:
    embedded = counts(EMBEDDED, err)
    assert embedded, err[-2000:]
    assert {t for _, t in embedded} == {total}  # the one file's chunks, queued at once
    done = [d for d, _ in embedded]
    assert done == sorted(done) and done[-1] == total  # never back, and to the end
    between = {d for d in done if 0 < d < total}
    # per embedder batch: far more steps than one per embedding group (or per file: none)
    assert len(between) >= total // BATCH - 1 > total // EMBED_GROUP, sorted(between)


def test_one_large_note_shows_chunk_progress_off_a_terminal_fake_vectors(tmp_path: Path) -> None:
    write_big_note(tmp_path / "notes")
    index = tmp_path / "a.embed.db"
    out, err = run_cli(["index", str(tmp_path / "notes"), "--index", str(index)], tmp_path)
    assert chunks_in_store(index) == SECTIONS  # one chunk per section, as written
    assert_moves_batch_by_batch(err, SECTIONS)
    cut = [c for (c,) in counts(re.compile(r"chunks: ([\d,]+) cut"), err)]
    assert cut[0] < SECTIONS and cut[-1] == SECTIONS  # chunking counted section by section
    windows = [w for (w,) in counts(WINDOWS, err)]
    assert windows == sorted(windows) and windows[-1] == 2 * SECTIONS
    assert len(set(windows)) >= 2 * SECTIONS // BATCH - 1  # windows move per batch too
    last = err.strip().splitlines()[-1]
    assert last.startswith("indexing files: 1/1 files (100%)"), last
    assert "chunks embedded: 1000 " in out and "indexing" not in out


INTERRUPTED = """
import sys
from pathlib import Path
import semsearch
from semsearch.health import begin_sync
from semsearch.sources.vault import VAULT_SCHEMA, read_note
with semsearch.connect(sys.argv[2]) as db:
    coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
    begin_sync(coll.store, "notes", "full sync")
    coll.upsert([read_note(Path(sys.argv[1]), "big.md")], embed=False)
"""


def test_repair_after_an_interrupted_sync_shows_progress_fake_vectors(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    write_big_note(folder)
    index = tmp_path / "r.embed.db"
    # a sync that wrote the note and died before embedding it (its process is gone)
    subprocess.run([sys.executable, "-c", INTERRUPTED, str(folder), str(index)], check=True,
                   cwd=REPO, env=server_env(PYTHONPATH=str(REPO)), timeout=120)  # fmt: skip
    with semsearch.connect(index) as db:
        assert db.collection("notes").stats().pending == SECTIONS
    out, err = run_cli(["index", str(folder), "--index", str(index)], tmp_path)
    assert "previous sync was interrupted" in err and "repairing" in err
    assert_moves_batch_by_batch(err, SECTIONS)
    assert "0 new, 0 changed, 1 unchanged" in out and "chunks embedded: 1000 " in out
    with semsearch.connect(index) as db:
        assert db.collection("notes").stats().pending == 0


def test_import_counts_chunks_of_its_records_fake_vectors(tmp_path: Path) -> None:
    data = tmp_path / "r.jsonl"
    rows = [f'{{"id": "{i}", "text": "record number {i} has a few words"}}' for i in range(300)]
    data.write_text("\n".join(rows) + "\n")
    _, err = run_cli(
        ["import", str(data), "-c", "recs", "--index", str(tmp_path / "i.embed.db")], tmp_path
    )
    embedded = counts(EMBEDDED, err)
    assert embedded[-1] == (300, 300)  # one chunk per record
    assert len({d for d, _ in embedded}) >= 300 // BATCH - 1 > 300 // EMBED_GROUP  # per batch


def test_heartbeat_prints_while_nothing_is_counted(capsys: pytest.CaptureFixture[str]) -> None:
    # off a terminal, a line appears each interval even when the work updates nothing
    lines: list[str] = []
    with ProgressLine("indexing files", "files", total=1, interval=0.05, terminal=False) as bar:
        bar.count("queued", 7)  # the one update: at most one line of its own
        for _ in range(400):  # wait for the lines (nothing here is timed)
            lines += capsys.readouterr().err.splitlines()
            if len(lines) >= 2:
                break
            time.sleep(0.05)
    lines += capsys.readouterr().err.splitlines()
    assert len(lines) >= 2  # so at least one came from the heartbeat alone
    assert all(ln.startswith("indexing files: 0/1 files (0%)") for ln in lines), lines
    assert all(ln.endswith("; chunks: 0/7 embedded") for ln in lines), lines
