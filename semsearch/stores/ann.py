"""Moved: the ANN cache lives in :mod:`semsearch.ann` (docs/architecture.md).

This path stays so that code written against docs/ann.md before the move keeps working.
"""

from semsearch.ann.cache import AnnIndex, AnnState, configure_ann

__all__ = ["AnnIndex", "AnnState", "configure_ann"]
