"""The ``where`` filter language: parse and validate a JSON filter into a small AST.

Syntax (MongoDB/chroma style), over a collection's declared fields:

    {"level": 3}                                  equality by plain value
    {"level": {"$gte": 2, "$lt": 5}}              operators: $eq $ne $gt $gte $lt $lte $in $nin
    {"classes": {"$contains": "Wizard"}}          list[str] fields ({"classes": "Wizard"} too)
    {"level_min": 2, "level_max": 4}              range suffixes (>= and <=)
    {"$and": [...]}, {"$or": [...]}, {"$not": {...}}

A float field also takes a fraction written as a string, ``{"challenge_rating": "1/4"}`` (as
players write D&D challenge ratings), read here once for every face. Several keys in one object
are ANDed. An empty object ``{}`` matches every record, at the top
and inside ``$and``, ``$or`` and ``$not`` (so ``{"$not": {}}`` matches none). A filter nests at
most :data:`MAX_FILTER_DEPTH` logical operators deep and holds at most
:data:`MAX_FILTER_LEAVES` comparisons (the deepest filter SQLite's parser accepts with a path
scope added, with margin); larger ones are InvalidFilter. ``$ne`` and ``$nin`` also match
records where the field is absent (as in MongoDB); ``$not`` is the exact complement of its
operand. Backends compile the AST with bound parameters only; values never reach query text.

Path scopes (a search's ``folder=``, ``include=`` and ``exclude=``) become the same AST through
:func:`path_filter`, with :class:`IdMatch` leaves on the record id, so every store applies them
before ranking exactly as it applies ``where``.

What lives here, by job: ``nodes.py`` (the AST: :class:`Compare`, :class:`And`, :class:`Or`,
:class:`Not`, :class:`IdMatch`, :func:`conjoin`), ``parse.py`` (the ``where`` language into the
AST: :func:`parse_filter` and its limits), ``values.py`` (one comparison's value checked against
its field's type: fractions, int64, Unicode) and ``paths.py`` (path scopes into the AST:
:func:`path_filter`). Every name is importable from ``semsearch.filters``.

A low layer: it imports only ``errors``, ``globs``, ``schema`` and ``validation``. Who may import
it: everything above that (stores, search and ingest, collection, memory, the CLI's filter
options and the servers' error mapping).
"""

from semsearch.filters.nodes import NOTHING, And, Compare, Filter, IdMatch, Not, Op, Or, conjoin
from semsearch.filters.parse import MAX_FILTER_DEPTH, MAX_FILTER_LEAVES, OPERATORS, parse_filter
from semsearch.filters.paths import path_filter, split_path_pattern
from semsearch.filters.values import FLOAT_VALUES, read_fraction

__all__ = [
    "FLOAT_VALUES",
    "MAX_FILTER_DEPTH",
    "MAX_FILTER_LEAVES",
    "NOTHING",
    "OPERATORS",
    "And",
    "Compare",
    "Filter",
    "IdMatch",
    "Not",
    "Op",
    "Or",
    "conjoin",
    "parse_filter",
    "path_filter",
    "read_fraction",
    "split_path_pattern",
]
