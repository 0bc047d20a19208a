"""Switch a collection to another embedding model, keeping the old vectors until the new set is done.

With ``window_vectors`` (``semsearch reembed --window-vectors late``), the same steps rebuild a
collection's sentence windows the other way (:mod:`semsearch.windows`), with the same model.

How (``semsearch reembed --model SPEC``, or :func:`reembed`):

1. Records are copied, page by page, into a *shadow* collection ``<name>.reembed`` that uses the
   new model, and embedded there. Chunking follows the new model's token window. The old
   collection is not touched and keeps answering every search meanwhile.
2. If the new embedder fails (an API outage, a rate limit), the call raises
   :class:`EmbedderUnavailable`; the shadow keeps what it has. Running ``reembed`` again with the
   same model resumes: unchanged records are skipped by content hash and only the rest embedded.
3. When every shadow chunk has a vector, the store swaps the shadow in under the old name in ONE
   transaction (:class:`semsearch.stores.base.CollectionSwap`) and the old vectors are dropped.
   The swap is a compare-and-swap on the collection's change counter: if anything wrote to the
   old collection since the pass began, nothing is swapped and another pass copies the changes
   (records added, changed or deleted). After :data:`MAX_PASSES` busy passes it stops, with the
   work done kept for the next run, so no write to the old collection is ever lost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from semsearch.collection import Collection
from semsearch.database import Database
from semsearch.embedders.base import Embedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.errors import (
    BackendUnavailable,
    EmbedderUnavailable,
    IndexNotFound,
    SemsearchError,
)
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo, CollectionSwap
from semsearch.windows import VECTORS_OPTION, window_kind

__all__ = ["SHADOW_SUFFIX", "ReembedReport", "reembed", "shadow_name"]

SHADOW_SUFFIX = ".reembed"
#: Option stored on a shadow collection: the name of the collection it re-embeds.
SHADOW_MARK = "reembed_shadow_of"
PAGE = 256
Progress = Callable[[int], None]
#: Copy-and-swap attempts: a pass is repeated when the collection was written during it.
MAX_PASSES = 3


@dataclass
class ReembedReport:
    """What a re-embed did.

    Attributes:
        collection: the collection's name.
        old_model, new_model: model ids before and after.
        records: records in the collection after the swap.
        chunks_embedded: chunks embedded with the new model in this run.
        swapped: True when the new vectors replaced the old ones (False: already on that model).
    """

    collection: str
    old_model: str
    new_model: str
    records: int = 0
    chunks_embedded: int = 0
    swapped: bool = False


def shadow_name(name: str) -> str:
    """The shadow collection's name: ``<name>.reembed`` (name cut so the result fits 64 chars)."""
    return name[: 64 - len(SHADOW_SUFFIX)] + SHADOW_SUFFIX


