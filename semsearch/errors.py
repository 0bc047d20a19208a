"""Errors raised by semsearch.

Every error carries a ``message`` (what went wrong) and a ``hint`` (how to fix it). The CLI,
HTTP and MCP faces print both and map the class to an exit or status code in one place.

    SemsearchError
    ├── IndexNotFound          the index file or collection does not exist (or was dropped)
    ├── NotAnIndex             an existing file is not a semsearch index (left untouched)
    ├── ModelMismatch          the embedder differs from the one the collection was built with
    ├── DimensionMismatch      a vector has another dimension than the collection's
    ├── FolderMismatch         a folder sync would replace the notes of the collection's folder
    ├── InvalidFilter          a ``where`` filter names an unknown field or operator
    ├── InvalidQuery           a query (or its arguments) cannot be run as given
    ├── InvalidRecord          a record is malformed (no id, wrong field type, ...)
    ├── EmbedderUnavailable    the embedding model cannot be loaded or fails
    │   ├── BadVectors         the model gave NaN, Inf or zero vectors for some texts
    │   └── ModelPullFailed    `models pull` could not fetch or verify a model from the Hub
    ├── RerankerUnavailable    a reranker spec is malformed, or the reranker cannot run
    ├── BackendUnavailable     the storage backend cannot be reached, is unsupported or closed
    ├── StoreCorrupted         the store's contents are inconsistent or unreadable
    └── IndexUnhealthy         semantic search is refused: the index is quarantined
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendUnavailable",
    "BadVectors",
    "CalibrationFailed",
    "DimensionMismatch",
    "EmbedderUnavailable",
    "FolderMismatch",
    "IndexNotFound",
    "IndexUnhealthy",
    "InvalidFilter",
    "InvalidQuery",
    "InvalidRecord",
    "ModelMismatch",
    "ModelPullFailed",
    "NotAnIndex",
    "RerankerUnavailable",
    "SemsearchError",
    "StoreCorrupted",
]


class SemsearchError(Exception):
    """Base of every semsearch error.

    Args:
        message: what went wrong, one sentence, no absolute paths when it can reach a client.
        hint: how to fix it (a command to run, a value to change), or None.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class IndexNotFound(SemsearchError):
    """Raised when the index file, or a collection inside it, does not exist; also by a
    Collection handle whose collection was dropped (``Database.drop_collection``)."""


class NotAnIndex(SemsearchError):
    """Raised when an existing file is not a semsearch index. The file is left byte-for-byte unchanged."""


class ModelMismatch(SemsearchError):
    """Raised when a collection is opened with another embedder model than it was built with."""


class DimensionMismatch(SemsearchError):
    """Raised when a vector's dimension differs from the collection's, or when vectors handed
    to ``Store.set_vectors`` are not one row per chunk id; nothing is stored."""


class FolderMismatch(SemsearchError):
    """Raised by a folder sync (``index_folder``, ``semsearch index``/``watch``) before it writes
    anything, when the collection holds the notes of another folder: syncing would replace its
    records by the new folder's and remove the rest. Nothing is changed; index the new folder
    into another collection, or pass ``new_folder=True`` (``--new-folder``) to re-point it."""


class InvalidFilter(SemsearchError):
    """Raised when a ``where`` filter uses an unknown field, operator or a value of the wrong type."""


class InvalidQuery(SemsearchError):
    """Raised when a search or read cannot run as asked: an argument of the wrong type (the
    message names it, the type given and the type expected), empty query and no filter, bad
    mode, bad limit, or text that is not valid Unicode."""


class InvalidRecord(SemsearchError):
    """Raised when a record is malformed (no id, a field or text of the wrong type, text that
    is not valid Unicode, ...); nothing from its batch is written."""


class EmbedderUnavailable(SemsearchError):
    """Raised when the embedding model cannot be found or loaded, or it returns bad vectors."""


class BadVectors(EmbedderUnavailable):
    """Raised by ``embed_documents`` when the model returned unusable vectors (NaN, Inf or a
    zero vector) for some of the texts: a poison text, not an outage.

    Attributes:
        vectors: float32[n, dim], the unit-normalised vectors of every text (rows listed in
            ``bad`` are zeros and must not be stored).
        bad: ``{row index: why}`` for the texts whose vector is unusable.
    """

    def __init__(
        self, message: str, vectors: Any, bad: dict[int, str], hint: str | None = None
    ) -> None:
        super().__init__(message, hint)
        self.vectors = vectors
        self.bad = bad


class ModelPullFailed(EmbedderUnavailable):
    """Raised by ``semsearch models pull`` (:func:`semsearch.models.pull`) when a model cannot
    be fetched from the Hugging Face Hub (unknown id or revision, no access, offline, the Hub
    unreachable) or a file fails its size or checksum; the folder is then left unfinished,
    never used, and the next pull resumes it."""


class RerankerUnavailable(SemsearchError):
    """Raised when a reranker spec names no known provider or a malformed model, or a local
    folder that does not exist or holds no one-label cross-encoder (when the reranker is named,
    before anything runs), and by a reranker that cannot load or answer. A search never raises
    it for a failure while reranking: it returns the un-reranked hits marked degraded (see
    :mod:`semsearch.rerank`)."""


class BackendUnavailable(SemsearchError):
    """Raised when a location names a backend that is not available or cannot be reached, and
    by a Database (or a Collection handle of it) used after ``close()``."""


class StoreCorrupted(SemsearchError):
    """Raised when the store is readable but its contents are inconsistent."""


class IndexUnhealthy(SemsearchError):
    """Raised by semantic and hybrid search while the index is quarantined: a sync failed
    part-way (the embedder failed mid-batch, the store raised, or the process died), so its
    vectors cannot be trusted. Keyword search still works. See :mod:`semsearch.health`."""


class CalibrationFailed(InvalidQuery):
    """Raised by ``semsearch models calibrate`` (:mod:`semsearch.embedders.calibration`) for
    bad input: too few embedded records, a model other than the collection's, or ``--save`` for
    a model the packaged table calibrates (CLI exit 4)."""
