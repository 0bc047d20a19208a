"""Pure helpers of the MCP service: path scrubbing, snippets, titles (no MCP, no model)."""

from __future__ import annotations

import pytest

from semsearch.errors import IndexNotFound
from semsearch.server.mcp.views import safe_message, scrub_paths, snippet, title_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no index at /home/ann/vault/notes.embed.db", "no index at notes.embed.db"),
        ("model local:/tmp/x/minilm failed", "model local:minilm failed"),
        ("no model at '/opt/m/e5'", "no model at 'e5'"),
        (r"at C:\Users\ann\n.embed.db", "at n.embed.db"),
        ("user/features/wikilinks.md", "user/features/wikilinks.md"),
        ("see http://127.0.0.1:8765/mcp now", "see http://127.0.0.1:8765/mcp now"),
        ("a / b and c/d", "a / b and c/d"),
    ],
)
def test_scrub_paths(text: str, expected: str) -> None:
    assert scrub_paths(text) == expected


def test_safe_message_scrubs_message_and_hint() -> None:
    exc = IndexNotFound("no index at /srv/a.embed.db", hint="build /srv/a.embed.db first")
    assert safe_message(exc) == "no index at a.embed.db\nhint: build a.embed.db first"


def test_snippet_cuts_at_a_word_boundary() -> None:
    text = ("word " * 200).strip()  # 999 chars
    cut, was_cut = snippet(text, 500)
    assert was_cut and len(cut) <= 501 and cut.endswith("word…")
    assert snippet("short", 500) == ("short", False)


def test_title_prefers_title_then_name_then_file_name() -> None:
    assert title_of("a/b.md", {"title": "T", "name": "N"}) == "T"
    assert title_of("fireball", {"name": "Fireball"}) == "Fireball"
    assert title_of("a/b.md", {"title": "  "}) == "b.md"