def reembed(
    db: Database,
    name: str,
    embedder: str | Embedder | None = None,
    *,
    window_vectors: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReembedReport:
    """Re-embed every record of collection ``name`` with ``embedder`` and switch to it.

    Args:
        db: the database holding the collection.
        name: the collection.
        embedder: the new model: a spec string (``openai:text-embedding-3-small``) or an
            Embedder; None keeps the collection's model.
        window_vectors: ``"late"`` or ``"separate"``: how the sentence windows are embedded
            from now on (:mod:`semsearch.windows`); with the same model, a collection that keeps
            the other kind is rebuilt for it. None keeps the collection's kind.
        progress: called with counts of chunks embedded, per embedder batch (they add up).
    Returns:
        ReembedReport; ``swapped`` is False when the collection already uses that model and
        that kind of window vectors.
    Raises:
        IndexNotFound: no such collection.
        BackendUnavailable: the store cannot swap collections atomically.
        EmbedderUnavailable: the new model failed; the old collection is unchanged and a rerun
            resumes.
        DimensionMismatch: the new model returned vectors of inconsistent dimension.
    """
    store = db.store
    info = store.get_collection(name)
    if info is None:
        raise IndexNotFound(f"no collection {name!r}", hint="see `semsearch stats`")
    new = resolve_embedder(info.model_id if embedder is None else embedder)
    report = ReembedReport(name, info.model_id, new.model_id)
    kind = window_vectors or window_kind(info.options)
    if new.model_id == info.model_id and kind == window_kind(info.options):
        report.records = store.count(name)
        return report
    if not isinstance(store, CollectionSwap):
        raise BackendUnavailable(
            f"this backend ({type(store).__name__}) cannot swap collections atomically",
            hint="re-embed into a new collection with `semsearch index` instead",
        )
    shadow = _open_shadow(db, info, new, kind)
    for _ in range(MAX_PASSES):
        version = store.collection_version(name)
        _sync(db, name, shadow, report, progress)
        _finish(shadow, report, progress)
        if _swap(db, store, name, shadow, version):
            report.records = store.count(name)
            report.swapped = True
            return report
    raise SemsearchError(
        f"collection {name!r} kept changing during the re-embed; nothing was swapped",
        hint="run `semsearch reembed` again when writes pause (finished work is kept)",
    )


def _finish(shadow: Collection, report: ReembedReport, progress: Progress | None) -> None:
    """Embed what is still pending in the shadow; raise if anything is left."""
    report.chunks_embedded += shadow.reindex(progress=progress).chunks_embedded
    stats = shadow.stats()
    if stats.pending or stats.failed:
        raise EmbedderUnavailable(
            f"{stats.pending + stats.failed} chunks are still not embedded with {shadow.model_id}",
            hint="run `semsearch reembed` again; the old vectors are still in use",
        )


def _swap(
    db: Database, swap: CollectionSwap, name: str, shadow: Collection, version: int | None
) -> bool:
    """Give the shadow the collection's schema and swap it in, unless the collection was
    written since ``version`` (then restore the shadow's copy schema and return False)."""
    current = db.store.get_collection(name)
    done = db.store.get_collection(shadow.name)
    if current is None or done is None:
        raise IndexNotFound(f"collection {name!r} vanished during the re-embed")
    options = {**current.options}  # the shadow's windows are of its own kind
    if VECTORS_OPTION in done.options:
        options[VECTORS_OPTION] = done.options[VECTORS_OPTION]
    db.store.update_collection(
        CollectionInfo(shadow.name, current.schema_json, done.model_id, done.dim, options)
    )
    if swap.replace_collection(name, shadow.name, expected_version=version):
        return True
    db.store.update_collection(done)
    return False


def _open_shadow(db: Database, info: CollectionInfo, new: Embedder, kind: str) -> Collection:
    """Create the shadow collection, or resume one left by an earlier run with the same model.

    The shadow's text template is ``text``: records are copied with their derived text, which
    gives the same content hash and chunks as the original template would.
    """
    stored = Schema.from_json(info.schema_json)
    copy = Schema(stored.fields, ("text",), stored.chunker)
    name = shadow_name(info.name)
    existing = db.store.get_collection(name)
    if existing is not None and existing.options.get(SHADOW_MARK) != info.name:
        raise SemsearchError(
            f"collection {name!r} exists and is not a reembed shadow of {info.name!r}",
            hint="reembed never replaces a collection it did not create: rename or drop that one",
        )
    if existing is not None and (
        existing.model_id != new.model_id
        or existing.schema_json != copy.to_json()
        or window_kind(existing.options) != kind
    ):
        db.store.drop_collection(name)
        existing = None
    shadow = db.collection(name, schema=copy, embedder=new, window_vectors=kind)
    if existing is None:  # mark it, so a later run knows it may resume or replace it
        made = db.store.get_collection(name) or shadow.info
        options = {**made.options, SHADOW_MARK: info.name}
        db.store.update_collection(dataclasses.replace(made, options=options))
    return shadow


def _sync(
    db: Database,
    name: str,
    shadow: Collection,
    report: ReembedReport,
    progress: Callable[[int], None] | None,
) -> int:
    """One copy pass old -> shadow. Returns how many records were added, changed or removed."""
    store = db.store
    ids = store.list_ids(name)
    changed = 0
    for start in range(0, len(ids), PAGE):
        page = store.get_records(name, ids[start : start + PAGE])
        rows = [{**r.fields, "id": r.id, "text": r.text} for r in page]
        result = shadow.upsert(rows, progress=progress)
        report.chunks_embedded += result.chunks_embedded
        changed += result.added + result.updated
        if result.errors:
            raise EmbedderUnavailable(
                f"re-embedding with {shadow.model_id} stopped: {result.errors[-1]}",
                hint="the old vectors are still in use; run `semsearch reembed` again to resume",
            )
    gone = sorted(set(shadow.ids()) - set(ids))
    if gone:
        changed += shadow.delete(gone)
    return changed
