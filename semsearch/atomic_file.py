"""Writing a derived file so that readers see the old complete file or the new one, never half;
and removing the temporary files of writers that were killed mid-write."""

from __future__ import annotations

import glob
import os
import re
import uuid
from collections.abc import Callable

from semsearch.processes import pid_alive

__all__ = ["remove_dead_temps", "write_atomically"]

#: A temporary file's name ends ``.tmp-<pid>`` or ``.tmp-<pid>-<hex>``.
_TEMP = re.compile(r"\.tmp-(\d+)(?:-[0-9a-f]+)?$")


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


def remove_dead_temps(prefix: str) -> int:
    """Delete the temporary files ``<prefix>*.tmp-<pid>[-<hex>]`` whose writing process is gone.

    A process killed while writing (SIGKILL, a power cut) leaves its temporary file behind; it
    can never be renamed into place, so it is removed. Files of running processes (this one
    included) may be writes in progress and are left alone. Never raises: a file that cannot
    be deleted stays. Returns how many files were removed.
    """
    removed = 0
    for path in glob.glob(glob.escape(prefix) + "*.tmp-*"):
        found = _TEMP.search(path)
        if found is None or pid_alive(int(found.group(1))):
            continue
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed
