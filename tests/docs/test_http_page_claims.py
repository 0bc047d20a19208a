"""What docs/http.md says about `semsearch serve` and the web page matches the code (issue 46,
item 17: the page promised a `--max-batch` option `serve` does not have, and a web-page
minimum similarity of 20 % while the page sends none and the server applies the model's 0.30).
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from semsearch.cli.app import app
from semsearch.embedders.thresholds import model_default
from semsearch.server.http.state import Limits

REPO = Path(__file__).resolve().parents[2]
HTTP_PAGE = (REPO / "docs" / "http.md").read_text(encoding="utf-8")
WEB_PAGE = (REPO / "semsearch" / "server" / "web" / "index.html").read_text(encoding="utf-8")

#: Options the page names that belong to other programs, each with where it is from.
NOT_SEMSEARCH = {
    "--no-deps": "pip, in the install line",
    "--ramp": "benchmarks/http_load.py, in the measured numbers",
}


def _options(*commands: str) -> set[str]:
    group = typer.main.get_command(app)
    found: set[str] = set()
    for name in commands:
        command = group.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            found.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("--"))
    return found


def test_every_option_the_http_page_names_exists() -> None:
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", HTTP_PAGE))
    assert "--reranker" in named  # the page does name serve's options
    exists = _options("serve", "mcp")
    missing = sorted(named - exists - set(NOT_SEMSEARCH))
    assert missing == [], f"docs/http.md names options that serve and mcp lack: {missing}"


def test_the_embeddings_batch_limit_the_page_states_is_the_servers() -> None:
    stated = re.search(r"a list of 1 to ([\d,]+) strings", HTTP_PAGE)
    assert stated is not None, "docs/http.md must state the /v1/embeddings batch limit"
    assert int(stated.group(1).replace(",", "")) == Limits().max_batch


def test_the_web_pages_minimum_similarity_default_is_the_models() -> None:
    control = re.search(r'<input id="min-score"[^>]*>', WEB_PAGE)
    assert control is not None and 'value=""' in control.group(0)  # sends none: server default
    section = HTTP_PAGE.split("## The web page", 1)[1].split("\n## ", 1)[0]
    assert "20 %" not in section
    minilm = round(model_default("sentence-transformers/all-MiniLM-L6-v2") * 100)
    assert f"{minilm} %" in section and "model's" in section
