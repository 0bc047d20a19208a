"""Results you can trust (issue 43): the default floor, calibrated hybrid scores, keyword BM25.

Usage (from the project root; the SciFact index is the cached one of ``semsearch eval``):

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/trust.py [--dry-run]

With the real default model, in one run:

1. **Off-topic questions** (benchmarks/data/off_topic_questions.json, 60 per corpus, written by
   hand): the share that returns no hit in the default hybrid and semantic modes, on SciFact
   and on an index of this repository's docs/ built here.
2. **On-topic questions**: SciFact test at limit 10 with the floor on and off, each mode
   (nDCG@10); the share of the judged-relevant hits of the floorless top 10 that the floor
   removes (SciFact claims and 120 paragraph-long questions).
3. **Long questions** (benchmarks/data/scifact_long_questions.jsonl): keyword, semantic and
   hybrid nDCG@10 against a plain BM25 (bm25s, Lucene's IDF, k1 1.2, b 0.75, English stop words
   removed, Snowball stemming) on the same corpus and judgments.
4. **Question words**: a three-note vault (a refund policy full of "how do I", a note about
   linking notes, a note about tomatoes): the rank of the linking note in keyword and hybrid
   mode for "how do I make a link to another note".
5. **Long notes**: judged questions whose answer is a note of 10,000 characters or more
   (foam-docs and this repository's docs/): its rank in keyword mode.

Writes the "trust" section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.report import machine_info, markdown_table, write_section
from benchmarks.vault_queries import QUESTIONS
from semsearch import Collection, connect
from semsearch.cli.eval_cmd import default_cache_dir
from semsearch.embedders.registry import resolve_embedder
from semsearch.evaluation import BeirDataset, load_beir, open_index, score_run
from semsearch.sources.sync import sync_folder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
SHARED = ROOT.parent / "shared" / "data"
#: Judged questions on this repository's docs/ (written by hand from the page titles and
#: sections; the answer is the one page that covers the question).
DOCS_QUESTIONS = {
    "how does hybrid search combine keyword and semantic scores": "search-modes.md",
    "rerank results with a cross-encoder model": "retrieval.md",
    "how much disk space does an index of a million chunks need": "capacity.md",
    "connect Claude Desktop to my notes": "mcp.md",
    "store vectors in PostgreSQL with pgvector": "postgres.md",
    "keep private notes out of search results": "privacy.md",
    "re-index automatically when a note changes": "watch.md",
    "what does the error ModelMismatch mean": "errors.md",
    "use semsearch as a LangChain vector store": "integrations/langchain.md",
    "remember what a user said in earlier chats": "memory.md",
    "HNSW index parameters and recall": "ann.md",
    "OpenAI-compatible embeddings endpoint": "http.md",
    "use an OpenAI or Gemini embedding model instead of the local one": "embedders.md",
    "what is stored in the .embed.db file": "storage.md",
    "search a D&D spell list by level and school": "recipes/dnd5e.md",
    "evaluate retrieval quality on a BEIR dataset": "retrieval.md",
    "how are Milvus collections laid out": "milvus.md",
    "which import layers may a module use": "architecture.md",
}
THREE_NOTES = {
    "refund-policy.md": "# Refund policy\n\nHow do I get a refund? Write to us within 30 days. "
    "How do I ask for one? Send the order number. How do I know it worked? We reply by email.",
    "linking-notes.md": "# Linking notes\n\nTo connect two notes, type [[ and the other "
    "note's name: the link shows up in both notes' backlinks.",
    "tomatoes.md": "# Tomatoes\n\nWater the tomatoes every morning and pinch out the side "
    "shoots so the plant puts its energy into the fruit.",
}
LONG_NOTE = 10_000


def run(coll: Collection, queries: dict[str, str], mode: str, floor: bool) -> dict:
    """trec_eval run of limit-10 searches (rank-derived scores, as semsearch eval does)."""
    out = {}
    for qid, text in queries.items():
        hits = coll.search(text, mode=mode, limit=10, **({} if floor else {"min_score": None}))
        out[qid] = {h.id: float(10 - r) for r, h in enumerate(hits.hits)}
    return out


def on_topic(coll: Collection, ds: BeirDataset, longq: dict[str, str]) -> list[list[str]]:
    """Rows: mode, nDCG@10 floor on / off (claims), long questions, relevant hits removed."""
    rows = []
    qrels_long = {q: ds.qrels[q] for q in longq}
    for mode in ("keyword", "semantic", "hybrid"):
        on, off = run(coll, ds.queries, mode, True), run(coll, ds.queries, mode, False)
        lon, loff = run(coll, longq, mode, True), run(coll, longq, mode, False)
        kept = lost = 0
        for qrels, floored, full in ((ds.qrels, on, off), (qrels_long, lon, loff)):
            for q, docs in full.items():
                relevant = [d for d in docs if qrels[q].get(d, 0) > 0]
                kept += len(relevant)
                lost += sum(1 for d in relevant if d not in floored[q])
        rows.append([
            mode, f"{score_run(ds.qrels, on)['ndcg_cut_10']:.4f}",
            f"{score_run(ds.qrels, off)['ndcg_cut_10']:.4f}",
            f"{score_run(qrels_long, lon)['ndcg_cut_10']:.4f}",
            f"{lost} of {kept} ({lost / max(kept, 1):.1%})",
        ])  # fmt: skip
    return rows


def bm25s_long(ds: BeirDataset, longq: dict[str, str]) -> str:
    """Plain BM25 (bm25s, Lucene's IDF, English stop words, Snowball) on the long questions."""
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return "not installed (pip install bm25s PyStemmer)"
    ids = list(ds.corpus)
    stem = Stemmer.Stemmer("english")
    corpus = [f"{t} {x}".strip() for t, x in ds.corpus.values()]
    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stem, show_progress=False),
                show_progress=False)  # fmt: skip
    qids = list(longq)
    tokens = bm25s.tokenize([longq[q] for q in qids], stopwords="en", stemmer=stem,
                            show_progress=False, return_ids=False)  # fmt: skip
    found, scores = model.retrieve(tokens, k=10, show_progress=False, n_threads=1)
    ranked = {
        q: {ids[d]: float(10 - j) for j, d in enumerate(found[i]) if scores[i][j] > 0}
        for i, q in enumerate(qids)
    }
    return f"{score_run({q: ds.qrels[q] for q in qids}, ranked)['ndcg_cut_10']:.4f}"


