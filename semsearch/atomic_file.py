"""Writing a derived file so that readers see the old complete file or the new one, never half."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

__all__ = ["write_atomically"]


def write_atomically(path: str, write: Callable[[str], None], unique: bool = True) -> int:
    """Call ``write(temporary path)``, then rename the temporary file onto ``path``.

    The temporary name is ``<path>.tmp-<pid>`` plus, with ``unique``, ``-<8 hex digits>`` (so
    threads of one process never share one); it is removed if ``write`` or the rename fails.
    Returns the file's size in bytes.
    Raises:
        OSError: the folder is not writable, or whatever ``write`` raises.
    """
    tmp = f"{path}.tmp-{os.getpid()}" + (f"-{uuid.uuid4().hex[:8]}" if unique else "")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return os.path.getsize(path)
