"""What MCP tools return: library results as JSON-ready dicts, and errors as safe text.

Every text that leaves the server goes through :func:`scrub_paths` (absolute paths reduced to
their last component); a hit's text is cut to a snippet at a word boundary. No MCP types here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from semsearch.collection import Collection
from semsearch.errors import InvalidQuery, SemsearchError
from semsearch.results import Hit, SearchResult
from semsearch.search import PathScope

__all__ = [
    "SNIPPET_CHARS",
    "chunk_view",
    "hit_view",
    "result_view",
    "safe_message",
    "scoped_health",
    "scrub_paths",
    "snippet",
    "title_of",
]

#: A hit's text is cut to about this many characters (at a word boundary).
SNIPPET_CHARS = 500

_ABS_PATH = re.compile(r"(?<![\w./~\\-])(?:[A-Za-z]:\\|/)(?:[^\s'\"`/\\]+[/\\])*([^\s'\"`/\\]+)")


def scrub_paths(text: str) -> str:
    """Replace every absolute path (POSIX or Windows) in ``text`` by its last component.

    URLs (``scheme://host/path``) and relative paths such as ``user/notes.md`` are kept.
    """
    return _ABS_PATH.sub(lambda m: m.group(1), text)


def safe_message(exc: SemsearchError) -> str:
    """The error's message and hint for a client, with absolute paths reduced to file names."""
    text = exc.message if not exc.hint else f"{exc.message}\nhint: {exc.hint}"
    return scrub_paths(text)


def chunk_view(
    coll: Collection, text: str, fields: Mapping[str, Any], ordinal: int
) -> dict[str, Any]:
    """Chunk ``ordinal`` of a record's text as JSON (text, heading path, line and page range).

    Raises:
        InvalidQuery: the record has no such chunk (the valid range is in the hint).
    """
    chunks = coll.chunk(text, fields)
    if not 0 <= ordinal < len(chunks):
        raise InvalidQuery(
            f"chunk {ordinal} does not exist; this record has {len(chunks)} chunk(s)",
            hint=f"use a chunk number in [0, {max(len(chunks) - 1, 0)}], as given by a search hit",
        )
    c = chunks[ordinal]
    return {
        "ordinal": c.ordinal,
        "heading_path": list(c.heading_path),
        "line_start": c.line_start,
        "line_end": c.line_end,
        "page_start": c.page_start,
        "page_end": c.page_end,
        "text": c.text,
    }


def title_of(record_id: str, fields: Mapping[str, Any]) -> str:
    """A record's display title: its ``title`` or ``name`` field, else the id's last part."""
    for key in ("title", "name"):
        value = fields.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return record_id.rsplit("/", 1)[-1]


def snippet(text: str, limit: int = SNIPPET_CHARS) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters at a word boundary; (snippet, was_cut)."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…", True


def hit_view(hit: Hit) -> dict[str, Any]:
    """One hit as JSON: id, title, score, snippet, heading path, line range, fields, leg scores."""
    chunk = hit.chunk
    text, cut = snippet(chunk.text) if chunk is not None else ("", False)
    components = None
    if hit.components is not None:
        components = {leg: {"score": s.score, "rank": s.rank} for leg, s in hit.components.items()}
    return {
        "id": hit.id,
        "title": title_of(hit.id, hit.fields),
        "score": hit.score,
        "text": text,
        "truncated": cut,
        "chunk": chunk.ordinal if chunk is not None else None,
        "heading_path": list(chunk.heading_path) if chunk is not None else [],
        "line_start": chunk.line_start if chunk is not None else None,
        "line_end": chunk.line_end if chunk is not None else None,
        "page_start": chunk.page_start if chunk is not None else None,
        "page_end": chunk.page_end if chunk is not None else None,
        "fields": hit.fields,
        "components": components,
        "highlight": _highlight_text(hit),
    }


def _highlight_text(hit: Hit) -> str | None:
    """The sentence of the hit's chunk that matched (``Hit.highlight``), or None."""
    if hit.chunk is None or hit.highlight is None:
        return None
    start, end = hit.highlight
    return " ".join(hit.chunk.text[start:end].split())


def result_view(collection: str, result: SearchResult) -> dict[str, Any]:
    """A search result as JSON (candidate counts are left out: they would count hidden paths)."""
    return {
        "query": result.query,
        "collection": collection,
        "mode": result.mode,
        "hyde": result.hyde,
        "degraded": result.degraded,
        "degraded_reason": scrub_paths(result.degraded_reason) if result.degraded_reason else None,
        "min_score": result.min_score,
        "notes": list(result.notes),
        "query_windows": result.query_windows,
        "reranked_by": result.reranked_by,
        "count": len(result.hits),
        "hits": [hit_view(h) for h in result.hits],
    }


def scoped_health(health: dict[str, Any], scope: PathScope) -> dict[str, Any]:
    """The index health with failed paths outside the privacy scope hidden, reason scrubbed."""
    failed = [p for p in health["failed"] if scope.allows(p)]
    reason = scrub_paths(health["reason"]) if health["reason"] else None
    return {**health, "failed": failed, "reason": reason}
