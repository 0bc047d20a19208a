"""The background embedding worker on a real SQLite collection. Plumbing tests: the FakeEmbedder,
made flaky or switched off, stands in for an embedding outage."""

from __future__ import annotations

import threading

from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import EmbedderUnavailable
from semsearch.worker import EmbeddingWorker


class FlakyEmbedder(FakeEmbedder):
    """Fails the first ``failures`` embedding calls, then works (a transient outage)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures_left = failures
        self.attempts = 0

    def _embed_batch(self, texts, kind):
        self.attempts += 1
        if self.failures_left > 0:
            self.failures_left -= 1
            raise EmbedderUnavailable("flaky", hint="retry")
        return super()._embed_batch(texts, kind)


def _collection(db, embedder, n: int = 5):
    coll = db.collection("c", embedder=embedder)
    coll.upsert([{"id": f"r{i}", "text": f"record {i}"} for i in range(n)], embed=False)
    return coll


def test_transient_failures_are_retried_with_backoff(db) -> None:
    embedder = FlakyEmbedder(failures=2)
    coll = _collection(db, embedder)
    with EmbeddingWorker(attempts=3, backoff=0.01, max_backoff=0.02) as worker:
        assert worker.submit(coll)
        assert worker.wait_idle(10)
        status = worker.status("c")
    assert embedder.attempts == 3  # two failures, one success
    assert (status.embedded, status.failures, status.last_error) == (5, 0, None)
    assert coll.stats().embedded == 5


def test_worker_gives_up_then_a_later_submit_recovers(db) -> None:
    embedder = FakeEmbedder(fail=True)
    coll = _collection(db, embedder)
    with EmbeddingWorker(attempts=2, backoff=0.01, max_backoff=0.02) as worker:
        worker.submit(coll)
        assert worker.wait_idle(10)
        status = worker.status("c")
        assert status.failures == 1 and "switched off" in (status.last_error or "")
        assert coll.stats().failed == 5 and coll.stats().embedded == 0
        assert coll.count() == 5  # nothing stored was lost
        embedder.fail = False
        worker.submit(coll)
        assert worker.wait_idle(10)
        assert worker.status("c").last_error is None
    assert (coll.stats().embedded, coll.stats().failed) == (5, 0)


def test_queue_is_bounded_and_merges_repeated_submits(db) -> None:
    worker = EmbeddingWorker(queue_size=1)  # not started: nothing is taken off the queue
    a = _collection(db, FakeEmbedder())
    b = db.collection("other", embedder=FakeEmbedder())
    assert worker.submit(a) is True
    assert worker.submit(a) is True  # already queued: merged, not a second entry
    assert worker.submit(b) is False  # full: never blocks, the chunks stay pending
    assert worker.status().queued is True
    assert b.stats().pending == 0 and a.stats().pending == 5


def test_stop_ends_a_long_backoff(db) -> None:
    coll = _collection(db, FakeEmbedder(fail=True))
    worker = EmbeddingWorker(attempts=100, backoff=60, max_backoff=60)
    worker.start()
    worker.submit(coll)
    worker.stop(timeout=10)
    assert worker._thread is not None and not worker._thread.is_alive()
    assert worker.submit(coll) is False  # a stopped worker accepts nothing


def test_foreground_reindex_and_worker_never_embed_a_chunk_twice(db) -> None:
    embedder = FakeEmbedder()
    coll = _collection(db, embedder, n=300)
    with EmbeddingWorker(batch_size=16) as worker:
        worker.submit(coll)
        results: list[int] = []
        thread = threading.Thread(target=lambda: results.append(_reindex(worker, coll)))
        thread.start()
        thread.join(30)
        assert worker.wait_idle(30)
    assert embedder.texts_embedded == 300
    assert results[0] + worker.status("c").embedded == 300
    assert coll.stats().embedded == 300


def _reindex(worker: EmbeddingWorker, coll) -> int:
    with worker.exclusive(coll.name):
        return coll.reindex().chunks_embedded
