"""Every shell example in docs/ and README.md runs as written, so the docs cannot rot.

What runs: each fenced block tagged ``bash``, ``sh``, ``shell`` or ``console`` (for
``console``, the ``$ `` lines), one page at a time in order, in a fresh sandbox, with
``bash -e``: a failing command fails the test with the page, block and output.

What does not run: a block directly under the marker ``<!-- docs-test: skip (REASON) -->``.
Use it only for what cannot run here (packages to install, servers that run until stopped,
API keys, your own PostgreSQL server) and say why; tests elsewhere cover those commands.

The sandbox: ``~`` is a fresh home whose ``~/notes`` is a copy of the real foam-docs vault
(../shared/data/vault/foam-docs), the current folder holds ``notes.embed.db`` (that vault
indexed, as "Getting started" builds it) and ``../shared/data`` is the real data the recipes
name. ``semsearch`` and ``python`` are this checkout's. The model is the deterministic fake
embedder (``SEMSEARCH_MODEL=fake:32``): these tests check that commands run as written, not
what they rank, and the real model would make importing the SRD and the product catalogue
take minutes; ranking is tested with the real model elsewhere (tests/integration).

Also: an indented code block that starts with a shell command fails the test, so new examples
are fenced (and so run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import semsearch
from semsearch.sources.folder_guard import remember_folder
from semsearch.sources.vault import VAULT_SCHEMA, index_folder
from tests.conftest import SHARED_DATA, shared_path

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
SHELLS = ("bash", "sh", "shell", "console")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<why>[^)]+)\)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")
INDENTED_SHELL = re.compile(r"^    (\$ )?(semsearch|curl|pip|make|export|python|D=\S+)(?=\s)")


@dataclass(frozen=True)
class Block:
    """One fenced shell block of a page: 1-based line of its fence, its script, skip reason."""

    line: int
    script: str
    skip: str | None


def shell_blocks(text: str) -> list[Block]:
    """The fenced shell blocks of a markdown page, in order."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if match.group(1) in SHELLS:
            body = lines[i + 1 : end]
            if match.group(1) == "console":
                body = [b[2:] for b in body if b.startswith("$ ")]
            above = lines[i - 1] if i else ""
            marker = SKIP.search(above)
            blocks.append(Block(i + 1, "\n".join(body), marker.group("why") if marker else None))
        i = end + 1
    return blocks


def test_block_extraction_by_hand() -> None:
    page = (
        "text\n\n```bash\nsemsearch stats\n```\n\n<!-- docs-test: skip (a server) -->\n"
        "```sh\nsemsearch serve\n```\n\n```console\n$ semsearch eval x\nresult line\n```\n"
        "```python\nprint(1)\n```\n"
    )
    assert shell_blocks(page) == [
        Block(3, "semsearch stats", None),
        Block(8, "semsearch serve", "a server"),
        Block(12, "semsearch eval x", None),
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_shell_examples_are_fenced_and_skips_say_why(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    loose = [n for n, line in enumerate(text.split("\n"), 1) if INDENTED_SHELL.match(line)]
    in_fences = _fenced_lines(text)
    assert [n for n in loose if n not in in_fences] == [], "fence these as ```bash blocks"
    for marker in re.finditer(r"<!--\s*docs-test[^>]*-->", text):
        assert SKIP.fullmatch(marker.group(0)), f"malformed marker {marker.group(0)!r}"


def _fenced_lines(text: str) -> set[int]:
    inside, found = False, set()
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            inside = not inside
        elif inside:
            found.add(n)
    return found


@pytest.fixture(scope="module")
def notes_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """foam-docs indexed with the fake embedder, once; each page gets its own copy."""
    path = tmp_path_factory.mktemp("docs-index") / "notes.embed.db"
    with semsearch.connect(path) as db:
        coll = db.collection("notes", schema=VAULT_SCHEMA, embedder="fake:32")
        index_folder(coll, shared_path("vault", "foam-docs"))
    return path


def sandbox(root: Path, notes_index: Path) -> tuple[Path, dict[str, str]]:
    """(the folder to run in, the environment): see the module docstring."""
    home, work, bin_dir = root / "home", root / "work", root / "bin"
    for folder in (home, work, bin_dir, root / "shared"):
        folder.mkdir()
    shutil.copytree(shared_path("vault", "foam-docs"), home / "notes")
    shutil.copy(notes_index, work / "notes.embed.db")
    with semsearch.connect(work / "notes.embed.db") as db:  # ~/notes is where it was indexed
        remember_folder(db.collection("notes"), home / "notes")
    (root / "shared" / "data").symlink_to(SHARED_DATA)
    (bin_dir / "python").symlink_to(sys.executable)
    shim = bin_dir / "semsearch"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m semsearch.cli.app "$@"\n')
    shim.chmod(0o755)
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "PYTHONPATH": str(REPO),
        "SEMSEARCH_MODEL": "fake:32",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "LANG": "C.UTF-8",
    }
    return work, env


RUNNABLE = [
    page for page in PAGES if any(b.skip is None for b in shell_blocks(page.read_text("utf-8")))
]


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(REPO)))
def test_shell_examples_run_as_written(page: Path, tmp_path: Path, notes_index: Path) -> None:
    work, env = sandbox(tmp_path, notes_index)
    for block in shell_blocks(page.read_text(encoding="utf-8")):
        if block.skip is not None:
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.script],
            cwd=work, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        where = f"{page.relative_to(REPO)} line {block.line}"
        assert done.returncode == 0, f"{where} failed:\n{block.script}\n{done.stdout}{done.stderr}"
