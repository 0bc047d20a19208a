"""HNSW parameters and the exact-versus-graph policy of the SQLite store's ANN cache.

The parameters live in a collection's options under the ``"ann"`` key, set with
:func:`configure_ann` (also importable from ``semsearch.ann.cache``); every key is optional. The
defaults were chosen by measurement on this project's 2-core reference machine
(``benchmarks/ann.py``, docs/ann.md): recall@10 >= 0.95 against an exact scan on clustered
384-d vectors and on real MiniLM embeddings.

HNSW is the graph of Malkov & Yashunin, "Efficient and robust approximate nearest neighbor
search using Hierarchical Navigable Small World graphs" (IEEE TPAMI 2018); ``M``,
``ef_construction`` and ``ef_search`` are that paper's parameters, as implemented by faiss.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, Protocol

from semsearch.errors import InvalidQuery
from semsearch.stores.base import CollectionInfo, Store

__all__ = [
    "STORAGES",
    "AnnOptions",
    "Configurable",
    "Plan",
    "configure_ann",
    "graph_ef",
    "plan_search",
]

Storage = Literal["float32", "float16", "int8"]
STORAGES: tuple[Storage, ...] = ("float32", "float16", "int8")
_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "Storage": (str,),
}


@dataclass(frozen=True)
class AnnOptions:
    """Knobs of the HNSW cache for one collection.

    Attributes:
        threshold: embedded chunks at or above which a graph is built and used; below it every
            search is an exact numpy scan (which is fast enough there). >= 1.
        M: graph out-degree per node (faiss ``IndexHNSW`` ``M``); memory per vector grows by
            about ``2 * M * 4`` bytes. In [4, 128].
        ef_construction: candidate-list size while building; higher is slower to build and
            gives a better graph. In [8, 2048].
        ef_search: candidate-list size per query (raised to ``k`` when ``k`` is larger, and
            widened for filtered searches). In [8, 4096].
        storage: how the graph keeps vectors. ``"float16"`` (the default: faiss scalar
            quantizer ``QT_fp16``, whose codes are the SQLite file's float16 vectors bit for
            bit, so graph distances and exact scans are at the stored precision and no other
            copy in memory; see ``codes_in_graph``), ``"float32"`` (``IndexHNSWFlat``: the same values at twice the
            bytes), or ``"int8"`` (``QT_8bit``: half the fp16 graph's codes, ranks
            approximately; its top ``max(4k, 40)`` candidates are rescored from the SQLite
            file's float16 vectors, and exact scans read them from the file too, so no other
            copy exists at all).
        exact_filter_rows: a filtered search whose filter lets at most this many chunks through
            is answered by an exact scan of exactly those chunks.
        merge_fraction: fresh rows kept outside the graph (scanned exactly) before they are
            merged into it, as a fraction of the graph's rows (at least 1,024 rows).
        compact_fraction: deleted rows (tombstones) tolerated in the graph, as a fraction of
            its rows, before it is rebuilt from the live rows.
        persist: write the sidecar files next to the ``.embed.db`` (False keeps the cache
            in memory only).
        codes_in_graph: also write an fp16 graph's codes into its graph file, memory-mapped on
            open. False (the default): the graph file holds only the links and ids, and the
            codes are read on open from the SQLite file's vector blocks (format 6), so the
            vectors are on disk once (0.85x raw faiss HNSW's disk at 1M x 384; docs/ann.md).
            True keeps a second copy (``2 * dim`` bytes a chunk) in exchange for an open that
            reads nothing (shared, file-backed pages: several processes searching one index
            share one copy). A file of format 5 or older keeps the codes in its graph file
            until its first write migrates it. Takes effect when the graph is next built,
            merged or compacted.
        build_while_writing: grow the collection's first graph in a background thread while
            it is written, from the threshold on (ann/grower.py): one faiss thread while
            writes keep coming, all of them once they pause, so the first search after a
            large fill waits for little or nothing and ``close()`` saves the graph. False:
            the first search builds it, as before.
    """

    threshold: int = 20_000
    M: int = 32
    ef_construction: int = 80
    ef_search: int = 128
    storage: Storage = "float16"
    exact_filter_rows: int = 20_000
    merge_fraction: float = 0.02
    compact_fraction: float = 0.2
    persist: bool = True
    codes_in_graph: bool = False
    build_while_writing: bool = True

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> AnnOptions:
        """Parse the ``"ann"`` entry of a collection's options (a JSON object, or absent).

        Raises:
            InvalidQuery: an unknown key, or a value out of range (the hint lists valid keys).
        """
        ann = (options or {}).get("ann") or {}
        if not isinstance(ann, Mapping):
            raise InvalidQuery(
                f"the ANN options must be an object, got {type(ann).__name__} ({ann!r:.40})",
                hint="set them with configure_ann(collection, ...)",
            )
        raw = dict(ann)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise InvalidQuery(
                f"unknown ANN option(s): {', '.join(unknown)}",
                hint=f"valid options: {', '.join(sorted(known))}",
            )
        return replace(cls(), **raw).validated()

    def validated(self) -> AnnOptions:
        """Return self if every value is in range.

        Raises:
            InvalidQuery: a value of the wrong type (naming the option, the type received and
                the type expected), or out of range (naming the option and its valid range).
        """
        self._check_types()
        checks = [
            ("threshold", self.threshold >= 1, ">= 1"),
            ("M", 4 <= self.M <= 128, "in [4, 128]"),
            ("ef_construction", 8 <= self.ef_construction <= 2048, "in [8, 2048]"),
            ("ef_search", 8 <= self.ef_search <= 4096, "in [8, 4096]"),
            ("storage", self.storage in STORAGES, f"one of {', '.join(STORAGES)}"),
            ("exact_filter_rows", self.exact_filter_rows >= 0, ">= 0"),
            ("merge_fraction", 0 < self.merge_fraction <= 1, "in (0, 1]"),
            ("compact_fraction", 0 < self.compact_fraction <= 1, "in (0, 1]"),
        ]
        for name, ok, valid in checks:
            if not ok:
                raise InvalidQuery(
                    f"ANN option {name}={getattr(self, name)!r} is out of range",
                    hint=f"{name} must be {valid}",
                )
        return self

    def _check_types(self) -> None:
        """Raise InvalidQuery for a value whose type differs from the field's (bool is no int)."""
        for f in fields(self):
            value = getattr(self, f.name)
            kinds = _OPTION_TYPES[str(f.type)]
            bad_bool = isinstance(value, bool) and f.type != "bool"
            if bad_bool or not isinstance(value, kinds):
                raise InvalidQuery(
                    f"ANN option {f.name} must be {'str' if f.type == 'Storage' else f.type}, "
                    f"got {type(value).__name__} ({value!r:.40})",
                    hint=f"e.g. {f.name}={f.default!r}",
                )

    def graph_key(self) -> dict[str, Any]:
        """The options a built graph depends on (a change means a rebuild)."""
        return {"M": self.M, "ef_construction": self.ef_construction, "storage": self.storage}

    def as_dict(self) -> dict[str, Any]:
        """All options as a JSON object."""
        return asdict(self)


Plan = Literal["exact", "graph"]


def plan_search(
    allowed: int, graph_rows: int, exact: bool, has_graph: bool, opts: AnnOptions
) -> Plan:
    """Pick how to answer one query.

    Args:
        allowed: live chunks that pass the filter (all live chunks when unfiltered).
        graph_rows: rows in the graph (live and tombstoned).
        exact: the caller forces an exact scan.
        has_graph: a graph exists.
        opts: the collection's options.
    Returns:
        ``"exact"`` (numpy scan of the allowed rows) or ``"graph"`` (HNSW search filtered
        inside the graph, widened or falling back to exact if it runs dry).
    """
    if exact or not has_graph or graph_rows == 0:
        return "exact"
    if allowed <= opts.exact_filter_rows:
        return "exact"
    return "graph"


def graph_ef(k: int, selectivity: float, opts: AnnOptions) -> int:
    """``ef_search`` for one graph query: at least ``k``, widened as ``1 / selectivity``.

    A filter inside the graph discards the candidates that do not pass it, so to find ``k``
    passing neighbours the candidate list grows with ``1 / selectivity`` (capped at 4,096).

    Args:
        k: results wanted, >= 1.
        selectivity: fraction of graph rows that pass, in (0, 1].
        opts: the collection's options.
    """
    widened = opts.ef_search * max(selectivity, 1e-6) ** -0.6 if selectivity < 1 else opts.ef_search
    return int(min(max(k, math.ceil(widened)), max(4096, k)))


class Configurable(Protocol):
    """What :func:`configure_ann` needs of a collection (a ``Collection`` is one): its name, its
    store, and its stored info, which it replaces with the updated one."""

    info: CollectionInfo

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> Store: ...


def configure_ann(collection: Configurable, **options: Any) -> AnnOptions:
    """Set a collection's HNSW options (stored with the collection, seen by every process).

    Args:
        collection: an open collection (SQLite store; other backends ignore these options).
        **options: any of :class:`~semsearch.ann.policy.AnnOptions`' fields, e.g.
            ``M=32, ef_construction=80, ef_search=128, storage="float16", threshold=20000``.
            ``None`` resets an option to its default. A change of ``M``,
            ``ef_construction`` or ``storage`` rebuilds the graph on the next search.
    Returns:
        The options now in force.
    Raises:
        InvalidQuery: unknown option or value out of range (nothing is stored).
    """

    info = collection.store.get_collection(collection.name) or collection.info
    merged = {**(info.options.get("ann") or {}), **options}
    merged = {k: v for k, v in merged.items() if v is not None}
    opts = AnnOptions.from_options({"ann": merged})
    updated = replace(info, options={**info.options, "ann": merged})
    collection.store.update_collection(updated)
    collection.info = updated
    return opts
