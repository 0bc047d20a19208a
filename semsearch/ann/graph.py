"""Thin wrappers over faiss HNSW: build, save, load (memory-mapped, or with codes handed in),
filtered search.

faiss (Douze et al., "The Faiss library", 2024) is imported inside each function, so importing
semsearch never loads it. Graph ids are row numbers of the cache's arrays. Inner product on
unit vectors is cosine similarity in [-1, 1].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from semsearch.ann.policy import AnnOptions
from semsearch.atomic_file import write_atomically
from semsearch.errors import BackendUnavailable

__all__ = [
    "add_to_graph",
    "build_graph",
    "build_threads",
    "clone_graph",
    "fp16_codes",
    "graph_vectors",
    "is_mapped",
    "load_graph",
    "load_graph_without_codes",
    "new_graph",
    "owned_copy",
    "save_graph",
    "search_graph",
    "set_build_threads",
]

Graph = Any  # a faiss.IndexHNSW


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss is a core dependency
        raise BackendUnavailable(
            "faiss is not installed, so the HNSW index cannot be built",
            hint="pip install faiss-cpu (or search with exact=True)",
        ) from exc
    return faiss


def build_graph(vectors: NDArray[np.floating], opts: AnnOptions) -> Graph:
    """A new HNSW graph over float32 or float16 [n, dim] unit vectors (ids 0..n-1; float16
    rows are upcast a batch at a time, see :func:`add_to_graph`)."""
    graph = new_graph(int(vectors.shape[1]), opts, vectors)
    add_to_graph(graph, vectors)
    return graph


def new_graph(dim: int, opts: AnnOptions, sample: NDArray[np.floating]) -> Graph:
    """An empty HNSW graph for ``dim``-d unit vectors.

    ``opts.storage`` picks ``IndexHNSWFlat`` (float32) or ``IndexHNSWSQ`` (float16 / int8;
    int8 is trained on up to 65,536 rows of ``sample``, [m, dim] unit vectors; fp16 needs no
    training, its codes are the values rounded to half precision).
    """
    faiss = _faiss()
    if opts.storage == "float32":
        graph = faiss.IndexHNSWFlat(dim, opts.M, faiss.METRIC_INNER_PRODUCT)
    else:
        qtype = (
            faiss.ScalarQuantizer.QT_fp16
            if opts.storage == "float16"
            else faiss.ScalarQuantizer.QT_8bit
        )
        graph = faiss.IndexHNSWSQ(dim, qtype, opts.M, faiss.METRIC_INNER_PRODUCT)
        if not graph.is_trained:  # int8 ranges; fp16 has nothing to learn
            graph.train(np.ascontiguousarray(sample[:65_536], dtype=np.float32))
    graph.hnsw.efConstruction = opts.ef_construction
    return graph


def add_to_graph(
    graph: Graph,
    vectors: NDArray[np.floating],
    batch: int = 65_536,
    before_batch: Callable[[], None] | None = None,
) -> None:
    """Append rows to an in-memory (not memory-mapped) graph, in batches to bound copies
    (float32 rows are passed as views; other dtypes are upcast 8,192 rows at a time).
    ``before_batch`` runs before each faiss add (the background build sets its thread count
    there, and raises to stop)."""
    if vectors.dtype != np.float32:
        batch = min(batch, 8192)
    for start in range(0, vectors.shape[0], batch):
        if before_batch is not None:
            before_batch()
        graph.add(np.ascontiguousarray(vectors[start : start + batch], dtype=np.float32))


def build_threads() -> int:
    """The OpenMP threads a faiss build started now in this thread would use."""
    return int(_faiss().omp_get_max_threads())


def set_build_threads(n: int) -> None:
    """Set the OpenMP threads of the faiss calls made by the calling thread from now on
    (OpenMP keeps the count per thread: other threads' searches and builds are unaffected)."""
    _faiss().omp_set_num_threads(int(n))


def save_graph(graph: Graph, path: str, codes: bool = True) -> int:
    """Write the graph to ``path`` via a temporary file and an atomic rename. Returns bytes.

    ``codes=False`` writes the HNSW links without the stored vectors (faiss
    ``IO_FLAG_SKIP_STORAGE``: a ``null`` storage in their place); read such a file back with
    :func:`load_graph_without_codes`.
    """
    faiss = _faiss()
    flags = 0 if codes else faiss.IO_FLAG_SKIP_STORAGE
    return write_atomically(path, lambda tmp: faiss.write_index(graph, tmp, flags), unique=False)


def clone_graph(graph: Graph) -> Graph:
    """A deep, in-memory copy of a graph (``faiss.clone_index``)."""
    return _faiss().clone_index(graph)


def load_graph(path: str, mmap: bool) -> Graph:
    """Read a graph; ``mmap=True`` maps its vectors in place (read-only: never add to it).

    Raises:
        RuntimeError: faiss cannot parse the file.
    """
    faiss = _faiss()
    flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mmap else 0
    return faiss.read_index(path, flags)


def load_graph_without_codes(
    path: str, dim: int, fill: Callable[[NDArray[np.float16]], None], mmap: bool = True
) -> Graph:
    """Read an fp16 graph written with ``codes=False`` and give it codes filled by ``fill``.

    Args:
        path: the graph file (an ``IndexHNSWSQ`` written by :func:`save_graph` without codes).
        dim: the vectors' dimension.
        fill: called once with a zeroed, writable float16[ntotal, dim] view of the new codes
            (graph row order); it writes the stored vectors into it. The codes are owned by the
            graph (in memory, not mapped).
        mmap: map the HNSW links from the file (read-only, shared between processes: about
            256 bytes a row at M = 32) instead of reading them into memory; such a graph is
            :func:`is_mapped` and must never be added to (:func:`owned_copy` first).
    Returns:
        The graph, its ``QT_fp16`` storage holding exactly the values ``fill`` wrote.
    Raises:
        RuntimeError: faiss cannot parse the file.
        ValueError: the file is not an HNSW graph without codes of this dimension.
    """
    graph = load_graph(path, mmap)
    if not isinstance(graph, _faiss().IndexHNSW) or graph.storage is not None or graph.d != dim:
        raise ValueError("not an HNSW graph file without codes of this dimension")
    _attach_fp16_codes(graph, fill)
    return graph


def owned_copy(graph: Graph, path: str) -> Graph:
    """An in-memory copy of an :func:`is_mapped` graph read from its file ``path``, that rows
    may be added to (faiss aborts the process on an add to mapped links or codes, and
    ``clone_index`` keeps the maps). A file without codes gets a copy of ``graph``'s fp16
    codes."""
    copy = load_graph(path, mmap=False)
    if copy.storage is None:
        codes = graph_vectors(graph)
        if codes is None:
            raise ValueError("the graph file has no codes and the graph no fp16 codes to copy")

        def fill(out: NDArray[np.float16]) -> None:
            out[:] = codes

        _attach_fp16_codes(copy, fill)
    return copy


def _attach_fp16_codes(graph: Graph, fill: Callable[[NDArray[np.float16]], None]) -> None:
    """Give a graph read without storage an owned ``QT_fp16`` storage of ntotal rows that
    ``fill`` writes (given a zeroed float16[ntotal, dim] view)."""
    faiss = _faiss()
    n, dim = int(graph.ntotal), int(graph.d)
    storage = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, graph.metric_type)
    storage.codes.resize(n * storage.code_size)  # std::vector value-initialises: zeros
    if n:
        view = faiss.rev_swig_ptr(storage.codes.data(), n * storage.code_size)
        fill(view.view(np.float16).reshape(n, dim))
    storage.ntotal = n
    graph.storage = storage
    graph.own_fields = True
    storage.this.disown()  # the graph frees it now


