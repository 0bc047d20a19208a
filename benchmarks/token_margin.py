"""How safe is the API providers' token estimate? Approximate vs. real subword token counts.

API embedders count tokens with ``approx_token_spans`` (runs of <=4 ASCII letters, <=3 digits,
any other non-space char) and use half the provider's window (``TOKEN_MARGIN`` = 0.5), because
OpenAI's and Gemini's tokenizers cannot be loaded offline. The estimate is safe for a text when
real_tokens / approx_tokens <= 1 / TOKEN_MARGIN = 2. The real tokenizer measured here is the
packaged all-MiniLM-L6-v2 WordPiece (30k vocabulary), a stand-in: on English prose it splits
more finely than OpenAI's cl100k BPE (100k vocabulary), so its ratios are an upper estimate
for cl100k there; it does not count whitespace runs, which BPE may (code indentation).

Prints a table and rewrites the ``token-margin`` section of docs/benchmarks.md.

    .venv/bin/python -m benchmarks.token_margin
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.report import machine_info, markdown_table, percentile, write_section
from semsearch.embedders.local import LocalEmbedder
from semsearch.embedders.remote import TOKEN_MARGIN, approx_token_spans

SECTION = "token-margin"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MIN_APPROX = 20  # ignore texts too short for a ratio to mean anything


def corpora() -> Iterator[tuple[str, list[str]]]:
    """(name, texts) for each real data set that is present."""
    scifact = DATA / "scifact" / "corpus.jsonl"
    if scifact.exists():
        rows = [json.loads(line) for line in scifact.open(encoding="utf-8")]
        yield "SciFact abstracts", [f"{r['title']}\n\n{r['text']}" for r in rows]
    vault = DATA / "vault" / "foam-docs"
    if vault.exists():
        yield "foam-docs markdown", [p.read_text(encoding="utf-8") for p in vault.rglob("*.md")]
    spells = DATA / "dnd5e_srd" / "5e-SRD-Spells.json"
    if spells.exists():
        data = json.loads(spells.read_text(encoding="utf-8"))
        yield "SRD spells", ["\n\n".join([s["name"], *s.get("desc", [])]) for s in data]
    products = DATA / "products" / "bestbuy_products.json"
    if products.exists():
        data = json.loads(products.read_text(encoding="utf-8"))
        yield "Best Buy products", [f"{p['name']}\n\n{p.get('description', '')}" for p in data]


def measure(texts: list[str], tokenizer: LocalEmbedder) -> list[object]:
    ratios = []
    approx_total = real_total = 0
    for text in texts:
        approx = len(approx_token_spans(text))
        real = len(tokenizer.token_spans(text))
        approx_total += approx
        real_total += real
        if approx >= MIN_APPROX:
            ratios.append(real / approx)
    unsafe = sum(r > 1 / TOKEN_MARGIN for r in ratios)
    return [
        len(texts),
        f"{approx_total:,}",
        f"{real_total:,}",
        f"{real_total / approx_total:.2f}",
        f"{percentile(ratios, 99):.2f}",
        f"{max(ratios):.2f}",
        unsafe,
    ]


def main() -> None:
    tokenizer = LocalEmbedder()
    start = time.perf_counter()
    rows = [[name, *measure(texts, tokenizer)] for name, texts in corpora()]
    seconds = time.perf_counter() - start
    headers = [
        "corpus", "texts", "approx tokens", "WordPiece tokens", "overall ratio",
        "p99 ratio", "max ratio", f"texts over {1 / TOKEN_MARGIN:.0f}",
    ]  # fmt: skip
    table = markdown_table(headers, rows)
    print(table)
    body = (
        "## API providers: token estimate vs. a real subword tokenizer\n\n"
        "Ratio = real (all-MiniLM-L6-v2 WordPiece) tokens / `approx_token_spans` tokens, per "
        f"text of at least {MIN_APPROX} approximate tokens. API providers fill at most "
        f"{TOKEN_MARGIN:.0%} of the real window with approximate tokens, so a text is safe "
        f"while its ratio is <= {1 / TOKEN_MARGIN:.0f}. WordPiece is a stand-in for the "
        "providers' tokenizers (which cannot be loaded offline): on English prose it splits "
        "more finely than OpenAI's cl100k.\n\n"
        f"{table}\n\n"
        f"Machine: {machine_info(('numpy', 'tokenizers'))}; {seconds:.1f} s.\n"
        "Command: `.venv/bin/python -m benchmarks.token_margin`\n"
    )
    write_section(SECTION, body)


if __name__ == "__main__":
    main()
