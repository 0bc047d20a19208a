"""What local models this machine has (packaged, configured, pulled from the Hub), which engine
runs each, and what is in the ONNX cache.

Behind ``semsearch models``: it lists and prepares, it never embeds a text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from semsearch.embedders.local import DEFAULT_MODEL, DEFAULT_PRECISION, LocalEmbedder
from semsearch.embedders.model_cache import is_hub_id, pulled_models, read_marker
from semsearch.errors import EmbedderUnavailable, InvalidQuery

__all__ = ["CachedGraph", "LocalModel", "local_models", "prepare"]


@dataclass(frozen=True)
class CachedGraph:
    """One precision's ONNX graph: where it is cached and whether it is built."""

    precision: str
    path: Path
    built: bool
    bytes: int


@dataclass(frozen=True)
class LocalModel:
    """One local model: its id, folder, engine (or why it has none) and cached graphs; for a
    model pulled from the Hub, the 40-hex commit its files came from (``revision``)."""

    spec: str
    model_id: str
    folder: Path | None
    engine: str | None
    problem: str | None
    default_precision: str
    graphs: list[CachedGraph] = field(default_factory=list)
    revision: str | None = None


def local_models(specs: list[str] | None = None) -> list[LocalModel]:
    """The packaged default model (at its default precision), ``specs``, then every Hub model
    in the model cache (finished pulls and unfinished ones, whose ``problem`` says so)."""
    pulled = [f"local:{hub_id}" for hub_id, _ in pulled_models()]
    wanted = [f"local:{DEFAULT_MODEL}?precision={DEFAULT_PRECISION}", *(specs or []), *pulled]
    seen: set[str] = set()
    models: list[LocalModel] = []
    for spec in wanted:
        if not spec.startswith("local:") or spec in seen:
            continue
        seen.add(spec)
        models.append(_describe(spec))
    return models


def _describe(spec: str) -> LocalModel:
    embedder = LocalEmbedder.from_spec(spec.removeprefix("local:"))
    try:
        folder = embedder.path
        engine = embedder.engine
    except EmbedderUnavailable as exc:
        return LocalModel(spec, embedder.model_id, None, None, exc.message, embedder.precision)
    record = read_marker(folder) if is_hub_id(embedder.name) else None
    graphs: list[CachedGraph] = []
    if engine == "onnx":
        from semsearch.embedders.onnx.cache import PRECISIONS, GraphSpec

        for precision in PRECISIONS:
            path = GraphSpec(embedder.folder, precision, label=embedder.label).path
            size = path.stat().st_size if path.is_file() else 0
            graphs.append(CachedGraph(precision, path, path.is_file(), size))
    revision = record.revision if record else None
    return LocalModel(
        spec, embedder.model_id, folder, engine, None, embedder.precision, graphs, revision
    )


def prepare(spec: str, precisions: list[str] | None = None, force: bool = False) -> list[Path]:
    """Build the ONNX graphs of a local model ahead of time (``semsearch models prepare``).

    Args:
        spec: a ``local:`` spec (options such as ``?precision=`` are allowed).
        precisions: which graphs to build (default: the spec's precision).
        force: rebuild even when a valid graph is cached.
    Returns:
        The cached graphs' paths.
    Raises:
        InvalidQuery: ``spec`` names another provider (``openai:...``, a typo such as
            ``bogus:1``), or a precision is not one of ``fp32``, ``int8``.
        EmbedderUnavailable: the model is missing, the ONNX engine cannot build it, or the
            cache folder is not writable.
    """
    from semsearch.embedders.onnx.cache import PRECISIONS, GraphSpec
    from semsearch.embedders.onnx.runtime import OnnxRunner

    _check_request(spec, precisions or [], PRECISIONS)
    embedder = LocalEmbedder.from_spec(spec.removeprefix("local:"))
    if embedder.engine != "onnx":
        raise EmbedderUnavailable(
            f"{spec} runs on the torch engine; there is nothing to prepare",
            hint="only models the ONNX engine builds have a cache",
        )
    paths: list[Path] = []
    for precision in precisions or [embedder.precision]:
        graph = GraphSpec(embedder.folder, precision, label=embedder.label)
        if force and graph.path.is_file():
            os.unlink(graph.path)
        runner = OnnxRunner(
            embedder.folder, embedder.path / "tokenizer.json", precision, label=embedder.label
        )
        runner.session()  # builds when missing, foreign or damaged
        paths.append(graph.path)
    return paths


def _check_request(spec: str, precisions: list[str], known: tuple[str, ...]) -> None:
    """InvalidQuery for a spec of another provider or an unknown precision (bad input, not an
    unavailable model). A prefix with a slash, or of one letter (``C:``), is part of a path."""
    prefix, sep, _ = spec.partition(":")
    if sep and prefix != "local" and len(prefix) > 1 and not {"/", "\\"} & set(prefix):
        raise InvalidQuery(
            f"{spec!r} names the provider {prefix!r}; only local: models have ONNX graphs to "
            "prepare",
            hint="e.g. semsearch models prepare local:all-MiniLM-L6-v2 (or a model folder)",
        )
    for precision in precisions:
        if precision not in known:
            raise InvalidQuery(
                f"unknown precision {precision!r}", hint=f"use one of: {', '.join(known)}"
            )
