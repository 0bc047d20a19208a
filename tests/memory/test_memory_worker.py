"""Background embedding of conversation memory: drain, persistence across stop and crash, retries.

All with the deterministic fake embedder (plumbing), slowed down or switched off on purpose.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from semsearch.embedders.fake import FakeEmbedder
from semsearch.memory.conversation import ConversationMemory
from semsearch.worker import EmbeddingWorker

REPO = Path(__file__).resolve().parents[2]


class SlowFake(FakeEmbedder):
    """The fake embedder, ``delay`` seconds slower per batch."""

    def __init__(self, delay: float) -> None:
        super().__init__(32)
        self.delay = delay

    def _embed_batch(self, texts, kind):
        time.sleep(self.delay)
        return super()._embed_batch(texts, kind)


class FlakyFake(FakeEmbedder):
    """The fake embedder, failing its first ``failures`` document batches."""

    def __init__(self, failures: int) -> None:
        super().__init__(32)
        self.failures = failures
        self.lock = threading.Lock()

    def _embed_batch(self, texts, kind):
        with self.lock:
            if kind == "document" and self.failures > 0:
                self.failures -= 1
                from semsearch.errors import EmbedderUnavailable

                raise EmbedderUnavailable("flaky embedder: temporary outage")
        return super()._embed_batch(texts, kind)


def _add(memory: ConversationMemory, n: int, user: str = "u") -> list[str]:
    return [
        memory.add_message(user, f"c{i % 7}", "user", f"message number {i} about topic {i % 5}").id
        for i in range(n)
    ]


def test_add_message_returns_before_embedding_with_fake_embedder(tmp_path: Path):
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=SlowFake(1.0))
    ids = _add(memory, 3)
    assert memory.stats().pending >= 2  # the worker is still inside its first (slow) batch
    memory.close(drain=True)
    again = ConversationMemory(str(tmp_path / "m.embed.db"), embedder="fake:32", background=False)
    stats = again.stats()
    assert (stats.messages, stats.embedded, stats.pending) == (3, 3, 0)
    assert {
        h.message.id for h in again.search("u", "message number", min_score=None, limit=5)
    } == set(ids)
    again.close()


def test_close_drains_the_queue_with_fake_embedder(tmp_path: Path):
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=SlowFake(0.05))
    ids = _add(memory, 150)  # 3 batches of 64
    memory.close(drain=True, timeout=60)
    again = ConversationMemory(str(tmp_path / "m.embed.db"), embedder="fake:32", background=False)
    assert (again.stats().embedded, again.stats().pending) == (150, 0)
    hits = again.search("u", "message number", min_score=None, limit=200)
    assert {h.message.id for h in hits} == set(ids)
    again.close()


def test_stop_without_drain_persists_the_queue_in_the_store_with_fake_embedder(tmp_path: Path):
    path = str(tmp_path / "m.embed.db")
    memory = ConversationMemory(path, embedder=SlowFake(0.3))
    _add(memory, 200)
    memory.close(drain=False)
    again = ConversationMemory(path, embedder="fake:32", background=False)
    before = again.stats()
    assert before.messages == 200 and before.pending > 0
    report = again.backfill()
    assert report.ok and report.embedded == before.pending
    assert again.stats().embedded == 200
    again.close()


def test_a_new_memory_resumes_pending_work_in_the_background_with_fake_embedder(tmp_path: Path):
    path = str(tmp_path / "m.embed.db")
    offline = ConversationMemory(path, embedder="fake:32", background=False)
    _add(offline, 20)
    offline.close()
    resumed = ConversationMemory(path, embedder="fake:32")  # starts its worker, finds pending
    assert resumed.wait_idle(30)
    assert resumed.stats().pending == 0
    resumed.close()


CRASHING_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from semsearch.embedders.fake import FakeEmbedder
    from semsearch.memory.conversation import ConversationMemory

    class Slow(FakeEmbedder):
        def _embed_batch(self, texts, kind):
            time.sleep(0.2)
            return super()._embed_batch(texts, kind)

    memory = ConversationMemory(sys.argv[1], embedder=Slow(32))
    for i in range(300):
        memory.add_message("u", f"c{i % 3}", "user", f"crash test message {i}")
    deadline = time.time() + 60
    while memory.stats().embedded == 0 and time.time() < deadline:
        time.sleep(0.05)
    print(memory.stats().embedded, flush=True)
    os._exit(9)  # a crash: no close, no drain, the worker thread dies mid-queue
    """
)


