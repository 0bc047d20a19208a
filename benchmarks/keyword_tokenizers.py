"""Keyword tokenizers compared: CJK and word-part queries on a mixed corpus, English BM25 on SciFact.

Options (each a real SQLite collection, keyword search through ``Collection.search``):

- ``porter`` (the default): FTS5 ``porter unicode61 remove_diacritics 2``; a query holding CJK
  characters, or whose words match nothing, falls back to a substring scan
  (semsearch/keyword_text.py).
- ``trigram``: FTS5's trigram tokenizer, any substring of 3+ characters through the index.

Measured: how many of the mixed-corpus cases of tests/contract/test_cjk_keyword_fake_embedder.py
each option answers exactly; SciFact test keyword nDCG@10 (records stored with ``embed=False``:
keyword search needs no vectors); index file size; and the p50 of a CJK query and of an English
query over SciFact's 5,183 documents with 20 Chinese notes added (so the scan has work to do).

Usage: .venv/bin/python benchmarks/keyword_tokenizers.py [../shared/data/scifact]
Writes the "keyword-tokenizers" section of docs/benchmarks.md.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.report import machine_info, markdown_table, write_section
from semsearch import connect
from semsearch.embedders.fake import FakeEmbedder
from semsearch.evaluation import load_beir, score_run
from semsearch.schema import Field, Schema
from tests.contract.test_cjk_keyword_fake_embedder import CASES, RECORDS

TOKENIZERS = ("porter", "trigram")
CJK_NOTES = [{"id": f"zh-{i}", "text": f"第{i}次会议在图书馆举行，天气很好。"} for i in range(20)]  # noqa: RUF001


def p50_ms(run, repeat: int = 30) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(tokenizer: str, scifact: str, tmp: Path) -> list[object]:
    db = connect(tmp / f"{tokenizer}.embed.db")
    mixed = db.collection("mixed", embedder=FakeEmbedder(16), keyword_tokenizer=tokenizer)
    mixed.upsert(RECORDS, embed=False)
    passed = sum(mixed.search(q, mode="keyword", limit=5).ids == want for q, want in CASES)
    data = load_beir(scifact)
    coll = db.collection(
        "scifact", schema=Schema((Field("title", "str"),)), embedder=FakeEmbedder(16),
        keyword_tokenizer=tokenizer,
    )  # fmt: skip
    coll.upsert(
        [{"id": d, "title": t, "text": f"{t} {x}".strip()} for d, (t, x) in data.corpus.items()]
        + CJK_NOTES,
        embed=False,
    )
    run = {}
    for qid, text in data.queries.items():
        hits = coll.search(text, mode="keyword", limit=100).ids
        run[qid] = {d: float(100 - r) for r, d in enumerate(hits)}
    ndcg = score_run(data.qrels, run)["ndcg_cut_10"]
    english = next(iter(data.queries.values()))
    cjk_ms = p50_ms(lambda: coll.search("图书馆", mode="keyword", limit=10))
    en_ms = p50_ms(lambda: coll.search(english, mode="keyword", limit=10))
    db.close()
    size = sum(p.stat().st_size for p in tmp.glob(f"{tokenizer}.embed.db*")) / 1e6
    return [
        tokenizer, f"{passed} of {len(CASES)}", f"{ndcg:.4f}", f"{size:.1f} MB",
        f"{cjk_ms:.1f}", f"{en_ms:.1f}",
    ]  # fmt: skip


def main(scifact: str, write: bool = True) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(t, scifact, Path(tmp)) for t in TOKENIZERS]
    table = markdown_table(
        ["tokenizer", "mixed-corpus cases", "SciFact keyword nDCG@10", "index file",
         "CJK query p50 ms", "English query p50 ms"],
        rows,
    )  # fmt: skip
    body = "\n\n".join([
        "## Keyword tokenizers: CJK and word parts against English BM25",
        "Mixed-corpus cases: the CJK, glued-ASCII and prefix queries of "
        "tests/contract/test_cjk_keyword_fake_embedder.py, each answered exactly. SciFact: "
        "test split, keyword mode, record-level BM25. Latency over SciFact's 5,183 documents "
        "plus 20 Chinese notes, warm, k=10.",
        table,
        machine_info(),
    ])  # fmt: skip
    print(table)
    if write:
        write_section("keyword-tokenizers", body)


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "../shared/data/scifact", "--no-write" not in sys.argv
    )
