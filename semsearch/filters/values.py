"""One comparison's value checked against its field's type, for every face and every store.

A float field also takes a fraction written as a string (``"1/4"``, as players write D&D
challenge ratings), read here once. Values no store can bind are refused here, before any
backend sees them: NaN and infinity, ints outside int64, and text holding a lone surrogate.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from semsearch.errors import InvalidFilter
from semsearch.schema import INT64_RANGE as _INT64
from semsearch.schema import Field
from semsearch.schema import short_int as _short_int

__all__ = ["FLOAT_VALUES", "read_fraction", "scalar"]

#: What a float field's filter value may be (said in the hint of a wrong one).
FLOAT_VALUES = 'a number, or a fraction such as "1/4"'
#: A fraction as players write challenge ratings ("1/4", "1/2"); a float field takes it.
_FRACTION = re.compile(r"\s*([+-]?\d{1,18})\s*/\s*(\d{1,18})\s*")


def read_fraction(value: Any) -> Any:
    """``"p/q"`` (q > 0) as the float p/q; anything else unchanged (then checked as given)."""
    match = _FRACTION.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match.group(2)) == 0:
        return value
    return float(Fraction(int(match.group(1)), int(match.group(2))))


def scalar(field: Field, value: Any) -> Any:
    """``value`` as a comparison on ``field`` uses it (a list[str] field compares one str).

    Raises:
        InvalidFilter: a value of another type, or one no store can bind (see the module).
    """
    element = "str" if field.type == "list[str]" else field.type
    if element == "float":
        value = read_fraction(value)  # the one place fractions become numbers, for every face
    ok = {
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
    }[element]
    if not ok:
        raise InvalidFilter(
            f"field {field.name!r} is {field.type}; the filter value {value!r} is "
            f"{type(value).__name__}",
            hint=f"give {'an' if element == 'int' else 'a'} {element} value"
            + (f" ({FLOAT_VALUES})" if element == "float" else ""),
        )
    if element == "str":
        _check_unicode(field, value)
    if element in ("int", "float"):
        _check_number(field, value)
    return float(value) if element == "float" else value


def _check_number(field: Field, value: int | float) -> None:
    """Raise InvalidFilter for NaN, infinity, or an int no store can bind (outside int64).

    A float compare would be wrong for equality past 2**53, so such ints are refused, not rounded.
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidFilter(
            f"the filter value for {field.name!r} is {value}, which matches nothing",
            hint="give a finite number",
        )
    if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        raise InvalidFilter(
            f"the filter value for {field.name!r} ({_short_int(value)}) is outside the 64-bit integer "
            f"range [{_INT64[0]}, {_INT64[1]}] that stored numbers use",
            hint="give a smaller number",
        )


def _check_unicode(field: Field, value: str) -> None:
    """Raise InvalidFilter for a lone surrogate, which no store can bind as UTF-8 text, or a
    NUL, which PostgreSQL cannot (refused on every store alike, as in queries)."""
    from semsearch.validation import NUL_HINT, surrogate_at

    position = surrogate_at(value)
    if position is not None:
        raise InvalidFilter(
            f"the filter value for {field.name!r} holds a lone surrogate at character {position}",
            hint="it is not valid Unicode (an unpaired \\uD800-\\uDFFF escape); remove it",
        )
    if "\x00" in value:
        raise InvalidFilter(
            f"the filter value for {field.name!r} holds a NUL character (\\x00) at character "
            f"{value.index(chr(0))}",
            hint=NUL_HINT,
        )
