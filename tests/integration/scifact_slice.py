"""Write a 50-document slice of the real BEIR SciFact (../shared/data/scifact) to a folder.

The slice keeps the BEIR layout. It holds every document judged relevant for the first test
queries (in qrels order) until 25 such documents are in, then the first corpus documents not
yet taken until there are 50; the qrels keep the chosen queries only, so every judged document
is in the slice.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import shared_path

SIZE = 50
RELEVANT = 25


def write_scifact_slice(folder: Path) -> Path:
    """Write ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv`` under ``folder``."""
    src = shared_path("scifact")
    lines = (src / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    header, rows = lines[0], [line.split("\t") for line in lines[1:] if line.strip()]
    by_query: dict[str, list[str]] = {}
    for qid, did, _score in rows:
        by_query.setdefault(qid, []).append(did)
    queries: list[str] = []
    docs: dict[str, None] = {}
    for qid, dids in by_query.items():
        if len(docs) + len(dids) > RELEVANT:
            break
        queries.append(qid)
        docs.update(dict.fromkeys(dids))
    corpus = (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {json.loads(line)["_id"]: line for line in corpus}
    for doc_id in by_id:
        if len(docs) >= SIZE:
            break
        docs.setdefault(doc_id, None)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("\n".join(by_id[d] for d in docs) + "\n", "utf-8")
    keep = set(queries)
    query_lines = (src / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [line for line in query_lines if json.loads(line)["_id"] in keep]
    (folder / "queries.jsonl").write_text("\n".join(kept) + "\n", "utf-8")
    (folder / "qrels").mkdir(exist_ok=True)
    qrels = [header] + ["\t".join(r) for r in rows if r[0] in keep]
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n", "utf-8")
    return folder
