"""The registry of embedding providers: a spec string (``local:…``, ``fake:…``) to an Embedder.

It sits above every provider module, so that ``base.py`` (which the providers import) imports
none of them. Built-in providers register on first use; API providers import their client
packages only when a text is embedded.
"""

from __future__ import annotations

from collections.abc import Callable

from semsearch.embedders.base import Embedder
from semsearch.errors import EmbedderUnavailable

__all__ = ["ProviderFactory", "register_provider", "resolve_embedder", "same_model"]

ProviderFactory = Callable[[str], Embedder]
_PROVIDERS: dict[str, ProviderFactory] = {}


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Register ``factory(name)`` for spec strings ``"<prefix>:<name>"``."""
    _PROVIDERS[prefix] = factory


def resolve_embedder(spec: str | Embedder | None) -> Embedder:
    """Turn a spec string into an Embedder (nothing is loaded until the first text is embedded).

    Args:
        spec: an Embedder (returned as is); ``None`` for the default (``SEMSEARCH_MODEL`` or the
            packaged all-MiniLM-L6-v2); ``"local:<path-or-name>"``, ``"fake:<dim>"``,
            ``"openai:<model>"``, ``"azure-openai:<deployment>"``, ``"gemini:<model>"``,
            ``"ollama:<model>"`` (API options after ``?``, see docs/embedders.md); a bare
            path or model name means ``local:`` when it names the packaged model, an
            existing folder or a Hub id in the model cache (``semsearch models pull``).
    Raises:
        EmbedderUnavailable: unknown provider prefix, or a bare spec that is neither the
            packaged model's name nor an existing folder (e.g. a typo in SEMSEARCH_MODEL).
    """
    if spec is not None and not isinstance(spec, str):
        return spec
    _ensure_builtin_providers()
    if spec is None:
        from semsearch.embedders.local import default_model_spec

        spec = default_model_spec()
    prefix, sep, name = spec.partition(":")
    if sep and prefix in _PROVIDERS:
        try:
            return _PROVIDERS[prefix](name)
        except (ValueError, TypeError) as exc:
            raise EmbedderUnavailable(
                f"bad embedder spec {spec!r}: {exc}",
                hint="e.g. 'local:all-MiniLM-L6-v2', 'fake:32', 'openai:text-embedding-3-small'",
            ) from exc
    if sep and len(prefix) > 1 and "/" not in prefix and "\\" not in prefix:
        raise EmbedderUnavailable(
            f"unknown embedding provider {prefix!r} in {spec!r}",
            hint=f"use one of: {', '.join(sorted(_PROVIDERS))} (e.g. 'local:all-MiniLM-L6-v2')",
        )
    from semsearch.embedders.local import names_a_model

    if not names_a_model(spec):
        slot = {"fake": "<dim>", "local": "<model folder>", "azure-openai": "<deployment>"}
        forms = ", ".join(f"'{p}:{slot.get(p, '<model>')}'" for p in sorted(_PROVIDERS))
        raise EmbedderUnavailable(
            f"unknown model {spec!r}: not a provider spec, the packaged model's name, "
            "or an existing model folder",
            hint=f"accepted forms: {forms}, the path of a sentence-transformers model folder, or "
            "a Hub id pulled with `semsearch models pull <org>/<name>`; unset SEMSEARCH_MODEL "
            "for the packaged all-MiniLM-L6-v2",
        )
    return _PROVIDERS["local"](spec)


def same_model(stored: str, given: str) -> bool:
    """True when two model ids make the same vectors: equal, or equal but for a ``model=``
    option, which states what an API deployment serves (for its threshold) without changing
    it (``azure-openai:prod`` and ``azure-openai:prod?model=text-embedding-ada-002``)."""
    return stored == given or _without_model_option(stored) == _without_model_option(given)


def _without_model_option(model_id: str) -> tuple[str, frozenset[tuple[str, str]]]:
    from urllib.parse import parse_qsl

    base, _, query = model_id.partition("?")
    options = frozenset((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "model")
    return base, options


def _ensure_builtin_providers() -> None:
    if "local" in _PROVIDERS:
        return
    from semsearch.embedders import fake, local

    register_provider("local", local.LocalEmbedder.from_spec)
    register_provider("fake", fake.FakeEmbedder.from_spec)
    _register_api_providers()


def _register_api_providers() -> None:
    """API providers; their client packages are imported only when a text is embedded."""

    def lazy(module: str, cls: str) -> ProviderFactory:
        def factory(name: str) -> Embedder:
            import importlib

            made: Embedder = getattr(importlib.import_module(module), cls).from_spec(name)
            return made

        return factory

    package = "semsearch.embedders"
    register_provider("openai", lazy(f"{package}.openai_provider", "OpenAIEmbedder"))
    register_provider("azure-openai", lazy(f"{package}.azure_openai", "AzureOpenAIEmbedder"))
    register_provider("gemini", lazy(f"{package}.gemini", "GeminiEmbedder"))
    register_provider("ollama", lazy(f"{package}.ollama", "OllamaEmbedder"))
