"""The ONNX Runtime engine for local models: no torch at run time.

- :mod:`.bert_graph` builds a BERT encoder as an ONNX graph from ``model.safetensors``;
- :mod:`.cache` keeps built graphs per user, keyed by the weights' hash, the precision and the
  engine version, written atomically;
- :mod:`.runtime` tokenises, batches by length, runs the graph and pools.

Imported only by :mod:`semsearch.embedders.local` (and the ``semsearch models`` command), and
only when a text is embedded; it imports nothing above ``semsearch.embedders``.
"""
