"""`semsearch compact`: reclaim the space that deletes and re-embeds left in an index file."""

from __future__ import annotations

from semsearch import settings
from semsearch.cli.common import IndexOpt, cli_errors, out, require_index


@cli_errors
def compact(index: IndexOpt = settings.DEFAULT_INDEX) -> None:
    """Prune the change log and VACUUM the index file (safe while others search); on
    PostgreSQL, move collections of earlier versions to the keyword statistics and VACUUM."""
    import semsearch

    require_index(index)
    from semsearch.stores.keyword_capabilities import refresh_keyword_index

    with semsearch.connect(index) as db:
        before, after = db.compact()
        for name in db.collections():  # FTS5's optimize left the keyword sidecars stale
            refresh_keyword_index(db.store, name)
    out.print(f"compacted: {before / 1e6:.2f} MB -> {after / 1e6:.2f} MB")
