"""Sentence-window vectors as int8 codes against float16, on BEIR SciFact (issue 45, item 3).

One index of the whole corpus is built with the default model (int8 MiniLM) and its window
vectors written as float16 blobs (the layout before SQLite format 7). It is evaluated
(``semsearch.evaluation.run_eval``: nDCG@10, recall@100, MRR@10 in semantic and hybrid mode,
each mode's default floor), then copied, every window blob of the copy re-packed as int8 codes
(exactly what the current code writes for the same float16 windows), and the copy evaluated
again. Nothing else differs: the same chunk vectors, the same windows, the same queries. Also
reports the window blobs' bytes and the file sizes (after VACUUM).

    .venv/bin/python -m benchmarks.window_precision [--workdir DIR (kept, reused)] [--no-write]

Writes the ``window-precision`` section of docs/benchmarks.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch.stores.base import WindowSet

SECTION = "window-precision"
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "scifact"
MODES = ("semantic", "hybrid")


def _float16_blobs(windows: WindowSet) -> tuple[bytes, bytes]:
    """The blobs as semsearch wrote them before format 7."""
    spans = np.ascontiguousarray(windows.spans, dtype="<i4").tobytes()
    return spans, np.ascontiguousarray(windows.vectors, dtype="<f2").tobytes()


@contextmanager
def _writing_float16() -> Iterator[None]:
    """The SQLite store writes float16 window blobs inside this block."""
    from semsearch.stores.sqlite import windows

    saved = windows.pack_windows
    windows.pack_windows = _float16_blobs
    try:
        yield
    finally:
        windows.pack_windows = saved


def _repack_as_int8(path: Path) -> None:
    """Rewrite every window blob of the file with the current packer (int8 codes)."""
    from semsearch.stores.window_blobs import pack_windows, unpack_windows

    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT rowid, spans, vectors FROM chunk_windows").fetchall()
    for rowid, spans, vectors in rows:
        packed = pack_windows(unpack_windows(spans, vectors))[1]
        conn.execute("UPDATE chunk_windows SET vectors = ? WHERE rowid = ?", (packed, rowid))
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def _sizes(path: Path) -> tuple[int, float]:
    """(window blob bytes, file MB)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    row = conn.execute("SELECT COALESCE(SUM(length(vectors)), 0) FROM chunk_windows").fetchone()
    conn.close()
    return int(row[0]), path.stat().st_size / 1e6


def _evaluate(path: Path, dataset: object, label: str) -> list[list[object]]:
    import semsearch
    from semsearch.evaluation import COLLECTION, run_eval

    with semsearch.connect(path) as db:
        report = run_eval(dataset, db.collection(COLLECTION), modes=MODES)  # type: ignore[arg-type]
    window_bytes, file_mb = _sizes(path)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        [label, m.mode, f"{m.ndcg_at_10:.4f}", f"{m.recall_at_100:.4f}", f"{m.mrr_at_10:.4f}",
         f"{window_bytes / 1e6:.1f}", f"{file_mb:.1f}", f"{m.latency_p50_ms:.1f}", load]
        for m in report.modes
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default=None, help="kept and reused (default: temporary)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    from semsearch.embedders.registry import resolve_embedder
    from semsearch.evaluation import load_beir, open_index

    dataset = load_beir(DATA)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        with _writing_float16():
            coll = open_index(dataset, resolve_embedder(None), work / "float16")
            float16_path = Path(coll.store.location)
            coll.store.close()
        conn = sqlite3.connect(float16_path)
        conn.execute("VACUUM")
        conn.close()
        int8_path = work / "int8" / float16_path.name
        int8_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(float16_path, int8_path)
        _repack_as_int8(int8_path)
        rows = _evaluate(float16_path, dataset, "float16 (before format 7)")
        rows += _evaluate(int8_path, dataset, "int8 codes (format 7)")
    headers = ["windows", "mode", "nDCG@10", "recall@100", "MRR@10", "window MB", "file MB",
               "p50 ms", "load average"]  # fmt: skip
    body = (
        "## Sentence windows on disk: int8 codes against float16 (issue 45)\n\n"
        f"Machine: {machine_info(('numpy', 'onnxruntime'))}.\n"
        "Command: `.venv/bin/python -m benchmarks.window_precision`: BEIR SciFact test (5,183 "
        "documents, 300 queries), default model, one index whose window blobs are float16, "
        "then the same index with every window blob re-packed as int8 codes; limit 10, each "
        "mode's default floor.\n\n" + markdown_table(headers, rows)
    )
    print(body)
    if not args.no_write:
        write_section(SECTION, body)


if __name__ == "__main__":
    main()
