"""Estimate a model's ``min_score`` from a collection's own stored vectors (no labels, no
re-embedding): ``semsearch models calibrate``.

Method: cosine similarities between records that have nothing to do with each other set the
noise floor. From a random sample of records, every pair of distinct sampled records is scored
as search scores a document, by its best chunk (the highest cosine between any chunk of one and
any chunk of the other); most such pairs are unrelated, so a high quantile of this "random
pair" distribution is where a hit starts to mean something. The threshold is its
:data:`QUANTILE` (85th percentile), rounded to 0.01. Each record's nearest neighbour in the
sample is reported beside it as a check: related records should mostly score above the
threshold.

This follows the observation that embedding spaces are anisotropic, so unrelated texts do not
score near 0 and a fixed cosine cut-off does not carry across models (Ethayarajh, "How
Contextual are Contextualized Word Representations?", EMNLP 2019); the floor is therefore
measured per model, on the user's own texts, as a quantile of the unrelated-pair scores.

Why the 85th percentile (measured with ``semsearch.embedders.calibration`` on the full BEIR
SciFact index; the test is ``tests/integration/test_calibration_minilm.py``): all-MiniLM-L6-v2 (int8)
on SciFact, whose threshold was measured against judged relevance (0.30 keeps 95% of the
judged pairs; 0.34 rejects 95% of off-topic questions, :mod:`semsearch.embedders.thresholds`).
Over all 5,183 records the random-pair distribution has mean 0.17, sd 0.125, 90th percentile
0.33, 95th 0.38, 99th 0.48. The 95th-99th percentiles sit 0.08-0.18 above the measured 0.30
(queries are short, so query-document cosines run lower than document-document ones); the
85th gave 0.30-0.31 on samples of 300 and 1,000 records over 4 seeds each (the 90th:
0.33-0.35). It is fitted to one model and one corpus, and is conservative (low) by design:
a corpus of one narrow topic raises the estimate (its random pairs are related), one of many
topics lowers it (keeps more hits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from semsearch.errors import CalibrationFailed
from semsearch.results import CollectionStats


class StoredVectors(Protocol):
    """What calibration reads of a collection (a :class:`semsearch.Collection` has it all;
    the protocol keeps this module below the collection in the import layers)."""

    @property
    def name(self) -> str: ...

    def ids(self) -> list[str]: ...

    def vectors(self, ids: str | Sequence[str]) -> dict[str, list[NDArray[np.float32] | None]]: ...

    def stats(self) -> CollectionStats: ...


__all__ = [
    "MAX_CHUNKS",
    "MIN_RECORDS",
    "QUANTILE",
    "Calibration",
    "Distribution",
    "calibrate",
    "check_model",
    "check_savable",
    "save_calibration",
]

#: The quantile of the random-pair cosines taken as the threshold (see the module docstring).
QUANTILE = 0.85
#: Fewer embedded records than this give too few pairs to place the quantile.
MIN_RECORDS = 50
#: Chunks per record scored (its first ones): bounds the work on long documents.
MAX_CHUNKS = 8
_ID_BATCH = 500


@dataclass(frozen=True)
class Distribution:
    """Summary of cosine similarities (each in [-1, 1]): ``count`` values, their mean, standard
    deviation and percentiles (``p05`` = 5th, ... ``p99`` = 99th)."""

    count: int
    mean: float
    sd: float
    p05: float
    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: NDArray[np.floating]) -> Distribution:
        """The summary of a 1-d array of cosines (at least one value)."""
        p05, p50, p90, p95, p99 = (float(v) for v in np.percentile(values, [5, 50, 90, 95, 99]))
        return cls(len(values), float(values.mean()), float(values.std()), p05, p50, p90, p95, p99)


@dataclass(frozen=True)
class Calibration:
    """A threshold estimated from a collection.

    Attributes:
        model_id: the collection's model id (whose vectors were read).
        threshold: the estimated ``min_score``, a cosine in [-1, 1] rounded to 0.01.
        quantile: the quantile of ``random_pairs`` it is (:data:`QUANTILE`).
        records: records sampled (each with at least one embedded chunk).
        random_pairs: best-chunk cosines of every pair of distinct sampled records.
        nearest: each sampled record's best-chunk cosine to its nearest other sampled record.
        nearest_above: the share (0-1) of ``nearest`` at or above ``threshold``.
    """

    model_id: str
    threshold: float
    quantile: float
    records: int
    random_pairs: Distribution
    nearest: Distribution
    nearest_above: float


def calibrate(
    collection: StoredVectors, sample: int = 1000, seed: int = 0, quantile: float = QUANTILE
) -> Calibration:
    """Estimate ``collection``'s model threshold from its stored chunk vectors (module docstring).

    Args:
        collection: an open collection; only its stored vectors are read (the model is not
            loaded).
        sample: records drawn at random (without replacement; all when fewer). Work grows with
            its square: 1,000 records of up to :data:`MAX_CHUNKS` chunks take seconds.
        seed: the random generator's seed (same seed, same collection: same estimate).
        quantile: in (0, 1); the default :data:`QUANTILE` is the measured one.
    Returns:
        A :class:`Calibration`.
    Raises:
        CalibrationFailed: ``sample`` below :data:`MIN_RECORDS`, ``quantile`` outside (0, 1),
            or fewer than :data:`MIN_RECORDS` records with an embedded chunk.
        BackendUnavailable: the store does not return stored vectors.
    """
    if sample < MIN_RECORDS:
        raise CalibrationFailed(
            f"sample {sample} is too small", hint=f"sample at least {MIN_RECORDS} records"
        )
    if not 0 < quantile < 1:
        raise CalibrationFailed(f"quantile {quantile} is not in (0, 1)", hint=f"e.g. {QUANTILE}")
    ids = collection.ids()
    rng = np.random.default_rng(seed)
    chosen = [ids[i] for i in rng.permutation(len(ids))[:sample]]
    groups = _record_vectors(collection, chosen)
    if len(groups) < MIN_RECORDS:
        raise CalibrationFailed(
            f"collection {collection.name} has {len(groups)} records with embedded chunks; "
            f"calibration needs at least {MIN_RECORDS}",
            hint="index more records (or run `semsearch reindex` to embed pending ones)",
        )
    scores = _best_chunk_matrix(groups)
    upper = scores[np.triu_indices(len(groups), 1)]
    np.fill_diagonal(scores, -np.inf)
    nearest = scores.max(axis=1)
    threshold = round(float(np.quantile(upper, quantile)), 2)
    return Calibration(
        model_id=collection.stats().model_id,
        threshold=threshold,
        quantile=quantile,
        records=len(groups),
        random_pairs=Distribution.of(upper),
        nearest=Distribution.of(nearest),
        nearest_above=float((nearest >= threshold).mean()),
    )


def check_model(given: str, stored: str) -> None:
    """Check that ``given`` (a model spec as the user typed it: ``local:<name>``, a Hub id, a
    bare name, a provider spec) names ``stored``, the collection's model id.

    Raises:
        CalibrationFailed: it names another model (the collection's vectors are not its).
    """
    from semsearch.embedders.thresholds import model_names

    wanted = given.removeprefix("local:").partition("?")[0].strip()
    names = model_names(stored)
    if wanted and any(n == wanted or n.endswith("/" + wanted) for n in names):
        return
    raise CalibrationFailed(
        f"the collection was embedded with {stored}, not {given}",
        hint=f"calibrate {names[0] if names else stored} on it, or choose a collection "
        "embedded with your model (--collection)",
    )


def save_calibration(calibration: Calibration, collection: str, index: str) -> Path:
    """Store ``calibration.threshold`` as the default ``min_score`` of its model (keyed by its
    id without ``?options``) in the model cache's calibration file
    (:mod:`semsearch.embedders.saved_thresholds`). Returns that file.

    Raises:
        CalibrationFailed: the packaged table already calibrates the model (it was measured
            against judged relevance and stays authoritative; pass ``min_score`` to override).
        SemsearchError: the cache folder is not writable.
    """
    from semsearch.embedders.saved_thresholds import save_threshold
    from semsearch.embedders.thresholds import model_names

    check_savable(calibration.model_id)
    entry = {
        "threshold": calibration.threshold,
        "quantile": calibration.quantile,
        "records": calibration.records,
        "model_id": calibration.model_id,
        "collection": collection,
        "index": index,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    return save_threshold(model_names(calibration.model_id)[0], entry)


def check_savable(model_id: str) -> None:
    """Check that a saved threshold for ``model_id`` would be used.

    Raises:
        CalibrationFailed: the packaged :data:`~semsearch.embedders.thresholds.CALIBRATED`
            table names the model: measured against judged relevance, it stays authoritative.
    """
    from semsearch.embedders.thresholds import CALIBRATED, model_names

    packaged = next((n for n in model_names(model_id) if n in CALIBRATED), None)
    if packaged is not None:
        raise CalibrationFailed(
            f"{packaged} has a packaged threshold ({CALIBRATED[packaged]:g}), measured against "
            "judged relevance; a saved estimate would not be used",
            hint="run without --save to see the estimate; pass --min-score to use another value",
        )


def _record_vectors(collection: StoredVectors, ids: Sequence[str]) -> list[NDArray[np.float32]]:
    """Per record with an embedded chunk: float32[chunks <= MAX_CHUNKS, dim], unit rows."""
    groups: list[NDArray[np.float32]] = []
    for start in range(0, len(ids), _ID_BATCH):
        batch = ids[start : start + _ID_BATCH]
        found = collection.vectors(batch)
        for rid in batch:
            kept = [v for v in found.get(rid, []) if v is not None][:MAX_CHUNKS]
            if kept:
                groups.append(np.stack(kept).astype(np.float32))
    return groups


def _best_chunk_matrix(groups: Sequence[NDArray[np.float32]]) -> NDArray[np.float32]:
    """float32[n, n]: entry (i, j) the highest cosine between a chunk of record i and one of j."""
    every = np.concatenate(groups)
    starts = np.cumsum([0] + [len(g) for g in groups[:-1]])
    out = np.empty((len(groups), len(groups)), np.float32)
    for i, group in enumerate(groups):
        per_chunk = (group @ every.T).max(axis=0)  # best chunk of record i per other chunk
        out[i] = np.maximum.reduceat(per_chunk, starts)
    return out
