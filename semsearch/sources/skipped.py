"""Why a file of a folder gives no record: one exception for every format.

A file that is read but gives no record (a PDF with no text layer, a .docx that is not a zip,
a format whose optional parser is not installed) is a skip *by policy*: reported in the
sync's ``skipped`` list with its reason, never an error, never an empty record, and it does
not make the index health ``degraded``.
"""

from __future__ import annotations

__all__ = ["FileSkipped", "extra_hint"]


class FileSkipped(Exception):
    """A file that gives no record: ``reason`` says why (shown in the index summary)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extra_hint(what: str, extra: str) -> str:
    """The reason for a file skipped because an optional extra is missing, with its install
    command, e.g. ``".docx support is not installed; install it with: pip install
    'semsearch[formats]'"``."""
    return f"{what} support is not installed; install it with: pip install 'semsearch[{extra}]'"
