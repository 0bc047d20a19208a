"""Another commit's code beside the current one, for benchmarks that compare the two (``--compare``).

:func:`checkout` extracts a commit's tree (``git archive``) into a temporary folder that is
removed afterwards; the repository's branches, index and worktree list are left alone. A
:class:`Ref` runs Python in that folder with the same virtualenv, with cwd and ``PYTHONPATH`` set
to the checkout, so the subprocess imports the commit's own ``semsearch`` and ``benchmarks``
(the editable install's finder comes after both on the import path); :meth:`Ref.probe` checks
that it really does. An index must be built by the code that reads it (schema versions), so
:meth:`Ref.build_index` builds the reference's own with the commit's own ``build_index``.
:func:`compare_rows` (with :func:`ratio` and :func:`verdict`) makes the rows of a ratio table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Ref",
    "RefError",
    "add_compare_arguments",
    "check_indexes",
    "checkout",
    "compare_rows",
    "ratio",
    "verdict",
]

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import json, sys
import semsearch
module = __import__(sys.argv[1], fromlist=["_"])
print(json.dumps({"semsearch": semsearch.__file__, "queries": getattr(module, "QUERIES", None)}))
"""

_BUILD = """
import sys
from pathlib import Path
module = __import__(sys.argv[1], fromlist=["_"])
setattr(module, sys.argv[2], Path(sys.argv[3]))  # the data, wherever the checkout lies
module.build_index(Path(sys.argv[4]))
"""


class RefError(RuntimeError):
    """The reference commit cannot be benchmarked: unknown, or it lacks what the comparison runs."""


