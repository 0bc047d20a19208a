"""The checks ``Database.collection`` runs on its arguments and on a collection's stored options,
and the options it stores when asked (sentence windows, keyword stop words).

Also the rule that keeps conversation memory private: its collection holds every user's
messages, so only the memory API (which scopes each read to one user) may open it.
"""

from __future__ import annotations

import dataclasses

from semsearch.collection import Collection
from semsearch.errors import InvalidQuery
from semsearch.memory_marks import MEMORY_COLLECTION, MEMORY_OPTION, is_memory, reuse_scope
from semsearch.schema import Schema
from semsearch.stores.base import CollectionInfo

__all__ = [
    "KEYWORD_TOKENIZERS",
    "MEMORY_COLLECTION",
    "MEMORY_OPTION",
    "check_arguments",
    "check_options",
    "check_stopwords",
    "check_window_vectors",
    "is_memory",
    "keyword_options",
    "memory_refused",
    "reuse_scope",
    "window_vectors_option",
    "with_option",
    "with_stopwords",
    "with_windows",
]


#: Keyword tokenizers a collection may choose (``Database.collection(keyword_tokenizer=...)``).
KEYWORD_TOKENIZERS = ("porter", "trigram")


def keyword_options(keyword_tokenizer: str | None) -> dict[str, str]:
    if keyword_tokenizer is None:
        return {}
    if keyword_tokenizer not in KEYWORD_TOKENIZERS:
        from semsearch.errors import InvalidQuery

        raise InvalidQuery(
            f"unknown keyword tokenizer {keyword_tokenizer!r}",
            hint=f"use one of: {', '.join(KEYWORD_TOKENIZERS)}",
        )
    return {"keyword_tokenizer": keyword_tokenizer}


def memory_refused(name: str) -> Exception:

    return InvalidQuery(
        f"the collection {name!r} is conversation memory: it holds every user's messages and is "
        "reachable only through the memory API",
        hint="use semsearch.memory.ConversationMemory (HTTP: /memory/...), which reads one "
        "user's messages at a time; pick another name for other records",
    )


def check_options(info: CollectionInfo, options: dict[str, object]) -> None:
    stored = info.options.get("keyword_tokenizer", "porter")
    asked = options.get("keyword_tokenizer", stored)
    if asked != stored:
        from semsearch.schema import SchemaConflict

        raise SchemaConflict(
            f"collection {info.name!r} uses keyword tokenizer {stored!r}; asked for {asked!r}",
            hint="the tokenizer is fixed at creation; create a new collection to change it",
        )


def check_arguments(schema: object, embedder: object, **flags: object) -> None:
    """Raise InvalidQuery naming the argument when ``schema``, ``embedder`` or a bool flag of
    ``Database.collection`` has the wrong type.

    An embedder object is recognised by its methods (checked on the type, so no model loads).
    """

    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise InvalidQuery(
                f"{flag} must be True or False, got {type(value).__name__} ({value!r:.40})",
                hint=f"e.g. {flag}=True",
            )

    if schema is not None and not isinstance(schema, Schema):
        raise InvalidQuery(
            f"schema must be a semsearch.Schema or None, got {type(schema).__name__}",
            hint='e.g. schema=semsearch.Schema.from_types({"level": "int"}, text=("name",))',
        )
    methods = ("embed_documents", "embed_query")
    is_embedder = all(callable(getattr(type(embedder), m, None)) for m in methods)
    if embedder is not None and not isinstance(embedder, str) and not is_embedder:
        raise InvalidQuery(
            f"embedder must be a spec string or an Embedder, got {type(embedder).__name__}",
            hint="e.g. embedder='fake:32' or embedder='local:all-MiniLM-L6-v2' (docs/embedders.md)",
        )


def with_windows(coll: Collection, sentence_windows: bool | None) -> Collection:
    """``coll`` with its ``sentence_windows`` option stored as asked (None: as stored)."""
    from semsearch.windows import OPTION, windows_enabled

    if sentence_windows is None or windows_enabled(coll.info.options) == sentence_windows:
        return coll
    return with_option(coll, OPTION, sentence_windows)


def with_stopwords(coll: Collection, keyword_stopwords: str | None) -> Collection:
    """``coll`` with its ``keyword_stopwords`` option stored as asked (None: as stored). Stop
    words apply to queries only, so a collection may change its list at any time."""
    from semsearch.keyword_query import DEFAULT_STOPWORDS

    if keyword_stopwords is None:
        return coll
    if coll.info.options.get("keyword_stopwords", DEFAULT_STOPWORDS) == keyword_stopwords:
        return coll
    return with_option(coll, "keyword_stopwords", keyword_stopwords)


def check_stopwords(keyword_stopwords: object) -> None:
    """Refuse an unknown stop-word list name before anything is created."""
    from semsearch.keyword_query import STOPWORD_LISTS

    if keyword_stopwords is not None and keyword_stopwords not in STOPWORD_LISTS:
        from semsearch.errors import InvalidQuery

        raise InvalidQuery(
            f"unknown keyword stop-word list {keyword_stopwords!r}",
            hint=f"use one of: {', '.join(STOPWORD_LISTS)}",
        )


def window_vectors_option(window_vectors: object) -> dict[str, object]:
    """The option a new collection stores for ``window_vectors``; InvalidQuery if unknown."""
    from semsearch.windows import KINDS, VECTORS_OPTION

    if window_vectors is None:
        return {}
    if window_vectors not in KINDS:
        from semsearch.errors import InvalidQuery

        raise InvalidQuery(
            f"unknown window_vectors {window_vectors!r}", hint=f"use one of: {', '.join(KINDS)}"
        )
    return {VECTORS_OPTION: window_vectors}


def check_window_vectors(info: CollectionInfo, window_vectors: str | None) -> None:
    """Refuse another kind of window vectors than an existing collection keeps."""
    from semsearch.windows import window_kind

    stored = window_kind(info.options)
    if window_vectors is not None and window_vectors != stored:
        from semsearch.schema import SchemaConflict

        raise SchemaConflict(
            f"collection {info.name!r} keeps {stored} sentence windows; asked for {window_vectors}",
            hint=f"rebuild them with `semsearch reembed --window-vectors {window_vectors}` "
            "(the old ones serve until it is done)",
        )


def with_option(coll: Collection, key: str, value: object) -> Collection:
    """``coll`` with ``options[key] = value`` stored (the store's collection row updated)."""
    info = dataclasses.replace(coll.info, options={**coll.info.options, key: value})
    coll.store.update_collection(info)
    coll.info = info
    return coll