def empty_share(coll: Collection, questions: list[str], mode: str) -> str:
    empty = sum(1 for q in questions if not coll.search(q, mode=mode, limit=10).hits)
    return f"{empty} of {len(questions)} ({empty / len(questions):.0%})"


def vault(root: Path, path: Path, embedder: object) -> Collection:
    coll = connect(path).collection("notes", embedder=embedder)  # type: ignore[arg-type]
    sync_folder(coll, root)
    return coll


def rank_of(coll: Collection, query: str, answer: str, mode: str) -> int | None:
    ids = coll.search(query, mode=mode, limit=50, min_score=None).ids
    return ids.index(answer) + 1 if answer in ids else None


def long_notes(colls: dict[str, tuple[Collection, Path, dict[str, str]]]) -> list[list[str]]:
    rows = []
    for name, (coll, root, questions) in colls.items():
        for query, answer in questions.items():
            size = len((root / answer).read_text(encoding="utf-8"))
            if size >= LONG_NOTE:
                rank = rank_of(coll, query, answer, "keyword")
                rows.append([name, answer, f"{size:,}", query, str(rank or "-")])
    return rows


def main(write: bool = True) -> None:
    embedder = resolve_embedder(None)
    ds = load_beir(SHARED / "scifact", "test")
    scifact = open_index(ds, embedder, os.environ.get("SEMSEARCH_CACHE_DIR") or default_cache_dir())
    longq = {(r := json.loads(x))["_id"]: r["text"] for x in
             (DATA / "scifact_long_questions.jsonl").read_text().splitlines()}  # fmt: skip
    off = json.loads((DATA / "off_topic_questions.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        docs = vault(ROOT / "docs", Path(tmp) / "docs.embed.db", embedder)
        foam_root = SHARED / "vault" / "foam-docs"
        foam = vault(foam_root, Path(tmp) / "foam.embed.db", embedder)
        three = Path(tmp) / "three"
        three.mkdir()
        for name, text in THREE_NOTES.items():
            (three / name).write_text(text, encoding="utf-8")
        small = vault(three, Path(tmp) / "three.embed.db", embedder)
        question = "how do I make a link to another note"
        off_rows = [[corpus, mode, empty_share(coll, off[key], mode)]
                    for corpus, key, coll in (("SciFact", "scifact", scifact),
                                              ("docs/", "docs", docs))
                    for mode in ("hybrid", "semantic")]  # fmt: skip
        on_rows = on_topic(scifact, ds, longq)
        words = [[mode, str(rank_of(small, question, "linking-notes.md", mode))]
                 for mode in ("keyword", "hybrid")]  # fmt: skip
        notes = long_notes({"foam-docs": (foam, foam_root, QUESTIONS),
                            "docs/": (docs, ROOT / "docs", DOCS_QUESTIONS)})  # fmt: skip
        plain = bm25s_long(ds, longq)
        for coll in (docs, foam, small):
            coll.store.close()
    scifact.store.close()
    body = render(off_rows, on_rows, plain, words, notes, question)
    print(body)
    if write:
        write_section("trust", body)


def render(off_rows, on_rows, plain, words, notes, question) -> str:
    top3 = sum(1 for r in notes if r[4] != "-" and int(r[4]) <= 3)
    return "\n\n".join([
        "## Results you can trust: the default floor, calibrated hybrid scores, keyword BM25",
        f"Machine: {machine_info(('numpy', 'onnxruntime', 'bm25s'))}. Model: the default "
        "(all-MiniLM-L6-v2, int8). Command: `HF_HUB_OFFLINE=1 .venv/bin/python "
        "benchmarks/trust.py`.",
        "### Off-topic questions: searches that return nothing (default floor)",
        markdown_table(["corpus", "mode", "no hit"], off_rows),
        "### On-topic questions: SciFact test, limit 10",
        markdown_table(["mode", "nDCG@10, floor on", "floor off", "120 long questions, floor on",
                        "judged-relevant hits of the top 10 the floor removes"], on_rows),
        f"Plain BM25 (bm25s, Lucene IDF, English stop words removed) on the 120 long "
        f"questions: nDCG@10 {plain}.",
        f"### Question words: \"{question}\" in a three-note vault",
        markdown_table(["mode", "rank of linking-notes.md"], words),
        f"### Long notes (>= {LONG_NOTE:,} characters) answering a judged question, keyword mode",
        markdown_table(["vault", "note", "characters", "question", "rank"], notes),
        f"{top3} of {len(notes)} rank in the top 3.",
    ])  # fmt: skip


if __name__ == "__main__":
    main(write="--dry-run" not in sys.argv)
