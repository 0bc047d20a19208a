"""The per-user ONNX cache: built once, rebuilt when missing, truncated or foreign, safe to race."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from semsearch.embedders.local import LocalEmbedder
from semsearch.embedders.model_folder import ModelFolder
from semsearch.embedders.onnx.cache import GraphSpec, remove_stale_temps
from semsearch.errors import EmbedderUnavailable
from tests.engine.conftest import make_tiny_bert


def _graph(folder: Path, precision: str = "fp32") -> Path:
    return GraphSpec(ModelFolder(folder), precision, label=folder.name).path


def test_first_use_builds_the_graph_once_with_one_progress_line(
    tiny_bert: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("hello")
    first = capsys.readouterr().err
    assert first.count("preparing the model tiny-bert for ONNX Runtime (fp32), once") == 1
    built = _graph(tiny_bert)
    assert built.is_file() and built.parent.parent == cache_dir
    stamp = built.stat().st_mtime_ns
    LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("hello again")
    assert "preparing" not in capsys.readouterr().err
    assert built.stat().st_mtime_ns == stamp  # a second process reuses the file


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage"])
def test_a_missing_or_damaged_graph_is_rebuilt(
    tiny_bert: Path, cache_dir: Path, damage: str
) -> None:
    want = LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("the blue pot")
    graph = _graph(tiny_bert)
    if damage == "missing":
        graph.unlink()
    elif damage == "truncated":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    else:
        graph.write_bytes(os.urandom(4096))
    got = LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("the blue pot")
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert graph.stat().st_size > 100_000


def test_a_foreign_graph_under_the_expected_name_is_rebuilt(
    tmp_path: Path, cache_dir: Path
) -> None:
    # Another model's valid graph placed under this model's cache name must not be used.
    mine = make_tiny_bert(tmp_path / "mine", seed=1)
    other = make_tiny_bert(tmp_path / "other", seed=2)
    want = LocalEmbedder(str(mine), precision="fp32").embed_query("lighthouse key")
    LocalEmbedder(str(other), precision="fp32").embed_query("x")
    shutil.copy(_graph(other), _graph(mine))
    got = LocalEmbedder(str(mine), precision="fp32").embed_query("lighthouse key")
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_int8_and_fp32_graphs_are_cached_apart(tiny_bert: Path, cache_dir: Path) -> None:
    fp32 = LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("compost notes")
    int8 = LocalEmbedder(str(tiny_bert), precision="int8").embed_query("compost notes")
    assert _graph(tiny_bert, "fp32").is_file() and _graph(tiny_bert, "int8").is_file()
    assert _graph(tiny_bert, "int8").stat().st_size < _graph(tiny_bert, "fp32").stat().st_size
    assert 0.9 < float(fp32 @ int8) < 0.999999  # quantised: close, not identical


def test_two_processes_building_at_once_both_end_with_the_same_valid_graph(
    tiny_bert: Path, cache_dir: Path
) -> None:
    probe = (
        "import sys\n"
        "from semsearch.embedders.local import LocalEmbedder\n"
        "v = LocalEmbedder(sys.argv[1], precision='fp32').embed_query('race')\n"
        "print(' '.join(f'{x:.6f}' for x in v[:8]))\n"
    )
    env = {**os.environ, "SEMSEARCH_CACHE_DIR": str(cache_dir)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", probe, str(tiny_bert)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    assert outputs[0][0] == outputs[1][0] and outputs[0][0].strip()
    assert [p.name for p in _graph(tiny_bert).parent.iterdir()] == [_graph(tiny_bert).name]
    fresh = LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("race")
    assert " ".join(f"{x:.6f}" for x in fresh[:8]) == outputs[0][0].strip()


@pytest.mark.skipif(os.geteuid() == 0 and sys.platform != "linux", reason="needs POSIX modes")
def test_a_read_only_cache_folder_gives_a_clear_error_with_a_hint(
    tiny_bert: Path, cache_dir: Path
) -> None:
    cache_dir.mkdir()
    (cache_dir / "onnx").write_text("not a folder")  # unwritable even for root
    with pytest.raises(EmbedderUnavailable) as caught:
        LocalEmbedder(str(tiny_bert), precision="fp32").embed_query("x")
    assert "cannot write the model cache" in caught.value.message
    assert "SEMSEARCH_CACHE_DIR" in (caught.value.hint or "")


def test_temp_files_of_a_killed_builder_are_removed(cache_dir: Path) -> None:
    folder = cache_dir / "onnx"
    folder.mkdir(parents=True)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    stale = folder / f".model.onnx.tmp-{dead.stdout.strip()}-1"
    live = folder / f".model.onnx.tmp-{os.getpid()}-2"
    stale.write_bytes(b"half a graph")
    live.write_bytes(b"being written")
    assert remove_stale_temps(folder) == [stale]
    assert not stale.exists() and live.exists()


def test_the_onnx_engine_refuses_a_model_it_cannot_build_with_the_extra_to_install(
    tiny_bert: Path,
) -> None:
    config = (tiny_bert / "config.json").read_text().replace('"bert"', '"deberta-v2"')
    (tiny_bert / "config.json").write_text(config)
    assert LocalEmbedder(str(tiny_bert)).engine == "torch"  # auto falls back
    with pytest.raises(EmbedderUnavailable) as caught:
        _ = LocalEmbedder(str(tiny_bert), engine="onnx").engine
    assert "deberta-v2" in caught.value.message and "semsearch[torch]" in (caught.value.hint or "")
