"""Default ``min_score`` per model: the cosine similarity below which a semantic hit is noise.

Cosine scales differ by model: ada-002 scores unrelated text around 0.7, all-MiniLM-L6-v2 scores
half of SciFact's judged answers below 0.62. So a threshold copied from one model finds nothing
(or everything) with another, and each embedder carries its own default,
:func:`default_min_score`, which every face (Python API, CLI, HTTP, MCP, web page, memory) uses
when the caller gives none.

Thresholds follow the model, not the provider that serves it: ``openai:text-embedding-ada-002``,
an Azure deployment that states its model (``azure-openai:<deployment>?model=text-embedding-
ada-002``) and one named after it (``azure-openai:text-embedding-ada-002``) all get ada-002's.
A model that no table names gets :data:`UNMEASURED`, a guess: :func:`guess_note` says so on
each result (``SearchResult.notes``) and logs one warning per model, until the user measures it
on their own collection with ``semsearch models calibrate <model> --index ... --save``
(:mod:`semsearch.embedders.calibration`), which stores a threshold in the model cache
(:mod:`semsearch.embedders.saved_thresholds`). Lookup order: the packaged :data:`CALIBRATED`
table (measured against judged relevance, so it stays authoritative), then a saved
calibration, then :data:`KNOWN`, then :data:`UNMEASURED`.

Calibrated (``benchmarks/thresholds.py``): the highest threshold, in steps of 0.05, that keeps at
least 95% of BEIR SciFact's judged relevant (query, document) pairs (a document's score is its
best chunk's cosine). Models that were not measured get a documented conservative value that
rarely drops an answer; see docs/embedders.md.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from urllib.parse import parse_qsl

__all__ = [
    "CALIBRATED",
    "KNOWN",
    "UNMEASURED",
    "Threshold",
    "default_min_score",
    "guess_note",
    "model_default",
    "model_names",
    "model_threshold",
    "threshold_is_guess",
]

log = logging.getLogger(__name__)

#: Measured on SciFact: model id (no ``?options``) -> threshold. For all-MiniLM-L6-v2 (int8),
#: the lowest threshold, in steps of 0.01, at which 95% of 60 off-topic questions return
#: nothing in semantic mode on SciFact (0.30: 75%; 0.34: 95%; on this repository's docs/ 98%
#: from 0.30), checked to drop at most 2% of the judged-relevant hits of the top 10 (0.3% of
#: 393 over SciFact's 300 test claims and 120 paragraph-long questions): 0.34
#: (benchmarks/trust.py, docs/retrieval.md "Hybrid search"). It keeps 94.1% of all 339 judged
#: pairs (96.5% at the earlier default 0.30, chosen to keep 95% of them; benchmarks/thresholds.py).
CALIBRATED: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.34,
}

#: Not measured here: documented conservative values, by the prefix of a model's name (see
#: :func:`model_names`). ada-002's cosines crowd into [0.7, 1] (OpenAI's own guidance), the
#: text-embedding-3 models' spread lower.
KNOWN: dict[str, float] = {
    "text-embedding-ada-002": 0.70,
    "text-embedding-3-": 0.20,
    "fake:": 0.30,  # the test embedder: the historical default, so plumbing tests keep their data
}

#: Any other model (unnamed API deployments, Gemini, Ollama, your own model folders): low enough
#: to rarely drop an answer, but a guess; measure your model with benchmarks/thresholds.py and
#: pass min_score (or state the model: ``azure-openai:<deployment>?model=<model>``).
UNMEASURED = 0.20

_warned: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class Threshold:
    """A model's default ``min_score`` and what it rests on.

    Attributes:
        value: a cosine similarity in [-1, 1].
        basis: ``"calibrated"`` (measured, :data:`CALIBRATED`), ``"saved"`` (estimated on the
            user's collection by ``semsearch models calibrate --save``), ``"documented"`` (a
            known model's conservative value, :data:`KNOWN`) or ``"guess"`` (:data:`UNMEASURED`:
            nothing names the model).
    """

    value: float
    basis: str

    @property
    def guess(self) -> bool:
        """True when no table names the model."""
        return self.basis == "guess"


def model_names(model_id: str) -> tuple[str, ...]:
    """The names a model id is looked up by: the id without ``?options``, then the model it
    names: the ``model=`` option when the spec states one (an Azure deployment), else the
    part after the provider prefix (``openai:text-embedding-3-small`` -> that model)."""
    base, _, query = model_id.partition("?")
    stated = dict(parse_qsl(query)).get("model", "").strip()
    _, sep, name = base.partition(":")
    return tuple(dict.fromkeys(n for n in (base, stated or (name if sep else "")) if n))


def model_threshold(model_id: str) -> Threshold:
    """The default ``min_score`` of a model id and its basis: calibrated, saved (the user's
    ``semsearch models calibrate --save``), documented, or a guess (:data:`UNMEASURED`) when
    nothing names any of :func:`model_names`."""
    from semsearch.embedders.saved_thresholds import saved_threshold

    names = model_names(model_id)
    for name in names:
        if name in CALIBRATED:
            return Threshold(CALIBRATED[name], "calibrated")
    for name in names:
        saved = saved_threshold(name)
        if saved is not None:
            return Threshold(saved, "saved")
    for prefix, value in KNOWN.items():
        if any(name.startswith(prefix) for name in names):
            return Threshold(value, "documented")
    return Threshold(UNMEASURED, "guess")


def model_default(model_id: str) -> float:
    """The default ``min_score`` for a model id (``?options`` such as precision ignored, except
    ``model=``, which names the model).

    Returns:
        A cosine similarity in [-1, 1]: the calibrated value, else a known conservative one,
        else :data:`UNMEASURED`.
    """
    return model_threshold(model_id).value


def default_min_score(embedder: object) -> float:
    """``embedder.default_min_score`` when it has one, else :func:`model_default` of its id.

    Embedders written against the :class:`~semsearch.embedders.base.Embedder` protocol before
    this attribute existed keep working: they get their model id's default.
    """
    own = _own_default(embedder)
    if own is not None:
        return own
    return model_default(str(getattr(embedder, "model_id", "")))


def threshold_is_guess(embedder: object) -> bool:
    """True when ``embedder``'s default ``min_score`` is the :data:`UNMEASURED` guess.

    An embedder that answers ``min_score_is_guess`` (every
    :class:`~semsearch.embedders.base.BaseEmbedder`) is asked; one that sets its own
    ``default_min_score`` otherwise never guesses; any other is judged by its model id.
    """
    flag = getattr(embedder, "min_score_is_guess", None)
    if isinstance(flag, bool):
        return flag
    if _own_default(embedder) is not None:
        return False
    return model_threshold(str(getattr(embedder, "model_id", ""))).guess


def guess_note(embedder: object) -> str | None:
    """For ``SearchResult.notes``: one sentence when ``embedder``'s default threshold is a
    guess (logged as a warning once per model id and process), else None."""
    if not threshold_is_guess(embedder):
        return None
    model_id = str(getattr(embedder, "model_id", ""))
    with _warned_lock:
        first = model_id not in _warned
        _warned.add(model_id)
    note = (
        f"min_score {default_min_score(embedder):g} is a guess: no threshold is known for the "
        f"model {model_id}; measure it with `semsearch models calibrate <model> --index <file> "
        "--save`, state the model (e.g. azure-openai:<deployment>?model=text-embedding-ada-002) "
        "or pass min_score (docs/embedders.md, default thresholds)"
    )
    if first:
        log.warning("%s", note)
    return note


def _own_default(embedder: object) -> float | None:
    own = getattr(embedder, "default_min_score", None)
    if isinstance(own, int | float) and not isinstance(own, bool) and -1.0 <= own <= 1.0:
        return float(own)
    return None
