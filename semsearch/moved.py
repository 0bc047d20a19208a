"""Old import paths of names that moved to another module (docs/architecture.md, "Paths that moved").

A package or module that lost names to a new home sets ``__getattr__ = forward(__name__, {...})``
(PEP 562): the old ``from <old path> import <name>`` finds the name in its new module on first
use. The new module is looked up by name at that moment, so the old path adds no import edge
(tests/unit/test_import_rules.py) and loads nothing until the old name is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module

__all__ = ["forward"]


def forward(module: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for ``module`` that forwards each name to its new home.

    Args:
        module: the old module's ``__name__`` (for the error message).
        homes: name -> dotted path of the module that now defines it.
    Returns:
        ``__getattr__(name)``: the name's value from its home; AttributeError for any other name.
    """

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(import_module(home), name)

    return __getattr__
