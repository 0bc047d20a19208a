"""Embedding models behind one protocol: local model folders (ONNX Runtime, or torch), API providers, a test fake.

What lives here, by job:

- ``base.py``: the :class:`~semsearch.embedders.base.Embedder` protocol and ``BaseEmbedder``,
  which batches, checks and unit-normalises every provider's output (float32[n, dim]);
- ``registry.py``: :func:`~semsearch.embedders.registry.resolve_embedder`, a spec string
  (``local:…``, ``fake:32``, ``openai:…``) to an embedder; it sits above every provider;
- local models: ``local.py`` (a model folder; ONNX engine in ``onnx/``, torch in
  ``torch_engine.py``), ``model_folder.py`` (what a folder says about itself, read without
  torch), ``catalog.py`` (the models and ONNX cache this machine has), ``prompts.py`` (query and
  document prefixes), ``thresholds.py`` (the default ``min_score`` per model);
- API providers: ``remote.py`` (their shared half: spec options, keys, request planning),
  ``retry.py`` (timeouts, backoff, Retry-After), ``openai_provider.py``, ``azure_openai.py``,
  ``gemini.py``, ``ollama.py``;
- ``fake.py``: a deterministic fake for plumbing tests (never for tests about meaning);
- ``query_cache.py``: an LRU cache of query embeddings for long-running processes;
- ``cached.py``: another index's chunk vectors reused by text (``semsearch eval --location``).

Who may import it: everything above the foundation layer (docs/architecture.md). It imports
only the foundation (errors, processes): never a store, the engine or a face.
"""
