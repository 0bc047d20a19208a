"""Query/document prefixes that some embedding models need, declared per model entry.

Asymmetric retrieval models are trained with a marker in front of each text, and score worse
without it. The prefixes come from each model's card:

| models | query prefix | document prefix | source |
|---|---|---|---|
| e5 (``e5-small/base/large[-v2]``, ``multilingual-e5-*``) | ``query: `` | ``passage: `` | intfloat/e5-* model cards |
| ``nomic-embed-text`` | ``search_query: `` | ``search_document: `` | nomic-ai/nomic-embed-text-v1.5 card |
| ``bge-*-en-v1.5``, ``mxbai-embed-large``, ``snowflake-arctic-embed`` | ``Represent this sentence for searching relevant passages: `` | (none) | BAAI, mixedbread-ai, Snowflake cards |

A sentence-transformers folder that declares ``prompts`` (``query`` and ``document`` or
``passage``) in ``config_sentence_transformers.json`` wins over this table. Models not listed
(e.g. all-MiniLM-L6-v2) embed text as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN_PROMPTS", "Prompts", "prompts_for"]


@dataclass(frozen=True)
class Prompts:
    """Prefixes put before queries and documents before embedding (both may be empty).

    Attributes:
        query: prefix for search queries, e.g. ``"query: "``.
        document: prefix for stored texts (chunks), e.g. ``"passage: "``.
        source: where the prefixes come from (model card, config file).
    """

    query: str = ""
    document: str = ""
    source: str = ""

    def __bool__(self) -> bool:
        return bool(self.query or self.document)

    def apply(self, texts: Sequence[str], kind: str) -> list[str]:
        """``texts`` with the prefix for ``kind`` (``"query"`` or ``"document"``) in front."""
        prefix = self.query if kind == "query" else self.document
        return [prefix + t for t in texts] if prefix else list(texts)

    def token_cost(self, count: Callable[[str], int]) -> int:
        """Most tokens either prefix adds, counted with ``count`` (0 when there is none)."""
        return max((count(p) for p in (self.query, self.document) if p), default=0)


_RETRIEVAL = "Represent this sentence for searching relevant passages: "

#: (pattern on the model's base name, its prompts), first match wins.
KNOWN_PROMPTS: list[tuple[re.Pattern[str], Prompts]] = [
    (
        re.compile(r"(multilingual-)?e5-(small|base|large)(-v2)?", re.I),
        Prompts("query: ", "passage: ", "intfloat/e5 model cards"),
    ),
    (
        re.compile(r"nomic-embed-text(-v1(\.5)?)?", re.I),
        Prompts("search_query: ", "search_document: ", "nomic-embed-text model card"),
    ),
    (
        re.compile(r"bge-(small|base|large)-en-v1\.5", re.I),
        Prompts(_RETRIEVAL, "", "BAAI/bge-*-en-v1.5 model cards"),
    ),
    (
        re.compile(r"(mxbai-embed-large(-v1)?|snowflake-arctic-embed.*)", re.I),
        Prompts(_RETRIEVAL, "", "mixedbread-ai / Snowflake model cards"),
    ),
]


def prompts_for(name: str, st_config: Mapping[str, Any] | None = None) -> Prompts:
    """The prompts for a model, from its sentence-transformers config or the known table.

    Args:
        name: a model name, folder path or Ollama tag (``nomic-embed-text:latest``); only the
            last path component without the tag is matched.
        st_config: the parsed ``config_sentence_transformers.json``, if any.
    """
    declared = (st_config or {}).get("prompts") or {}
    if isinstance(declared, Mapping):
        query = str(declared.get("query", "") or "")
        document = str(declared.get("document", declared.get("passage", "")) or "")
        if query or document:
            return Prompts(query, document, "config_sentence_transformers.json")
    base = re.split(r"[\\/]", name.rstrip("/\\"))[-1].split(":", 1)[0]
    for pattern, prompts in KNOWN_PROMPTS:
        if pattern.fullmatch(base):
            return prompts
    return Prompts()
