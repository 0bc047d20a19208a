"""The house rule, read from the code's imports: layers, no circles, independent backends.

This is the import-linter idea (layers, independence and no-cycle contracts) in one file, so the
rule needs no extra tool. docs/architecture.md draws the same layers for people. Every import
counts, at the top of a module or inside a function, under ``TYPE_CHECKING`` or not: a lazy
import is still a dependency. One kind is exempt: an import inside a module-level
``__getattr__``, which is how a moved name stays importable from its old path (PEP 562).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "semsearch"

#: Bottom to top. A module may import its own layer and the layers below, never one above.
#: Each entry is a module or a package prefix under ``semsearch``; the longest prefix decides.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "errors", "processes", "settings", "globs", "atomic_file", "keyword_text", "keyword_query", "fusion",
            "results", "chunking", "worker", "schema", "validation", "filters", "location", "moved",
            "progress",
        ),
    ),
    ("models", ("embedders", "rerank", "models")),
    ("storage", ("stores", "ann", "bm25")),
    (
        "engine",
        (
            "collection_parts", "health", "lifecycle", "windows", "highlight", "long_query",
            "scope", "search_request", "listing", "hits", "ingest", "search", "vector_query",
            "memory_marks",
        ),
    ),
    ("collection", ("handle", "collection_reads", "collection")),
    ("database", ("collection_options", "database", "reembed")),
    ("applications", ("memory", "sources", "evaluation", "integrations", "aio", "__init__")),
    ("faces", ("cli", "server")),
)  # fmt: skip

#: Groups that must not import one another (import-linter's "independence" contract).
INDEPENDENT: tuple[tuple[str, ...], ...] = (
    ("stores.sqlite", "stores.postgres", "stores.milvus"),
    ("ann", "bm25"),
    ("server.http", "server.mcp"),
)

#: Modules only some importers may use (the longest prefix of the imported module decides).
#: The derived caches of the SQLite file serve the SQLite store (Milvus's exact fallback uses the
#: exact scan; ``stores/ann.py`` is the old path of the cache). The top floor of each backend
#: (the store class, and SQLite's two legs) is imported only by its own package and by
#: ``database``, which opens a store from a location: so the caches below never reach it.
ALLOWED_USERS: Mapping[str, tuple[str, ...]] = {
    "bm25": ("bm25", "stores.sqlite"),
    # memory scores one user's messages with postings of those alone (memory/keyword.py);
    # the Milvus store ranks records with the same arrays (stores/milvus/keyword_index.py);
    # the PostgreSQL store scores its cached postings with their length norms and top k
    # (stores/postgres/bm25_memory.py, postings_cache.py)
    "bm25.delta": ("bm25", "stores.sqlite", "stores.milvus", "memory.keyword"),
    "bm25.postings": (
        "bm25",
        "stores.sqlite",
        "stores.milvus",
        "stores.postgres",
        "memory.keyword",
    ),
    "ann": ("ann", "stores.sqlite", "stores.ann"),
    "ann.exact": ("ann", "stores.sqlite", "stores.milvus"),
    "stores.sqlite.store": ("stores.sqlite", "database"),
    "stores.sqlite.vectors": ("stores.sqlite",),
    "stores.sqlite.keyword_leg": ("stores.sqlite",),
    "stores.postgres.store": ("stores.postgres", "database"),
    "stores.milvus.store": ("stores.milvus", "database"),
}

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    """``root/stores/sqlite/store.py`` -> ``stores.sqlite.store``; a package's ``__init__``
    keeps its package name (the top one is ``__init__``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _compat_forwards(tree: ast.Module) -> set[int]:
    """Line numbers of imports inside a module-level ``__getattr__`` (old paths of moved names)."""
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            lines |= {
                n.lineno for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom)
            }
    return lines


