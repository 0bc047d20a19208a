"""The ONNX Runtime engine for local models: no torch at run time.

- :mod:`.encoder_graph` builds a BERT, XLM-RoBERTa or MPNet encoder as an ONNX graph from
  ``model.safetensors`` (:mod:`.families` says how the families differ);
- :mod:`.cache` keeps built graphs per user, keyed by the weights' hash, the precision and the
  engine version, written atomically;
- :mod:`.runtime` tokenises, batches by length, runs the graph and pools;
- :mod:`.window_tokens` maps sentence windows to tokens and builds their attention mask.

Imported only by :mod:`semsearch.embedders.local` (and the ``semsearch models`` command), and
only when a text is embedded; it imports nothing above ``semsearch.embedders``.
"""
