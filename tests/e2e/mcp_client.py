"""Drive a real `semsearch mcp` subprocess with the MCP SDK's own client, from sync tests.

The client runs in one long-lived task on a background event loop (the SDK's task groups must be
entered and left by the same task); tests submit calls to it and wait for the answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")
Job = Callable[[Client], Awaitable[Any]]

#: `python -X importtime` writes one line per imported module to stderr: "... |   torch".


def server_env(**extra: str) -> dict[str, str]:
    """The environment for the server process: offline, no inherited SEMSEARCH_* settings."""
    env = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]
    env.update(extra)
    return env


class McpProcess:
    """`python -X importtime -m semsearch.cli.app mcp ARGS` over stdio, with its stderr in a file."""

    def __init__(self, args: Sequence[str], errlog: Path, env: dict[str, str] | None = None):
        self.errlog = errlog
        argv = ["-X", "importtime", "-m", "semsearch.cli.app", "mcp", *args]
        self._params = StdioServerParameters(
            command=sys.executable, args=argv, env=env or server_env(), cwd=str(REPO)
        )
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._queue: asyncio.Queue[tuple[Job, concurrent.futures.Future[Any]] | None]
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(self._main(),), daemon=True
        )
        self._thread.start()
        self._ready.result(timeout=120)

    async def _main(self) -> None:
        self._queue = asyncio.Queue()
        try:
            with self.errlog.open("w") as err:
                async with Client(stdio_client(self._params, errlog=err)) as client:
                    self._ready.set_result(None)
                    while (item := await self._queue.get()) is not None:
                        job, future = item
                        try:
                            future.set_result(await job(client))
                        except Exception as exc:
                            future.set_exception(exc)
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, job: Job, timeout: float = 600) -> Any:
        """Run ``await job(client)`` on the client's task and return its result."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (job, future))
        return future.result(timeout=timeout)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call a tool; returns the CallToolResult (tool errors have ``is_error``)."""
        return self.run(lambda c: c.call_tool(name, arguments or {}))

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; returns its structured content."""
        result = self.call(name, arguments)
        assert not result.is_error, text_of(result)
        assert result.structured_content is not None
        # The text content carries the same JSON for clients that ignore structured content.
        assert json.loads(text_of(result)) == result.structured_content
        return result.structured_content

    def tools(self) -> dict[str, Any]:
        """The listed tools by name."""
        listed = self.run(lambda c: c.list_tools())
        return {t.name: t for t in listed.tools}

    def torch_imported(self) -> bool:
        """Whether the server process has imported torch so far (from its -X importtime log)."""
        return self.imported("torch")

    def imported(self, module: str) -> bool:
        """Whether the server process has imported top-level ``module`` (its -X importtime log)."""
        line = re.compile(rf"^import time:.*\|\s+{re.escape(module)}$", re.M)
        return bool(line.search(self.errlog.read_text(errors="replace")))

    def close(self) -> None:
        """Close the session; the SDK stops the server process."""
        self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        self._thread.join(timeout=60)


def text_of(result: CallToolResult) -> str:
    """The first text block of a tool result."""
    block = result.content[0]
    return str(getattr(block, "text", block))
