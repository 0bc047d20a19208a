"""Optional read capabilities of a store, beside the Store protocol (stores/base.py).

A caller checks for each with :func:`~semsearch.stores.base.supports` and does without it
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from semsearch.results import Chunk

__all__ = ["HitReads"]


@runtime_checkable
class HitReads(Protocol):
    """Optional store capability: the chunks a search ranked and their records' fields in one
    read, for a store where every read is a round trip to a server (``record_fields`` and
    ``get_chunks`` otherwise: two reads, each with its own lookup of the collection)."""

    def hit_rows(
        self, collection: str, chunk_ids: Sequence[int]
    ) -> dict[int, tuple[str, Chunk, dict[str, Any]]]:
        """``{chunk id: (record id, chunk, the record's fields)}`` for the chunks of
        ``chunk_ids`` that exist, read in one snapshot (ids that are gone are left out)."""
        ...
