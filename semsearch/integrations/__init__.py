"""Adapters that let LangChain and LlamaIndex use a semsearch collection as their vector store.

- :mod:`semsearch.integrations.langchain`: ``SemsearchVectorStore``, a LangChain ``VectorStore``
  (``pip install 'semsearch[langchain]'``), and ``LangChainEmbedder``, which wraps a LangChain
  ``Embeddings`` object as a semsearch embedder with a model id.
- :mod:`semsearch.integrations.llamaindex`: ``SemsearchVectorStore``, a LlamaIndex
  ``BasePydanticVectorStore`` (``pip install 'semsearch[llamaindex]'``).
- :mod:`semsearch.integrations.metadata`: the one rule both use to turn a framework's metadata
  into a record's fields and back.

Nothing here is imported by ``import semsearch``: each adapter imports its framework when it is
imported itself, and the frameworks are optional extras.
"""
