"""Default ``min_score`` per model: the cosine similarity below which a semantic hit is noise.

Cosine scales differ by model: ada-002 scores unrelated text around 0.7, all-MiniLM-L6-v2 scores
half of SciFact's judged answers below 0.62. So a threshold copied from one model finds nothing
(or everything) with another, and each embedder carries its own default,
:func:`default_min_score`, which every face (Python API, CLI, HTTP, MCP, web page, memory) uses
when the caller gives none.

Calibrated (``benchmarks/thresholds.py``): the highest threshold, in steps of 0.05, that keeps at
least 95% of BEIR SciFact's judged relevant (query, document) pairs (a document's score is its
best chunk's cosine). Models that were not measured get a documented conservative value that
rarely drops an answer; see docs/embedders.md.
"""

from __future__ import annotations

__all__ = ["CALIBRATED", "UNMEASURED", "default_min_score", "model_default"]

#: Measured on SciFact: model id (no ``?options``) -> threshold. For all-MiniLM-L6-v2 (int8),
#: the lowest threshold, in steps of 0.01, at which 95% of 60 off-topic questions return
#: nothing in semantic mode on SciFact (0.30: 75%; 0.34: 95%; on this repository's docs/ 100%
#: from 0.30), checked to drop at most 2% of the judged-relevant hits of the top 10 (0.3% of
#: 420 over SciFact's 300 test claims and 120 paragraph-long questions): 0.34
#: (benchmarks/trust.py, docs/retrieval.md "The default floor"). It keeps 94.4% of all 339
#: judged pairs at 0.34 (95.9% at the earlier default 0.30, chosen to keep 95% of them).
CALIBRATED: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.34,
}

#: Not measured here: conservative values (prefix of the model id -> threshold). ada-002's
#: cosines crowd into [0.7, 1] (OpenAI's own guidance), the text-embedding-3 models' spread lower.
KNOWN: dict[str, float] = {
    "openai:text-embedding-ada-002": 0.70,
    "openai:text-embedding-3": 0.20,
    "fake:": 0.30,  # the test embedder: the historical default, so plumbing tests keep their data
}

#: Any other model (API deployments, Gemini, Ollama, your own model folders): low enough to
#: rarely drop an answer; measure your model with benchmarks/thresholds.py and pass min_score.
UNMEASURED = 0.20


def model_default(model_id: str) -> float:
    """The default ``min_score`` for a model id (``?options`` such as precision ignored).

    Returns:
        A cosine similarity in [-1, 1]: the calibrated value, else a known conservative one,
        else :data:`UNMEASURED`.
    """
    base = model_id.split("?", 1)[0]
    if base in CALIBRATED:
        return CALIBRATED[base]
    for prefix, value in KNOWN.items():
        if base.startswith(prefix):
            return value
    return UNMEASURED


def default_min_score(embedder: object) -> float:
    """``embedder.default_min_score`` when it has one, else :func:`model_default` of its id.

    Embedders written against the :class:`~semsearch.embedders.base.Embedder` protocol before
    this attribute existed keep working: they get their model id's default.
    """
    own = getattr(embedder, "default_min_score", None)
    if isinstance(own, int | float) and not isinstance(own, bool) and -1.0 <= own <= 1.0:
        return float(own)
    return model_default(str(getattr(embedder, "model_id", "")))
