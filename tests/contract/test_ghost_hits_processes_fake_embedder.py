"""Ghost hits under real processes (issue 24, item 1): one process upserts and deletes groups
of records while others search in every mode; no hit may be a deleted record (``fields ==
{}`` or ``chunk is None``). Milvus Lite is left out: its file is opened by one process only.
Plumbing test with the deterministic fake embedder, a few seconds long."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.contract.conftest import StoreUnderTest

SECONDS = 3.0

SCRIPT = textwrap.dedent(
    """
    import sys, time
    import semsearch
    from semsearch.embedders.fake import FakeEmbedder

    location, role, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    db = semsearch.connect(location)
    coll = db.collection("churn", embedder=FakeEmbedder(32))
    print("ready", flush=True)
    sys.stdin.readline()  # go
    end = time.monotonic() + seconds
    if role == "writer":
        group = 0
        while time.monotonic() < end:
            coll.upsert([{"id": f"g{group}-{i}", "text": f"garden shed {i} of group {group}",
                          "tag": group} for i in range(50)])
            coll.delete([f"g{group - 1}-{i}" for i in range(50)])
            group += 1
        print(f"groups {group}", flush=True)
    else:
        ghosts = searches = 0
        while time.monotonic() < end:
            for mode in ("semantic", "keyword", "hybrid"):
                result = coll.search("garden shed group", mode=mode, limit=20, min_score=None)
                ghosts += sum(1 for h in result if h.fields == {} or h.chunk is None)
                searches += 1
        print(f"ghosts {ghosts} searches {searches}", flush=True)
    db.close()
    """
)


def test_no_ghost_hits_while_another_process_deletes_fake_embedder(store: StoreUnderTest) -> None:
    if store.backend == "milvus":
        pytest.skip("Milvus Lite opens its file in one process only")
    with store.connect() as db:  # the collection exists before the processes start
        coll = db.collection("churn", embedder="fake:32")
        coll.upsert([{"id": f"g-1-{i}", "text": f"garden shed {i}", "tag": -1} for i in range(50)])
    roles = ["writer", "reader", "reader"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SCRIPT, store.location, role, str(SECONDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for role in roles
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        answers = [proc.communicate(timeout=120)[0].split() for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    assert answers[0][0] == "groups" and int(answers[0][1]) > 2  # the writer churned
    for answer in answers[1:]:
        assert answer[0] == "ghosts" and int(answer[3]) > 0
        assert int(answer[1]) == 0, f"ghost hits: {answer}"
