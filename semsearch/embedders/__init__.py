"""Embedding models behind one protocol: local model folders (ONNX Runtime, or torch), API providers, a test fake."""