@dataclass(frozen=True)
class Ref:
    """A commit's tree extracted at ``path``: ``name`` as given on the command line, ``sha``."""

    name: str
    sha: str
    path: Path

    @property
    def short(self) -> str:
        """The abbreviated sha, as tables show it."""
        return self.sha[:7]

    def env(self) -> dict[str, str]:
        """This environment with the checkout first on the import path, models offline."""
        return {
            **os.environ,
            "PYTHONPATH": str(self.path),
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }

    def python(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        """Run ``python ARGS`` in the checkout; stdout captured, stderr passed through."""
        return subprocess.run(
            [sys.executable, *args],
            cwd=self.path,
            env=self.env(),
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )

    def require(self, relpath: str, *needles: str) -> None:
        """Fail with a clear message unless the checkout's ``relpath`` contains every needle."""
        file = self.path / relpath
        text = file.read_text(encoding="utf-8") if file.exists() else ""
        missing = [n for n in needles if n not in text]
        if not file.exists() or missing:
            what = "does not exist" if not file.exists() else f"has no {', '.join(missing)}"
            named = self.name if self.sha.startswith(self.name) else f"{self.name} ({self.short})"
            raise RefError(
                f"{named}: {relpath} {what}; the comparison runs that script of the reference "
                "commit, so pick a commit that has it"
            )

    def probe(self, module: str) -> dict[str, Any]:
        """Import ``module`` in the checkout; its ``semsearch.__file__`` and ``QUERIES``.

        Raises :class:`RefError` when the subprocess imported a ``semsearch`` from elsewhere
        (then the comparison would measure the current code twice)."""
        info: dict[str, Any] = json.loads(self.python(["-c", _PROBE, module]).stdout)
        if not Path(info["semsearch"]).resolve().is_relative_to(self.path.resolve()):
            raise RefError(f"{self.short} imported semsearch from {info['semsearch']}")
        return info

    def build_index(self, module: str, data_attr: str, data: Path, index: Path) -> bool:
        """Build ``index`` with the commit's own ``module.build_index`` unless it exists.

        ``module.<data_attr>`` is pointed at ``data`` first (the commit's default path is
        relative to its checkout). Built under a temporary name and renamed at the end, so an
        interrupted build leaves no half index; the sha goes to ``<index>.sha``. Returns whether
        it built. An existing index built from another sha is used with a warning."""
        stamp = index.with_name(index.name + ".sha")
        if index.exists():
            built_by = stamp.read_text().strip() if stamp.exists() else "an unknown commit"
            if built_by != self.sha:
                print(f"warning: {index} was built by {built_by}, not {self.sha}", file=sys.stderr)
            return False
        index.parent.mkdir(parents=True, exist_ok=True)
        partial = index.with_name(".building-" + index.name)
        for leftover in partial.parent.glob(partial.name + "*"):
            leftover.unlink()
        self.python(["-c", _BUILD, module, data_attr, str(data.resolve()), str(partial.resolve())])
        partial.replace(index)
        stamp.write_text(self.sha + "\n")
        return True


def resolve(ref: str) -> str:
    """The full sha of commit ``ref`` in this repository."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        raise RefError(f"{ref!r} is not a commit of {ROOT}")
    return done.stdout.strip()


def subject(sha: str) -> str:
    """The commit's subject line, shortened to 100 characters."""
    out = subprocess.run(
        ["git", "log", "-1", "--format=%s", sha],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout.strip()
    return out if len(out) <= 100 else out[:99] + "…"


@contextmanager
def checkout(ref: str) -> Iterator[Ref]:
    """The tree of commit ``ref`` in a temporary folder (``git archive | tar -x``), removed on exit."""
    sha = resolve(ref)
    with tempfile.TemporaryDirectory(prefix=f"semsearch-{sha[:7]}-") as tmp:
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        assert archive.stdout is not None
        untar = subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout)
        archive.stdout.close()
        if archive.wait() != 0 or untar.returncode != 0:
            raise RefError(f"could not extract {sha} with git archive")
        yield Ref(ref, sha, Path(tmp))


def ratio(current: float | None, ref: float | None) -> str:
    """``current / ref`` to two decimals; "n/a" when either is missing or ref is 0."""
    if current is None or ref is None or ref == 0:
        return "n/a"
    return f"{current / ref:.2f}"


def verdict(ratios: list[tuple[str, bool]], tolerance: float) -> str:
    """Read ratios (current / ref, as :func:`ratio` formats them), each with whether higher is
    better (QPS) or lower (latency): "slower" when any is worse than ``tolerance`` (0.1 = 10%),
    "faster" when any is better and none worse, else "same"; "n/a" when a ratio is."""
    if any(r == "n/a" for r, _ in ratios):
        return "n/a"
    gains = [float(r) if higher else 1 / max(float(r), 1e-9) for r, higher in ratios]
    if any(g < 1 - tolerance for g in gains):
        return "slower"
    if any(g > 1 + tolerance for g in gains):
        return "faster"
    return "same"


Key = tuple[object, ...]
Figures = Mapping[str, float | None]


def compare_rows(
    current: Sequence[tuple[Key, Figures]],
    ref: Mapping[Key, Figures],
    weigh: Callable[[Key], Sequence[tuple[str, bool]]],
    tolerance: float,
) -> list[list[object]]:
    """One row per ``current`` entry, in order: its key's cells, the ratio current / ref of each
    of its figures (in the figures' order; "n/a" when the ref lacks the key or a figure is None),
    and the :func:`verdict` over the figures ``weigh(key)`` names, each with whether higher is
    better. A run that had errors should pass None figures."""
    rows = []
    for key, figures in current:
        old = ref.get(key, {})
        ratios = {name: ratio(value, old.get(name)) for name, value in figures.items()}
        said = verdict([(ratios[name], higher) for name, higher in weigh(key)], tolerance)
        rows.append([*key, *ratios.values(), said])
    return rows


def add_compare_arguments(
    parser: argparse.ArgumentParser, data: str, compared: str, judged: str
) -> None:
    """The options every comparing benchmark takes: ``--no-write``, ``--compare REF``,
    ``--ref-index`` (REF's own index of ``data``), ``--tolerance``. ``compared`` says what
    REF runs, ``judged`` which ratio the verdict reads."""
    parser.add_argument("--no-write", action="store_true",
                        help="print only; leave docs/benchmarks.md alone (smoke runs)")  # fmt: skip
    parser.add_argument("--compare", metavar="REF",
                        help=f"also run git commit REF's {compared}; print ratios")  # fmt: skip
    parser.add_argument("--ref-index", type=Path,
                        help=f"REF's {data} index, built by REF's code (built there if missing)")  # fmt: skip
    parser.add_argument("--tolerance", type=float, default=0.1,
                        help=f"{judged} beyond which a verdict reads slower or faster (0.1 = 10%%)")  # fmt: skip


def check_indexes(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse ``--ref-index`` equal to ``--index``: each code reads the index it built."""
    if args.index and args.ref_index and Path(args.index).resolve() == args.ref_index.resolve():
        parser.error("--ref-index must differ from --index: each code reads the index it built")
