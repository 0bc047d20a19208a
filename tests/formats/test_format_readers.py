"""The readers' rules, file by file: what HTML keeps and drops, how org lines map to markdown
and fields, how blocks are written as markdown, and plain text line numbers. Expected values
worked out by hand from the inputs."""

from __future__ import annotations

import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.ingest import chunk_text_for
from semsearch.sources.blocks import Block, to_markdown
from semsearch.sources.formats import document_record, reader_for
from semsearch.sources.html_file import html_record, page_blocks
from semsearch.sources.org_file import org_record
from semsearch.sources.skipped import FileSkipped


def test_markdown_structure_in_text_is_escaped_and_tables_get_a_delimiter() -> None:
    blocks = [
        Block("heading", "  Title  words ", level=9),
        Block("para", "# not a heading\n---\nplain"),
        Block("row", "a | b", cells=("a|x", "b"), table=1),
        Block("row", "1 | 2", cells=("1", "2"), table=1),
        Block("row", "", cells=("", ""), table=1),
        Block("code", "x = `a` ```"),
    ]
    assert to_markdown(blocks) == (
        "###### Title words\n\n"
        "\\# not a heading\n\\---\nplain\n\n"
        "| a\\|x | b |\n| --- | --- |\n| 1 | 2 |\n\n"
        "````\nx = `a` ```\n````"
    )


def test_html_keeps_main_and_drops_scripts_navigation_and_page_chrome() -> None:
    page = (
        b"<html><head><title>T</title><script>s1</script></head><body>"
        b"<header>chrome</header><nav>menu</nav><main><article><header><h1>Head</h1></header>"
        b"<p>one<br>two</p><div hidden>secret</div><aside>side</aside>"
        b"<ul><li>i1<li>i2</ul></article></main><p>outside</p><footer>foot</footer></body></html>"
    )
    blocks, title = page_blocks(page)
    assert title == "T"
    assert [(b.kind, b.text) for b in blocks] == [
        ("heading", "Head"), ("para", "one\ntwo"), ("para", "i1"), ("para", "i2"),
    ]  # fmt: skip


def test_html_rows_without_end_tags_and_a_declared_charset() -> None:
    page = '<meta charset="latin-1"><h2>Caf\xe9</h2><table><tr><td>a<td>b<tr><td>c<td>d</table>'
    record = html_record(page.encode("latin-1"), "dir/menu.html")
    assert record == {
        "text": "## Caf\xe9\n\n| a | b |\n| --- | --- |\n| c | d |",
        "title": "menu",  # no <title>, no h1: the file name
    }


def test_html_with_only_scripts_is_skipped() -> None:
    with pytest.raises(FileSkipped, match="no text"):
        html_record(b"<script>a()</script><style>p{}</style>", "x.html")


def test_org_headings_drawers_keywords_and_lines() -> None:
    raw = (
        "\n#+title: Plan\n#+FILETAGS: :a:b:\n* DONE [#B] Goals :work:urgent:\n:PROPERTIES:\n"
        ":Owner: me\n:ID: x1\n:END:\nText\n******* Deep\n# comment\n-----\n"
        "* Next\n:PROPERTIES:\n:OWNER: you\n:END:\n"
    )
    record = org_record(raw, "plan.org")
    assert record["text"].split("\n") == [
        "", "", "", "# Goals", "", "", "", "", "Text", "###### Deep", "", "\\-----",
        "# Next", "", "", "", "",
    ]  # fmt: skip
    assert record["title"] == "Plan" and record["body_line"] == 4
    assert (record["owner"], record["org_id"], record["filetags"]) == ("me", "x1", ["a", "b"])


def test_org_title_falls_back_to_the_first_level_one_heading() -> None:
    assert org_record("** Sub\n* Top\n", "n.org")["title"] == "Top"
    assert org_record("text\n", "n.org")["title"] == "n"


def test_suffixes_pick_their_reader_in_any_case() -> None:
    assert reader_for("a/B.HTM") is not None and reader_for("a/b.md") is None
    assert reader_for("x.Docx") is not None and reader_for("notes.markdown") is None
    fields = document_record(b"\xef\xbb\xbf\n\nhello\n", "n.TXT")
    assert fields == {"text": "\n\nhello\n", "title": "n", "body_line": 3, "source_format": "txt"}


class _Coll:
    """What chunk_text_for reads: an embedder (window 5 words) and a schema's chunker."""

    class schema:
        chunker = "markdown"

    embedder = FakeEmbedder(max_tokens=5)


def test_plain_text_chunks_carry_file_lines_and_derived_text_none() -> None:
    text = "one two three\nfour\n\nfive six seven eight\nnine"
    chunks = chunk_text_for(_Coll(), text, {"source_format": "txt", "body_line": 3})  # type: ignore[arg-type]
    # paragraph 1 = lines 3-4 (4 words), paragraph 2 = lines 6-7 (5 words): one chunk each
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [
        ("one two three\nfour", 3, 4), ("five six seven eight\nnine", 6, 7),
    ]  # fmt: skip
    derived = chunk_text_for(_Coll(), "# H\n\nbody", {"source_format": "html"})  # type: ignore[arg-type]
    assert [(c.heading_path, c.line_start) for c in derived] == [(("H",), None)]
