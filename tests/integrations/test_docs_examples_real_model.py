"""The runnable examples of the integration and async docs pages work as written.

Each fenced ```python block of these pages runs as a new user would run it: a fresh process in an
empty folder, the packaged all-MiniLM-L6-v2 (real model, nothing downloaded). The printed lines
checked here are what the pages say the example prints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: str) -> list[str]:
    """The fenced ```python blocks of ``docs/<page>``, in order."""
    return _BLOCK.findall((REPO / "docs" / page).read_text(encoding="utf-8"))


def run_example(code: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    env.pop("SEMSEARCH_MODEL", None)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("page", ["integrations/langchain.md", "integrations/llamaindex.md"])
def test_integration_page_example_prints_what_the_page_says(page: str, tmp_path: Path) -> None:
    (code,) = python_blocks(page)
    lines = run_example(code, tmp_path).splitlines()
    assert [line.split()[1] for line in lines] == ["tomatoes", "roses"]
    scores = [float(line.split()[0]) for line in lines]
    assert scores == pytest.approx([0.58, 0.11], abs=0.02)  # as the page states


def test_async_api_example_runs(tmp_path: Path) -> None:
    # the page's other examples (e.g. pulling a model from the Hub) cannot run offline
    (code,) = [block for block in python_blocks("python-api.md") if "aconnect" in block]
    assert run_example(code, tmp_path).splitlines() == [
        "['tomatoes'] 2",
        "['I keep having sleepless nights']",
    ]
