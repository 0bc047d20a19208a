"""Keyword queries as BM25 reads them: clauses, query term frequency and stop words.

Every store ranks a keyword query from the same clauses, so the same query means the same on
SQLite, PostgreSQL and Milvus:

- The text is split at whitespace into pieces and each piece into word tokens (letters and
  digits, casefolded). A piece of several tokens (``ADR-0042``, ``state-of-the-art``) adds
  itself as a phrase clause, then each token as a clause: the exact form ranks first.
- **Query term frequency.** A clause that occurs several times in the query counts with the
  weight :func:`query_weight` (``sqrt(count)``), not once: a long question that names its topic
  three times is about that topic. Counting each occurrence once was the main cause of our
  keyword mode's gap on paragraph-long questions (docs/retrieval.md, "Long questions").
- **Stop words** (query side only; the index keeps every word). A clause whose tokens are all
  in the collection's stop-word list (:data:`STOPWORD_LISTS`, default ``english``) is left
  out, so ``how do I link two notes`` ranks by ``link``, ``two`` and ``notes`` and a note full
  of "how do I" no longer wins. A query made only of stop words keeps them all (``to be or not
  to be`` finds what it always found).

The BM25 every store computes is stated here once (:func:`idf`, :func:`term_part`,
:data:`K1`, :data:`B`), and so is which clauses count as *evidence* for the default floor (a
word that is not a stop word and is held by at most half of the records: :func:`meaningful`,
:func:`evidence_clauses`); each store applies them to its own statistics.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_STOPWORDS",
    "ENGLISH_STOPWORDS",
    "FTS5_IDF_FLOOR",
    "K1",
    "LENGTH_KNEE",
    "MEANINGFUL_IDF",
    "STOPWORD_LISTS",
    "TITLE_WEIGHT",
    "B",
    "Clause",
    "evidence_clauses",
    "fts5_frequency",
    "fts5_idf",
    "idf",
    "length_norm",
    "meaningful",
    "parse_clauses",
    "query_weight",
    "relative_length",
    "scoring_clauses",
    "stopword_list",
    "term_part",
]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

#: English function words: articles, pronouns, auxiliary verbs, question words, conjunctions,
#: common prepositions and negations (our own list; its core is Lucene's English stop set,
#: widened with the pronouns, auxiliaries and question words of questions people type:
#: "how do I ...", "what does my ..."). Words that carry meaning in technical text
#: (``after``, ``before``, ``between``, ``up``, ``down``, ``more``, ``only``) are kept.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "also",
        "am",
        "an",
        "and",
        "any",
        "anyone",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "being",
        "both",
        "but",
        "by",
        "can",
        "could",
        "d",
        "did",
        "do",
        "does",
        "doing",
        "don",
        "each",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "ll",
        "m",
        "may",
        "me",
        "might",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "o",
        "of",
        "on",
        "once",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "please",
        "re",
        "s",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "someone",
        "something",
        "such",
        "t",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "until",
        "us",
        "ve",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "y",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)

#: Stop-word lists by the name a collection stores (option ``keyword_stopwords``).
STOPWORD_LISTS: dict[str, frozenset[str]] = {"english": ENGLISH_STOPWORDS, "none": frozenset()}
DEFAULT_STOPWORDS = "english"

#: BM25's constants (Robertson and Zaragoza 2009): FTS5's and Lucene's defaults.
K1 = 1.2
B = 0.75
#: BM25 weight of a record's title column against 1.0 for its body (FTS5 ``bm25()`` column
#: weights; the title is defined in semsearch/stores/record_terms.py). Chosen on BEIR SciFact
#: test (keyword nDCG@10 with this BM25): 1.5 0.6929, 2.0 0.6959, 2.5 0.6975, 3.0 0.6958. With
#: the two-fold protocol one half picks 2.0 and the other 3.0; 2.5, between them, is the best
#: on all 300 (docs/retrieval.md). Under FTS5's own BM25 the choice was 2.0.
TITLE_WEIGHT = 2.5
#: FTS5's floor for a non-positive IDF (a term in at least half of the rows).
FTS5_IDF_FLOOR = 1e-6

#: The relative length above which BM25's length penalty grows with the logarithm of the length
#: instead of the length (:func:`relative_length`). Measured on SciFact keyword nDCG@10 and the
#: buried facts (benchmarks/buried_facts.py, top 1 in keyword / hybrid mode): linear lengths
#: 0.6975 and 9 / 10 of 11; knee 1.0 0.6964 and 11 / 11; **1.5** 0.6972 and 10 / 11; 2.0 0.6972
#: and 9 / 11.
LENGTH_KNEE = 1.5

#: A clause is evidence for the default floor when its BM25 IDF (Lucene's,
#: ``log(1 + (N - n + 0.5) / (n + 0.5))``) is at least ln 2, i.e. when at most half of the
#: records hold it (n <= N / 2): ``phone`` in a phone shop or ``foam`` in the Foam docs
#: ranks, but never makes a hit on its own. Chosen by measurement (docs/retrieval.md).
MEANINGFUL_IDF = math.log(2.0)


@dataclass(frozen=True)
class Clause:
    """One ORed part of a keyword query.

    Attributes:
        tokens: casefolded word tokens (letters and digits); more than one makes a phrase.
        count: how many times the clause occurs in the query (>= 1).
        stop: every token is in the collection's stop-word list.
    """

    tokens: tuple[str, ...]
    count: int = 1
    stop: bool = False

    @property
    def text(self) -> str:
        """The clause as one string, tokens joined by a space (``adr 0042``)."""
        return " ".join(self.tokens)

    @property
    def fts(self) -> str:
        """The clause as a quoted FTS5 string (``"adr 0042"``): tokens hold no quote."""
        return f'"{self.text}"'

    @property
    def weight(self) -> float:
        """Its query-term-frequency weight, :func:`query_weight` of ``count``."""
        return query_weight(self.count)


def query_weight(count: int) -> float:
    """The weight of a clause found ``count`` (>= 1) times in the query: ``sqrt(count)``.

    BM25's query-term factor (Robertson et al. 1994, ``k3``) made concave: each repeat adds
    less. Measured on paragraph-long SciFact questions against counting once and counting
    linearly (docs/retrieval.md): it keeps most of linear counting's gain on long questions
    and none of its loss on short claims.
    """
    return math.sqrt(count)


def stopword_list(options: Mapping[str, Any]) -> frozenset[str]:
    """The stop words a collection's options name (``keyword_stopwords``: ``english``, the
    default, or ``none``); an unknown name (a newer version's) falls back to the default."""
    name = options.get("keyword_stopwords") or DEFAULT_STOPWORDS
    return STOPWORD_LISTS.get(str(name), STOPWORD_LISTS[DEFAULT_STOPWORDS])


def parse_clauses(text: str, stopwords: frozenset[str] = frozenset()) -> list[Clause]:
    """Every clause of ``text`` in query order, each once with its count and stop flag."""
    found: list[tuple[str, ...]] = []
    for piece in text.split():
        tokens = tuple(t.casefold() for t in _TOKEN.findall(piece))
        if len(tokens) > 1:
            found.append(tokens)
        found += [(t,) for t in tokens]
    counts = Counter(found)
    return [
        Clause(tokens, counts[tokens], all(t in stopwords for t in tokens))
        for tokens in dict.fromkeys(found)
    ]


def scoring_clauses(text: str, stopwords: frozenset[str] = frozenset()) -> list[Clause]:
    """The clauses BM25 scores for ``text``: those that are not stop words, or all of them
    when every clause is (a query of stop words only). Empty when ``text`` has no word."""
    clauses = parse_clauses(text, stopwords)
    kept = [c for c in clauses if not c.stop]
    return kept or clauses


def meaningful(idf_value: float) -> bool:
    """True when a scored clause with this IDF (Lucene's, > 0) is evidence for the default
    floor: at least :data:`MEANINGFUL_IDF`."""
    return idf_value >= MEANINGFUL_IDF - 1e-12


def evidence_clauses(
    idfs: Sequence[float], dfs: Sequence[int], stops: Sequence[bool] | None = None
) -> list[int]:
    """Positions of the clauses that keyword evidence counts: the meaningful ones
    (:func:`meaningful`, and not stop words: ``stops`` flags them), those no record holds
    included (a query word the collection lacks is part of what was asked); every clause when
    no meaningful one is held by any record (``how are Milvus collections laid out`` in a
    collection where ``milvus`` is common and ``laid`` absent still finds the Milvus page; a
    query of stop words only, ``to be or not to be``, finds what it says)."""
    stop = list(stops) if stops is not None else [False] * len(idfs)
    chosen = [i for i, v in enumerate(idfs) if meaningful(v) and not stop[i]]
    if not any(dfs[i] for i in chosen):
        return list(range(len(idfs)))
    return chosen


def idf(total: int, n: int) -> float:
    """BM25's IDF of a clause held by ``n`` of ``total`` records, Lucene's form:
    ``log(1 + (N - n + 0.5) / (n + 0.5))``, > 0 (ln 2 when n = N / 2)."""
    return math.log1p((total - n + 0.5) / (n + 0.5))


def fts5_idf(total: int, n: int) -> float:
    """FTS5's ``bm25()`` IDF of a phrase in ``n`` of ``total`` rows (fts5_aux.c):
    ``log((N - n + 0.5) / (n + 0.5))``, floored at :data:`FTS5_IDF_FLOOR`. Dividing an FTS5
    score by it leaves the phrase's ``f * (k1 + 1) / (f + norm)``."""
    value = math.log((total - n + 0.5) / (n + 0.5)) if total > 0 else 0.0
    return value if value > 0 else FTS5_IDF_FLOOR


def relative_length(length: float, avgdl: float) -> float:
    """A record's length as BM25's normalisation sees it: ``r = |d| / avgdl`` up to
    :data:`LENGTH_KNEE` (1.5), ``1.5 * (1 + ln(r / 1.5))`` above it (the same value and slope
    at the knee). Linear lengths let a long note that holds the answer once sink below short
    notes that hold one query word (a 165-word note with the lighthouse key under a one-line
    note about car keys); the logarithm keeps the penalty for length but slows it down above
    the knee. Measured in docs/retrieval.md ("Long notes").
    """
    r = length / (avgdl or 1.0)
    return r if r <= LENGTH_KNEE else LENGTH_KNEE * (1.0 + math.log(r / LENGTH_KNEE))


def length_norm(length: float, avgdl: float) -> float:
    """``k1 * (1 - b + b * relative_length(|d|, avgdl))``: the denominator's constant of a
    record's term parts."""
    return K1 * (1.0 - B + B * relative_length(length, avgdl))


def term_part(f: float, length: float, avgdl: float) -> float:
    """BM25's term-frequency part of one clause in one record: ``f * (k1 + 1) / (f +
    length_norm(|d|, avgdl))`` for ``f`` (weighted) occurrences in a record of ``length``
    tokens; in [0, k1 + 1)."""
    if f <= 0:
        return 0.0
    return f * (K1 + 1.0) / (f + length_norm(length, avgdl))


def fts5_frequency(part: float, length: float, avgdl: float) -> float:
    """The weighted frequency ``f`` behind an FTS5 term part ``f * (k1 + 1) / (f + k1 * (1 - b
    + b * |d| / avgdl))`` (FTS5's linear length, b = 0.75): FTS5's ``bm25()`` of one clause,
    divided by its IDF, gives that part; this turns it back into ``f`` so that
    :func:`term_part` can score it with semsearch's length normalisation."""
    linear = K1 * (1.0 - B + B * length / (avgdl or 1.0))
    room = K1 + 1.0 - part
    return part * linear / room if room > 1e-12 else float("inf")
