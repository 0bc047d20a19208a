"""Thresholds the user measured on their own collection (``semsearch models calibrate --save``).

One JSON file next to the pulled models, ``<cache>/models/calibrations.json``
(:func:`~semsearch.embedders.model_cache.models_root`)::

    {"<model name>": {"threshold": 0.33, "quantile": 0.9, "records": 1000, "pairs": 499500,
                      "collection": "notes", "index": "notes.embed.db", "saved_at": "..."}}

Keys are model names as :func:`~semsearch.embedders.thresholds.model_names` gives them first
(the model id without ``?options``). Read on each lookup only when the file changed (by size and
mtime), so a save is seen by a running process without a restart.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from semsearch.atomic_file import write_atomically
from semsearch.embedders.model_cache import models_root
from semsearch.errors import SemsearchError

__all__ = ["FILE", "calibration_file", "save_threshold", "saved_threshold", "saved_thresholds"]

FILE = "calibrations.json"

_lock = threading.Lock()
_memo: dict[str, tuple[tuple[int, int], dict[str, dict[str, Any]]]] = {}


def calibration_file() -> Path:
    """``<cache>/models/calibrations.json`` (not created here)."""
    return models_root() / FILE


def saved_thresholds() -> dict[str, dict[str, Any]]:
    """Every saved entry, ``{model name: entry}``; empty when there is no file or it is not a
    JSON object (a damaged file is ignored here, never fatal to a search)."""
    path = calibration_file()
    try:
        stat = path.stat()
    except OSError:
        return {}
    stamp = (stat.st_size, stat.st_mtime_ns)
    with _lock:
        memo = _memo.get(str(path))
        if memo is not None and memo[0] == stamp:
            return memo[1]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    entries = {
        k: v
        for k, v in (doc.items() if isinstance(doc, dict) else ())
        if isinstance(v, dict) and _valid(v.get("threshold"))
    }
    with _lock:
        _memo[str(path)] = (stamp, entries)
    return entries


def saved_threshold(name: str) -> float | None:
    """The saved threshold of a model name (a cosine in [-1, 1]), or None."""
    entry = saved_thresholds().get(name)
    return float(entry["threshold"]) if entry is not None else None


def save_threshold(name: str, entry: dict[str, Any]) -> Path:
    """Store ``entry`` (must hold ``threshold``, a cosine in [-1, 1]) for model ``name``,
    keeping the other models' entries; written atomically. Returns the file.

    Raises:
        SemsearchError: the threshold is out of range, or the cache folder is not writable.
    """
    if not _valid(entry.get("threshold")):
        raise SemsearchError(
            f"threshold {entry.get('threshold')!r} is not a cosine in [-1, 1]",
            hint="recalibrate on a collection with embedded records",
        )
    path = calibration_file()
    doc = dict(saved_thresholds())
    doc[name] = entry
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"

        def write(tmp: str) -> None:
            Path(tmp).write_text(text, encoding="utf-8")

        write_atomically(str(path), write)
    except OSError as exc:
        raise SemsearchError(
            f"cannot write {FILE} in the model cache: {exc.strerror or exc}",
            hint="set SEMSEARCH_CACHE_DIR to a writable folder",
        ) from exc
    return path


def _valid(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and -1 <= value <= 1