def fp16_codes(graph: Graph) -> bool:
    """True for an ``IndexHNSWSQ`` graph with ``QT_fp16`` codes (IEEE half floats)."""
    faiss = _faiss()
    storage = faiss.downcast_index(graph.storage)
    return (
        isinstance(storage, faiss.IndexScalarQuantizer)
        and storage.sq.qtype == faiss.ScalarQuantizer.QT_fp16
    )


def is_mapped(graph: Graph) -> bool:
    """True when the graph's codes or links are memory-mapped from its file (read-only: never
    add to it; see :func:`owned_copy`)."""
    storage = _faiss().downcast_index(graph.storage)
    links = getattr(graph, "hnsw", None)
    mapped_links = links is not None and not bool(links.neighbors.is_owned)
    return int(graph.ntotal) > 0 and (not bool(storage.codes.is_owned) or mapped_links)


def graph_vectors(graph: Graph) -> NDArray[np.floating] | None:
    """A zero-copy view of the vectors a graph stores, when they are the stored values.

    Returns:
        float32[n, dim] for ``IndexHNSWFlat``; float16[n, dim] for ``IndexHNSWSQ`` with
        ``QT_fp16``, whose codes are IEEE half floats (so, built from float16 values, exactly
        the SQLite file's vectors); None for int8 codes or an empty graph.
    """
    faiss = _faiss()
    storage = faiss.downcast_index(graph.storage)
    if graph.ntotal == 0:
        return None
    if isinstance(storage, faiss.IndexFlat):
        view = faiss.rev_swig_ptr(storage.get_xb(), graph.ntotal * graph.d)
    elif fp16_codes(graph):
        codes = faiss.rev_swig_ptr(storage.codes.data(), graph.ntotal * storage.code_size)
        view = codes.view(np.float16)
    else:
        return None
    view = view.reshape(graph.ntotal, graph.d)
    view.flags.writeable = False
    return view  # type: ignore[no-any-return]


def search_graph(
    graph: Graph,
    vector: NDArray[np.float32],
    k: int,
    ef: int,
    allowed_bits: NDArray[np.uint8] | None,
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """Top-``k`` graph rows by inner product, keeping only rows where ``allowed`` is True.

    Args:
        graph: the HNSW index.
        vector: float32[dim] unit query.
        k: results wanted.
        ef: candidate-list size (>= k).
        allowed_bits: uint8[ceil(graph.ntotal / 8)], the rows that may be returned as a
            little-endian bitmap (``np.packbits(mask, bitorder="little")``), evaluated inside
            the search (faiss ``IDSelectorBitmap``); None for every row.
    Returns:
        (rows int64[m], scores float32[m]), best first, m <= k (fewer when the graph runs dry).
    """
    ef = int(max(ef, k))
    if allowed_bits is None:
        params = _UNFILTERED.get(ef) or _unfiltered(ef)
    else:
        params = _faiss().SearchParametersHNSW()
        params.efSearch = ef
        params.sel = _faiss().IDSelectorBitmap(allowed_bits)
    query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1)
    scores, rows = graph.search(query, int(k), params=params)
    keep = rows[0] >= 0
    return (
        rows[0][keep].astype(np.int64, copy=False),
        scores[0][keep].astype(np.float32, copy=False),
    )


#: Unfiltered search parameters by ``ef`` (faiss only reads them: threads may share one);
#: building one costs about 3 us, a tenth of the glue around an unfiltered search.
_UNFILTERED: dict[int, Any] = {}


def _unfiltered(ef: int) -> Any:
    params = _faiss().SearchParametersHNSW()
    params.efSearch = ef
    if len(_UNFILTERED) >= 64:  # ef is the collection's ef_search or a widened one: few
        _UNFILTERED.clear()
    _UNFILTERED[ef] = params
    return params
