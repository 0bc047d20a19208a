"""Embedding models behind one protocol: local sentence-transformers, API providers, a test fake."""
