"""Path scopes as filters: a search's ``folder=``, ``include=`` and ``exclude=`` on record ids.

:func:`path_filter` turns a scope into the same AST as ``where``, with
:class:`~semsearch.filters.nodes.IdMatch` leaves on the record id, so every store applies it
before ranking exactly as it applies ``where``.
"""

from __future__ import annotations

from collections.abc import Callable

from semsearch.errors import InvalidFilter
from semsearch.filters.nodes import NOTHING, Filter, IdMatch, Not, Or, conjoin
from semsearch.globs import Lit, Many, parse_glob

__all__ = ["path_filter", "split_path_pattern"]


def split_path_pattern(pattern: str) -> tuple[str, str] | None:
    """A path pattern's two ways to match: ``(glob, folder prefix)``, or None when blank.

    A record id matches the pattern when ``fnmatchcase(id, glob)`` or ``id.startswith(prefix)``:
    surrounding whitespace is ignored, and a bare folder, ``folder/``, ``folder/*`` and
    ``folder/**`` all match everything below ``folder/`` (the prefix is literal text).
    """
    pattern = pattern.strip()
    if not pattern:
        return None
    return pattern, pattern.rstrip("/").removesuffix("/**").removesuffix("/*") + "/"


def path_filter(
    folder: str | None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    compiles: Callable[[IdMatch], bool] | None = None,
) -> Filter | None:
    """A path scope as a filter: inside ``folder``, matching an ``include`` pattern when any
    are given, and matching no ``exclude`` pattern (see :func:`split_path_pattern`).

    Args:
        compiles: for a store that cannot compile every :class:`IdMatch`: the test of one. A
            pattern it refuses is left out (for ``include``, the whole allowlist), so the
            filter selects a superset of the scope and the caller must check the rest.
    Returns:
        The filter, or None when the scope (or what the store can compile of it) allows all.
    Raises:
        InvalidFilter: a pattern or folder that is not valid UTF-8 text (a lone surrogate).
    """
    ok = compiles or (lambda _: True)
    parts: list[Filter] = []
    prefix = (folder or "").strip("/") + "/"
    if folder and prefix != "/":
        parts.append(_checked(IdMatch("prefix", prefix)))
    if include:
        alts = [m for p in include for m in _pattern_matches(p)]
        if all(ok(m) for m in alts):
            parts.append(_any(alts))
    for pattern in exclude:
        alts = _pattern_matches(pattern)
        if alts and all(ok(m) for m in alts):
            parts.append(Not(_any(alts)))
    return conjoin(*parts)


def _pattern_matches(pattern: str) -> list[IdMatch]:
    """The leaves one path pattern matches through; a glob that is a prefix becomes one."""
    split = split_path_pattern(pattern)
    if split is None:
        return []
    glob, prefix = split
    tokens = parse_glob(glob)
    if len(tokens) == 2 and isinstance(tokens[0], Lit) and isinstance(tokens[1], Many):
        glob_prefix = tokens[0].text  # "notes/*": a prefix, which an index can answer
        short, long = sorted((glob_prefix, prefix), key=len)
        if long.startswith(short):
            return [_checked(IdMatch("prefix", short))]
        return [_checked(IdMatch("prefix", glob_prefix)), _checked(IdMatch("prefix", prefix))]
    return [_checked(IdMatch("glob", glob)), _checked(IdMatch("prefix", prefix))]


def _any(alts: list[IdMatch]) -> Filter:
    return NOTHING if not alts else alts[0] if len(alts) == 1 else Or(tuple(alts))


def _checked(match: IdMatch) -> IdMatch:
    try:
        match.pattern.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidFilter(
            f"path pattern {match.pattern!r} is not valid text (it holds a lone surrogate)",
            hint="give folder, include and exclude patterns as plain UTF-8 text",
        ) from None
    return match
