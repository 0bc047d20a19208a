"""A search's arguments, checked once for every face: modes, limits, thresholds, globs.

The Python API, the CLI, HTTP and MCP all pass their arguments through
:func:`validate_request` before anything runs, so each face reports the same
:class:`~semsearch.errors.InvalidQuery` for the same mistake.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Literal

from semsearch import fusion
from semsearch.errors import InvalidQuery
from semsearch.filters import Filter
from semsearch.scope import PathScope

__all__ = [
    "DEFAULT_MIN_SCORE",
    "MAX_LIMIT",
    "MODES",
    "SearchRequest",
    "check_limit",
    "check_min_score",
    "resolve_min_score",
    "validate_request",
]


MODES = ("semantic", "keyword", "hybrid")


#: ``min_score="default"``: the embedder's calibrated threshold (semantic mode only); see
#: :func:`resolve_min_score`.
DEFAULT_MIN_SCORE = "default"


MAX_LIMIT = 1000


@dataclass(frozen=True)
class SearchRequest:
    """A validated search. See :meth:`semsearch.Collection.search` for the meaning of each field."""

    query: str
    mode: Literal["semantic", "keyword", "hybrid"]
    limit: int
    min_score: float | None
    scope: PathScope
    where: Filter | None
    hypothetical_answer: str | None
    fallback: Literal["keyword"] | None = None
    exact: bool = False
    fusion: fusion.Fusion | None = None  # hybrid only; None means HYBRID_FUSION
    floor: bool = False  # min_score was "default": each mode's default floor applies


def resolve_min_score(
    min_score: float | str | None, mode: str, embedder: object
) -> tuple[float | None, str | None]:
    """The one threshold rule of every face: (threshold to apply, note for the result).

    ``"default"`` is each mode's default floor: semantic mode drops cosines below the
    embedder's calibrated value (:func:`semsearch.embedders.thresholds.default_min_score`),
    hybrid mode drops fused scores below :data:`semsearch.fusion.CONFIDENT` (0.5: neither leg
    is confident), keyword mode drops records that hold no meaningful query word (returned
    threshold None; the request's ``floor`` carries it). A number is a cosine threshold in
    semantic mode and a fused-score threshold in hybrid mode; BM25 has no fixed scale, so in
    keyword mode a number is not applied (the note says so) and turns the floor off. None keeps
    every hit, ranked. When the embedder's threshold is a guess (no table names the model),
    the note says so for semantic and hybrid mode and a warning is logged once per model.
    """
    from semsearch.embedders.thresholds import default_min_score, guess_note

    if min_score == DEFAULT_MIN_SCORE:
        if mode == "semantic":
            return default_min_score(embedder), guess_note(embedder)
        if mode == "hybrid":  # the model's threshold decides which hits are confident
            return fusion.CONFIDENT, guess_note(embedder)
        return None, None
    if min_score is None or mode != "keyword":
        return (None if min_score is None else float(min_score)), None
    if float(min_score) <= 0:  # BM25 > 0: it keeps every hit, as asked
        return None, None
    return None, (
        f"min_score={float(min_score):g} ignored: keyword scores are BM25, which has no fixed "
        "scale (the default floor is off; min_score applies to semantic and hybrid mode)"
    )


def check_limit(limit: object) -> None:
    """Raise InvalidQuery unless ``limit`` is an int in [1, :data:`MAX_LIMIT`] (every search's
    rule, memory's included)."""
    from semsearch.validation import type_name

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidQuery(
            f"limit must be an int in [1, {MAX_LIMIT}], got {limit!r} ({type_name(limit)})",
            hint="e.g. limit=10",
        )


def check_min_score(min_score: object) -> None:
    """Raise InvalidQuery unless ``min_score`` is a number in [-1, 1], None or ``"default"``
    (every search's rule, memory's included)."""
    from semsearch.validation import type_name

    if (
        min_score is not None
        and min_score != DEFAULT_MIN_SCORE
        and (
            isinstance(min_score, bool)
            or not isinstance(min_score, numbers.Real)
            or not -1.0 <= float(min_score) <= 1.0
        )
    ):
        raise InvalidQuery(
            "min_score must be a number in [-1, 1] (a cosine similarity, or a hybrid score in "
            f'[0, 1]), None or "default", got {min_score!r} ({type_name(min_score)})',
            hint='e.g. min_score=0.4; "default" uses each mode\'s default floor, None keeps all',
        )


def validate_request(
    query: object,
    mode: object,
    limit: object,
    min_score: object,
    *,
    hypothetical_answer: object = None,
    folder: object = None,
    exclude: object = (),
    include: object = (),
    fallback: object = None,
    exact: object = False,
) -> None:
    """Check a search's arguments before anything runs (see :meth:`Collection.search`).

    Raises:
        InvalidQuery: naming the argument, the type received and the type expected: ``query``
            or ``hypothetical_answer`` not a str or not valid Unicode (a lone surrogate), a NUL
            in ``query``, an
            unknown mode, a limit that is not an int in [1, 1000], a min_score that is not a
            number in [-1, 1], a folder that is not a str, exclude/include not a list of str,
            a fallback other than "keyword", or a non-bool ``exact``.
    """
    from semsearch.validation import check_text, type_name

    check_text("query", query, no_nul=True)
    check_text("hypothetical_answer", hypothetical_answer, optional=True)
    if mode not in MODES:
        raise InvalidQuery(f"unknown search mode {mode!r}", hint=f"use one of: {', '.join(MODES)}")
    check_limit(limit)
    check_min_score(min_score)
    check_text("folder", folder, optional=True, no_nul=True)
    for name, globs in (("exclude", exclude), ("include", include)):
        if isinstance(globs, str) or not isinstance(globs, list | tuple):
            raise InvalidQuery(
                f"{name} must be a list of str globs, got {type_name(globs)}",
                hint=f'wrap one glob in a list: {name}=["private/*"]',
            )
        for glob in globs:
            check_text(f"each {name} glob", glob, no_nul=True)
    if fallback not in (None, "keyword"):
        raise InvalidQuery(f"unknown fallback {fallback!r}", hint='use fallback="keyword" or None')
    if not isinstance(exact, bool):
        raise InvalidQuery(f"exact must be a bool, got {type_name(exact)}", hint="exact=True")
