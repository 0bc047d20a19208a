"""The frameworks stay optional: ``import semsearch`` and ``semsearch --help`` import neither
LangChain nor LlamaIndex (nor the async module); ``semsearch.aconnect`` loads on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("langchain_core", "llama_index", "semsearch.aio", "semsearch.integrations")


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # a printed list of str


def test_import_semsearch_loads_no_framework() -> None:
    assert _loaded("import semsearch") == []


def test_cli_help_loads_no_framework() -> None:
    code = (
        "import sys\nsys.argv = ['semsearch', '--help']\nfrom semsearch.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert _loaded(code) == []


def test_aconnect_is_a_lazy_attribute() -> None:
    assert _loaded("import semsearch\nsemsearch.aconnect") == ["semsearch.aio"]
