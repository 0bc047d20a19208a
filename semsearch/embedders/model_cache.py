"""The model cache: Hugging Face Hub models pulled once, found offline by ``local:<hub-id>``.

``semsearch models pull <hub-id>`` (:func:`semsearch.models.pull`) fills it; nothing else
downloads. This module only reads and lays it out, with no network code, so the search path
can resolve ``local:<hub-id>`` without importing ``huggingface_hub``. Layout, under the cache
folder (:func:`~semsearch.embedders.onnx.cache.cache_root`)::

    <cache>/models/<org>--<name>/              one folder per Hub id
        config.json, model.safetensors, ...    the model's files, as in the Hub repository
        .pull/<digest>.part                    a file still downloading (resumed by Range)
        semsearch-pull.json                    the completion marker, written last, atomically

A folder without the marker is a pull that did not finish (killed, offline, a file that
failed its checksum): it is never used; ``local:<hub-id>`` then raises EmbedderUnavailable
naming the ``pull`` command, which finishes it. The marker records the pinned commit and each
file's size and digest (sha256 for Git LFS files, the Git blob id for the others), as the Hub
advertised them and as the pull verified them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from semsearch.atomic_file import write_atomically
from semsearch.embedders.onnx.cache import cache_root
from semsearch.errors import EmbedderUnavailable

__all__ = [
    "MARKER",
    "PARTS",
    "PulledFile",
    "PulledModel",
    "is_hub_id",
    "model_dir",
    "models_root",
    "pull_hint",
    "pulled_folder",
    "pulled_models",
    "read_marker",
    "write_marker",
]

MARKER = "semsearch-pull.json"
PARTS = ".pull"
#: ``<org>/<name>``, as the Hub spells repository ids (letters, digits, ``-``, ``_``, ``.``).
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


@dataclass(frozen=True)
class PulledFile:
    """One file of a pulled model.

    ``name`` is its path in the repository (``/``-separated), ``size`` in bytes, ``sha256`` the
    hex SHA-256 of a Git LFS file (None for a plain Git file), ``blob_id`` the hex Git blob id
    (SHA-1 of ``"blob <size>\\0" + bytes``) of a plain Git file (None for an LFS file).
    """

    name: str
    size: int
    sha256: str | None
    blob_id: str | None


@dataclass(frozen=True)
class PulledModel:
    """A finished pull: what :func:`semsearch.models.pull` returns and the marker records.

    ``revision`` is the 40-hex commit the files came from (pinned even when a branch was
    asked for), ``requested`` what was asked (``"main"``, a tag or a commit), ``folder`` the
    model folder, ``endpoint`` the Hub it came from, ``pulled_at`` an ISO 8601 UTC time.
    """

    hub_id: str
    revision: str
    requested: str
    folder: Path
    endpoint: str
    pulled_at: str
    files: tuple[PulledFile, ...]

    @property
    def bytes(self) -> int:
        """Total size of the files, in bytes."""
        return sum(f.size for f in self.files)

    @property
    def spec(self) -> str:
        """The embedder spec that uses it: ``local:<hub-id>``."""
        return f"local:{self.hub_id}"


def is_hub_id(name: str) -> bool:
    """True when ``name`` has the shape of a Hub model id, ``<org>/<name>`` (no options)."""
    return bool(_HUB_ID.fullmatch(name)) and ".." not in name


def models_root() -> Path:
    """``<cache>/models`` (not created here)."""
    return cache_root() / "models"


def model_dir(hub_id: str) -> Path:
    """The folder of one Hub id: ``<cache>/models/<org>--<name>`` (not created here)."""
    return models_root() / hub_id.replace("/", "--", 1)


def pull_hint(hub_id: str) -> str:
    """The fix for a model that is not (completely) pulled."""
    return (
        f"run `semsearch models pull {hub_id}` once (it downloads into the model cache; "
        "searching and indexing never download)"
    )


def read_marker(folder: Path) -> PulledModel | None:
    """The completion marker of a model folder, or None when absent or unreadable."""
    try:
        doc = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        files = tuple(PulledFile(**f) for f in doc.pop("files"))
        return PulledModel(folder=folder, files=files, **doc)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def write_marker(model: PulledModel) -> None:
    """Write the completion marker (atomically: readers see none or all of it), last."""
    doc = asdict(model)
    del doc["folder"]
    data = json.dumps(doc, indent=2).encode()

    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    write_atomically(str(model.folder / MARKER), write)


def pulled_folder(hub_id: str) -> Path:
    """The folder of a finished pull of ``hub_id``.

    Raises:
        EmbedderUnavailable: it was never pulled, or its pull did not finish (the folder has
            no completion marker); the hint names ``semsearch models pull``.
    """
    folder = model_dir(hub_id)
    record = read_marker(folder)
    if record is not None and record.hub_id == hub_id:
        return folder
    if folder.is_dir():
        raise EmbedderUnavailable(
            f"the pull of {hub_id} did not finish, so its folder is not used",
            hint=f"run `semsearch models pull {hub_id}` again: it resumes where it stopped",
        )
    raise EmbedderUnavailable(
        f"model {hub_id} is not in the model cache (nor a folder here)", hint=pull_hint(hub_id)
    )


def pulled_models() -> list[tuple[str, PulledModel | None]]:
    """Every Hub id with a folder in the cache, sorted, with its record (None: unfinished)."""
    root = models_root()
    if not root.is_dir():
        return []
    found: list[tuple[str, PulledModel | None]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        record = read_marker(folder)
        hub_id = record.hub_id if record else folder.name.replace("--", "/", 1)
        found.append((hub_id, record))
    return found
