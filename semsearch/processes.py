"""Whether a process is still alive: for removing temporary files that a killed writer left."""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """True when ``pid`` is a live process on this machine, or when that cannot be told.

    Errs on "alive" (permission denied, a pid out of range), so a live writer's temporary file
    is never deleted under it.
    """
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True