def imported_modules(
    tree: ast.Module, top: str, known: set[str], here: str = "__init__", package: bool = True
) -> set[str]:
    """The known modules a module's source imports (names relative to the package ``top``).

    ``here`` is the importing module's name (as :func:`module_name` gives it) and ``package``
    whether it is a package's ``__init__``: relative imports are resolved from them.
    """
    found: set[str] = set()
    skip = _compat_forwards(tree)
    for node in ast.walk(tree):
        if node.lineno in skip if isinstance(node, ast.stmt) else False:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, top, here, package)
            subs = [f"{module}.{alias.name}" for alias in node.names]
            targets = [s for s in subs if _local(s, top) in known]
            if len(targets) < len(subs):
                targets.append(module)
        for target in targets:
            if target != top and not target.startswith(top + "."):
                continue
            name = _local(target, top)
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def _absolute(node: ast.ImportFrom, top: str, here: str, package: bool) -> str:
    """The dotted module a ``from … import`` names, with a relative one (``from . import x``,
    ``from ..y import z``) resolved against the importing module."""
    if node.level == 0:
        return node.module or ""
    parts = [top] + ([] if here == "__init__" else here.split("."))
    if not package:
        parts.pop()  # a module's own package is one level up from it
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _local(dotted: str, top: str) -> str:
    return dotted[len(top) + 1 :] if dotted.startswith(top + ".") else "__init__"


def import_graph(root: Path) -> Graph:
    """Module -> the modules of the same package it imports (self-imports left out)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    graph: Graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = path.name == "__init__.py"
        graph[name] = imported_modules(tree, root.name, known, name, package) - {name}
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan 1972), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _owner(module: str, prefixes: Iterable[str]) -> str | None:
    """The longest prefix (a module or package) that ``module`` is or lies in."""
    best = None
    for prefix in prefixes:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best or ""):
            best = prefix
    return best


def layer_of(module: str) -> int | None:
    """The layer index of a module, or None when no layer names it."""
    owners = {prefix: i for i, (_, members) in enumerate(LAYERS) for prefix in members}
    owner = _owner(module, owners)
    return None if owner is None else owners[owner]


def upward_imports(graph: Graph) -> list[str]:
    """Imports from a lower layer into a higher one, as ``a -> b (layer -> layer)``."""
    bad = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            low, high = layer_of(source), layer_of(target)
            if low is not None and high is not None and high > low:
                bad.append(f"{source} -> {target} ({LAYERS[low][0]} -> {LAYERS[high][0]})")
    return bad


def crossings(graph: Graph) -> list[str]:
    """Imports between independent groups, and uses of a module by an importer not allowed to."""
    bad = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            for group in INDEPENDENT:
                mine, theirs = _owner(source, group), _owner(target, group)
                if mine and theirs and mine != theirs:
                    bad.append(f"{source} -> {target} (independent: {mine} / {theirs})")
            cache = _owner(target, ALLOWED_USERS)
            if cache and not _owner(source, ALLOWED_USERS[cache]):
                bad.append(f"{source} -> {target} (only {', '.join(ALLOWED_USERS[cache])})")
    return bad


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(PACKAGE)


def test_every_module_has_a_layer(graph: Graph) -> None:
    assert [m for m in sorted(graph) if layer_of(m) is None] == []


def test_no_import_circles(graph: Graph) -> None:
    assert circles(graph) == []


def test_lower_layers_never_import_higher_ones(graph: Graph) -> None:
    assert upward_imports(graph) == []


def test_backends_servers_and_caches_stay_apart(graph: Graph) -> None:
    assert crossings(graph) == []


def test_the_rule_finds_a_planted_circle_an_upward_import_and_a_crossing(tmp_path: Path) -> None:
    """The checks above can fail: a small package that breaks each rule once is caught."""
    root = tmp_path / "semsearch"
    files = {
        "__init__.py": "",
        "errors.py": "from semsearch import search\n",  # foundation -> engine: upward
        "stores/__init__.py": "from ..collection import Collection\n",  # storage -> collection
        "search.py": "def f():\n    from . import ingest\n",
        "ingest.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import semsearch.search\n",
        "stores/postgres.py": "from .sqlite import x\n",  # crossing, relative
        "stores/sqlite.py": "x = 1\n",
        "schema.py": "def __getattr__(name):\n    from semsearch import collection\n",  # exempt
        "collection.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    planted = import_graph(root)
    assert circles(planted) == [["ingest", "search"]]
    assert upward_imports(planted) == [
        "errors -> search (foundation -> engine)",
        "stores -> collection (storage -> collection)",
    ]
    assert crossings(planted) == [
        "stores.postgres -> stores.sqlite (independent: stores.postgres / stores.sqlite)"
    ]
    assert planted["schema"] == set()
