"""Token-aware chunkers for plain text and markdown.

A chunk never exceeds the embedder's token window, counted with the model's own tokenizer:
text past the window would be silently dropped by the model, so it goes into the next chunk.

What lives here, by job: ``spans.py`` (what a chunker takes and returns: :class:`Tokenizer`,
:class:`ChunkSpan`, :func:`embedding_text`), ``cutting.py`` (cutting a span to fit the window,
preferring paragraph, list-item, sentence and line boundaries: the core both chunkers share),
``text.py`` (:func:`chunk_text`, plain text) and ``markdown.py`` (:func:`chunk_markdown`, chunks
that follow the headings). Every name is importable from ``semsearch.chunking``.

It imports nothing else of semsearch (markdown-it loads on the first markdown chunk). Who may
import it: ingest, the sentence windows (``semsearch.windows``) and the stores that rebuild a
chunk's embedded text.
"""

from semsearch.chunking.cutting import SENTENCE_CUTS
from semsearch.chunking.markdown import chunk_markdown
from semsearch.chunking.spans import ChunkSpan, Tokenizer, embedding_text
from semsearch.chunking.text import chunk_text

__all__ = [
    "SENTENCE_CUTS",
    "ChunkSpan",
    "Tokenizer",
    "chunk_markdown",
    "chunk_text",
    "embedding_text",
]