def test_a_crash_mid_queue_loses_no_message_and_backfill_embeds_the_rest(tmp_path: Path):
    path = str(tmp_path / "crash.embed.db")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, path],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert child.returncode == 9, child.stderr
    embedded_before_crash = int(child.stdout.strip())
    assert 0 < embedded_before_crash < 300
    memory = ConversationMemory(path, embedder="fake:32", background=False)
    stats = memory.stats()
    assert stats.messages == 300
    assert stats.embedded + stats.pending + stats.failed == 300
    assert stats.pending > 0
    report = memory.backfill()
    assert report.ok and memory.stats().embedded == 300
    contents = {m.content for c in ("c0", "c1", "c2") for m in memory.recent("u", c, n=1000)}
    assert contents == {f"crash test message {i}" for i in range(300)}
    memory.close()


def test_embedder_outage_is_retried_with_backoff_with_fake_embedder(tmp_path: Path):
    worker = EmbeddingWorker(attempts=5, backoff=0.01, max_backoff=0.05)
    worker.start()
    memory = ConversationMemory(
        str(tmp_path / "m.embed.db"), embedder=FlakyFake(failures=2), worker=worker
    )
    ids = _add(memory, 5)
    assert memory.wait_idle(30)
    assert memory.stats().embedded == 5  # two failed tries, then the third succeeded
    assert worker.status("messages").failures == 0
    memory.close()
    assert (
        worker._thread is not None and worker._thread.is_alive()
    )  # a shared worker is not stopped
    worker.stop()
    assert len(ids) == 5


def test_add_message_never_raises_when_the_embedder_is_down_with_fake_embedder(tmp_path: Path):
    embedder = FakeEmbedder(32, fail=True)
    worker = EmbeddingWorker(attempts=2, backoff=0.01, max_backoff=0.02)
    worker.start()
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=embedder, worker=worker)
    _add(memory, 10)
    assert memory.wait_idle(30)
    stats = memory.stats()
    assert stats.messages == 10 and stats.embedded == 0 and stats.failed == 10
    health = memory.health()
    assert not health.ok and health.worker is not None and health.worker.last_error
    embedder.fail = False
    memory.add_message("u", "c0", "user", "the embedder is back")  # the next submit retries all
    assert memory.wait_idle(30)
    assert memory.stats().embedded == 11
    memory.close()
    worker.stop()


def test_health_counts_pending_and_failed_as_stats_does_with_fake_embedder(tmp_path: Path):
    """Issue 46, item 10: during an outage health said "1 pending" while stats said 0 pending
    and 1 failed (health added the two)."""
    embedder = FakeEmbedder(32, fail=True)
    worker = EmbeddingWorker(attempts=1, backoff=0.01, max_backoff=0.02)
    worker.start()
    memory = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=embedder, worker=worker)
    _add(memory, 1)
    assert memory.wait_idle(30)
    stats = memory.stats()
    assert (stats.pending, stats.failed) == (0, 1)  # the worker tried once and marked it failed
    other = ConversationMemory(str(tmp_path / "m.embed.db"), embedder=embedder, background=False)
    other.add_message("u", "c1", "user", "not tried yet")  # no worker: stays pending
    other.close()
    stats, health = memory.stats(), memory.health()
    assert (stats.pending, stats.failed) == (1, 1)
    assert (health.pending, health.failed) == (1, 1)
    assert "1 pending, 1 failed" in health.store.detail
    memory.close()
    worker.stop()
