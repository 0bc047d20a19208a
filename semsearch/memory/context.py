"""The context builder's pure parts: token counting, de-duplication and pruning to a budget.

:meth:`semsearch.ConversationMemory.context` gathers the candidates (the recent window of the
current conversation and the best semantic matches from the user's other conversations);
:func:`build_context` chooses which of them fit ``token_budget``.

Token counts come from a real tokenizer. By default it is the embedder's own tokenizer
(``Embedder.token_spans``; for the default all-MiniLM-L6-v2 that is its WordPiece
``tokenizer.json``), counting the tokens of the message content only, without special tokens
([CLS]/[SEP]) and without any chat-template overhead. Pass ``token_counter=`` to count with the
tokenizer of the LLM that will read the context instead (e.g. tiktoken).

Pruning keeps the query always. The other items are ranked by how much they are worth keeping,
interleaving the two sources: newest recent message, best match, second-newest recent message,
second-best match, and so on; items are dropped from the end of that ranking until the total
fits. So the oldest recent messages and the weakest matches go first, and what is kept of the
recent window is always its newest, contiguous part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

from semsearch.embedders.base import Embedder
from semsearch.errors import InvalidQuery
from semsearch.memory.types import Message, MessageHit, Provenance

__all__ = [
    "Context",
    "ContextItem",
    "TokenCounter",
    "build_context",
    "dedupe",
    "embedder_token_counter",
    "fit_to_budget",
]

#: Counts the tokens of one text: ``counter(text) -> int >= 0``.
TokenCounter = Callable[[str], int]


def embedder_token_counter(embedder: Embedder) -> TokenCounter:
    """Count tokens with the embedder's own tokenizer (special tokens excluded)."""

    def count(text: str) -> int:
        return len(embedder.token_spans(text))

    return count


@dataclass(frozen=True)
class ContextItem:
    """One piece of a built context.

    Attributes:
        source: ``"recent"`` (the current conversation's window), ``"semantic"`` (a match from
            another conversation of the same user) or ``"query"`` (the current query).
        role: chat role (the query's role is ``"user"``).
        content: the text.
        tokens: tokens of ``content`` under the context's tokenizer.
        score: semantic items only: cosine similarity in [-1, 1]; None otherwise.
        message: the stored message (None for the query).
    """

    source: Provenance
    role: str
    content: str
    tokens: int
    score: float | None = None
    message: Message | None = None


@dataclass(frozen=True)
class Context:
    """What :meth:`ConversationMemory.context` returns.

    Attributes:
        items: the semantic matches (best first), then the recent window (oldest first), then
            the query. Their ``tokens`` sum to ``tokens``.
        tokens: total tokens, always <= ``token_budget``.
        token_budget: the budget asked for.
        dropped: candidates pruned to fit the budget.
        tokenizer: where the counts come from (the embedder's model id, or ``"custom"``).
        degraded: True when the semantic part could not run (the embedder failed); the recent
            window and the query are still there.
        degraded_reason: why, or None.
    """

    items: list[ContextItem]
    tokens: int
    token_budget: int
    dropped: int
    tokenizer: str
    degraded: bool = False
    degraded_reason: str | None = None

    def of(self, source: Provenance) -> list[ContextItem]:
        """The items from one source, in context order."""
        return [item for item in self.items if item.source == source]

    def messages(self) -> list[dict[str, str]]:
        """``[{"role": ..., "content": ...}]`` in context order, for chat-completion APIs."""
        return [{"role": item.role, "content": item.content} for item in self.items]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        from dataclasses import asdict

        return asdict(self)


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def dedupe(
    query: str, recent: Sequence[Message], hits: Sequence[MessageHit], semantic: int
) -> tuple[list[Message], list[MessageHit]]:
    """Drop repeats: recent messages whose text is the query's (the query was usually just
    added), and matches that repeat the query, a recent message or a better match. Returns the
    recent window and at most ``semantic`` matches."""
    seen = {_key(query)}
    kept_recent = [m for m in recent if _key(m.content) not in seen]
    seen |= {_key(m.content) for m in kept_recent}
    recent_ids = {m.id for m in recent}
    kept_hits: list[MessageHit] = []
    for hit in hits:
        key = _key(hit.message.content)
        if key in seen or hit.message.id in recent_ids:
            continue
        seen.add(key)
        kept_hits.append(hit)
        if len(kept_hits) == semantic:
            break
    return kept_recent, kept_hits


def fit_to_budget(
    query: ContextItem,
    recent: Sequence[ContextItem],
    semantic: Sequence[ContextItem],
    budget: int,
) -> tuple[list[ContextItem], int]:
    """Choose the items that fit ``budget`` tokens (see the module docstring for the order).

    Args:
        query: always kept.
        recent: the recent window, oldest first.
        semantic: the matches, best first.
        budget: the most tokens allowed in total, >= the query's.
    Returns:
        (items in context order: semantic best-first, recent oldest-first, then the query;
        number of items dropped).
    Raises:
        InvalidQuery: the query alone is longer than the budget.
    """
    if query.tokens > budget:
        raise InvalidQuery(
            f"the query has {query.tokens} tokens, more than token_budget={budget}",
            hint="raise token_budget or shorten the query",
        )
    ranked = [
        item
        for pair in zip_longest(reversed(recent), semantic)
        for item in pair
        if item is not None
    ]
    total = query.tokens + sum(item.tokens for item in ranked)
    dropped = 0
    while ranked and total > budget:
        total -= ranked.pop().tokens
        dropped += 1
    kept = {id(item) for item in ranked}
    items = [s for s in semantic if id(s) in kept] + [r for r in recent if id(r) in kept]
    return [*items, query], dropped


def build_context(
    query: str,
    recent: Sequence[Message],
    hits: Sequence[MessageHit],
    semantic: int,
    token_budget: int,
    count_tokens: TokenCounter,
    tokenizer: str,
    degraded_reason: str | None = None,
) -> Context:
    """The context of ``query`` from its candidates: repeats dropped (:func:`dedupe`, keeping
    at most ``semantic`` matches), then pruned to ``token_budget`` (:func:`fit_to_budget`).

    Args:
        recent: the recent window, oldest first.
        hits: the matches from other conversations, best first.
        count_tokens: counts each item's content; ``tokenizer`` names it in the Context.
        degraded_reason: why the matches are missing (the Context is then ``degraded``).
    Raises:
        InvalidQuery: the query alone is longer than the budget.
    """
    recent, hits = dedupe(query, recent, hits, semantic)

    def item(source: Provenance, message: Message, score: float | None) -> ContextItem:
        return ContextItem(
            source, message.role, message.content, count_tokens(message.content), score, message
        )

    items, dropped = fit_to_budget(
        ContextItem("query", "user", query, count_tokens(query)),
        [item("recent", m, None) for m in recent],
        [item("semantic", h.message, h.score) for h in hits],
        token_budget,
    )
    return Context(
        items, sum(i.tokens for i in items), token_budget, dropped, tokenizer,
        degraded_reason is not None, degraded_reason,
    )  # fmt: skip
