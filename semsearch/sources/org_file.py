"""Org-mode (.org) files of a folder as records: headings as breadcrumbs, property drawers as
fields, file line numbers.

No well-kept org parser is installable here, and the part needed is small, so it is read by
this module, line by line, keeping every line in its place (so a chunk's ``line_start`` and
``line_end`` are the file's lines):

- a heading (``*``, ``**``, ... then a space) becomes a markdown heading of that level
  (deeper than 6: level 6), without its TODO keyword, priority cookie and ``:tags:``, so the
  markdown chunker gives chunks their heading path;
- a property drawer (``:PROPERTIES:`` ... ``:END:``) becomes fields: ``:Key: value`` is the
  field ``key`` (lower case; ``id`` is ``org_id``, since ``id`` is the record's). The first
  value of a key wins. Its lines are left blank in the text;
- ``#+TITLE:`` is the title (else the first level-1 heading, else the file name);
  ``#+AUTHOR:``, ``#+DATE:`` and ``#+FILETAGS:`` are fields (``filetags`` a list); those
  lines and comment lines (``# ...``) are left blank;
- any other line is kept as it is; one that markdown would read as a heading or a setext
  underline gets a backslash in front.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["org_record"]

_HEADING = re.compile(r"^(\*+)[ \t]+(.*?)[ \t]*$")
_TODO = re.compile(r"^(?:TODO|DONE|NEXT|WAITING|HOLD|CANCELLED|CANCELED)\b[ \t]*")
_PRIORITY = re.compile(r"^\[#[A-Za-z0-9]\][ \t]*")
_TAGS = re.compile(r"[ \t]+:[\w@#%:]+:$")
_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*?)[ \t]*$")
_PROPERTY = re.compile(r"^[ \t]*:([^:\s]+?)\+?:(?:[ \t]+(.*?))?[ \t]*$")
_DRAWER_START = re.compile(r"^[ \t]*:PROPERTIES:[ \t]*$", re.I)
_DRAWER_END = re.compile(r"^[ \t]*:END:[ \t]*$", re.I)
_COMMENT = re.compile(r"^[ \t]*#(?:[ \t]|$)")
_MARKDOWN_STRUCTURE = re.compile(r"^(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$)")
_FIELD_KEYWORDS = {"author": "author", "date": "date", "filetags": "filetags"}
_RESERVED = frozenset({"id", "text", "path", "title", "folder", "modified", "body_line"})


def _heading(stars: str, rest: str) -> tuple[int, str]:
    """(level, title) of an org heading: TODO keyword, priority and tags removed."""
    title = _TAGS.sub("", _PRIORITY.sub("", _TODO.sub("", rest)))
    return len(stars), title.strip()


def org_record(raw: str, rel: str) -> dict[str, Any]:
    """The record fields of one org file: ``text`` (markdown, line for line), ``title``,
    ``body_line`` and the fields of its property drawers and keywords.

    Args:
        raw: the file's text (decoded; a BOM already removed).
        rel: its path relative to the folder (the title falls back to its stem).
    """
    lines = raw.split("\n")
    out: list[str] = []
    fields: dict[str, Any] = {}
    title, h1, in_drawer = "", "", False
    for line in lines:
        bare = line.rstrip("\r")
        heading = _HEADING.match(bare)
        keyword = _KEYWORD.match(bare)
        if in_drawer:
            in_drawer = not _DRAWER_END.match(bare)
            prop = _PROPERTY.match(bare) if in_drawer else None
            if prop:
                key = prop.group(1).lower()
                key = "org_id" if key == "id" else key
                if key not in _RESERVED:
                    fields.setdefault(key, prop.group(2) or "")
            out.append("")
        elif _DRAWER_START.match(bare):
            in_drawer = True
            out.append("")
        elif heading:
            level, text = _heading(*heading.groups())
            h1 = h1 or (text if level == 1 else "")
            out.append("#" * min(level, 6) + " " + text)
        elif keyword and keyword.group(1).lower() in ("title", *_FIELD_KEYWORDS):
            name, value = keyword.group(1).lower(), keyword.group(2)
            if name == "title":
                title = title or value
            elif name == "filetags":
                fields.setdefault("filetags", [t for t in value.split(":") if t.strip()])
            else:
                fields.setdefault(name, value)
            out.append("")
        elif _COMMENT.match(bare):
            out.append("")
        else:
            out.append("\\" + bare if _MARKDOWN_STRUCTURE.match(bare) else bare)
    text = "\n".join(out)
    # the record's text is stripped (schema.render), so its first line is the first non-blank
    body_line = 1 + text[: len(text) - len(text.lstrip())].count("\n")
    return {**fields, "text": text, "title": title or h1 or Path(rel).stem, "body_line": body_line}
