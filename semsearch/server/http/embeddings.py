"""``POST /v1/embeddings``: the served model behind the OpenAI embeddings API shape.

Any tool that speaks that API (the ``openai`` client with ``base_url=http://host:port/v1``,
LangChain's ``OpenAIEmbeddings``, ...) can then embed with the local model. The shape follows
OpenAI's API reference (https://platform.openai.com/docs/api-reference/embeddings/create):
``input`` a string or a list of strings, ``model``, optional ``encoding_format`` (``float`` or
``base64``: the float32 little-endian bytes, which the ``openai`` client asks for by default)
and ``dimensions``; the answer is ``{"object": "list", "data": [{"object": "embedding",
"index": i, "embedding": [...]}], "model": ..., "usage": {"prompt_tokens", "total_tokens"}}``.

The route sits behind the same API keys (a read key), rate limits, Host/Origin guard and body
limit as every other route; its errors carry the same codes, messages and hints in OpenAI's
error shape, ``{"error": {"message", "type", "code", "param", "hint"}}``, which OpenAI clients
show: every status, the Host/Origin guard's 421 and 403 and the body limit's 413 too
(semsearch/server/error_shape.py).
Texts are embedded as documents (no query prompt), unit-normalised. A text longer than the
model's window is refused rather than cut silently, as OpenAI refuses one over its context.
"""

from __future__ import annotations

import base64
from typing import Annotated, Literal

import numpy as np
from anyio.to_thread import run_sync
from fastapi import APIRouter, Depends, Request
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from semsearch.embedders.base import Embedder
from semsearch.server.http.auth import Role, requires
from semsearch.server.http.errors import ApiError
from semsearch.server.http.models import MAX_TEXT
from semsearch.validation import SURROGATE_HINT, surrogate_at

__all__ = ["EmbeddingsIn", "EmbeddingsOut", "embeddings_router", "model_names"]

Reader = Annotated[Role, Depends(requires(Role.read))]


class EmbeddingsIn(BaseModel):
    """An OpenAI-shaped embeddings request. Unknown fields are ignored, as OpenAI-compatible
    servers do, so clients that send provider-specific extras still work."""

    model_config = ConfigDict(strict=True, extra="ignore")

    input: str | list[str] = Field(
        description="one text or a list of texts (token-id arrays are not taken)",
        examples=["a blue school blazer"],
    )
    model: str = Field(description="the served model: its id or its name, e.g. all-MiniLM-L6-v2")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, description="must equal the model's dimension")
    user: str | None = Field(default=None, description="accepted and ignored")


class EmbeddingOut(BaseModel):
    """One text's vector: float32 values, unit length (or their base64 little-endian bytes)."""

    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class UsageOut(BaseModel):
    """Tokens read, counted with the model's own tokenizer (special tokens excluded)."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingsOut(BaseModel):
    """An OpenAI-shaped embeddings answer, one entry per input in input order."""

    object: Literal["list"] = "list"
    data: list[EmbeddingOut]
    model: str
    usage: UsageOut


class OpenAIErrorDetail(BaseModel):
    """What went wrong: ``type`` and ``code`` are this server's error code (e.g.
    ``model_not_found``); ``hint`` says how to fix it."""

    message: str
    type: str
    code: str
    param: str | None = None
    hint: str | None = None


class OpenAIErrorOut(BaseModel):
    """An error in OpenAI's shape (see :mod:`semsearch.server.http.errors`)."""

    error: OpenAIErrorDetail


def model_names(model_id: str) -> set[str]:
    """The names a request may give for ``model_id``: the id, without its ``?options``, and the
    last part of its path (``sentence-transformers/all-MiniLM-L6-v2?precision=int8`` is also
    ``sentence-transformers/all-MiniLM-L6-v2`` and ``all-MiniLM-L6-v2``)."""
    bare = model_id.split("?", 1)[0]
    return {model_id, bare, bare.rsplit("/", 1)[-1], bare.rsplit(":", 1)[-1]}


def embeddings_router() -> APIRouter:
    """The ``/v1/embeddings`` route; mount with ``app.include_router(embeddings_router())``."""
    router = APIRouter(tags=["embeddings"])

    @router.post(
        "/v1/embeddings",
        response_model=EmbeddingsOut,
        responses={
            status: {"model": OpenAIErrorOut, "description": "error (OpenAI's shape)"}
            for status in (400, 401, 403, 404, 413, 422, 429, 503)
        },
    )
    async def embeddings(body: EmbeddingsIn, request: Request, role: Reader) -> EmbeddingsOut:
        """Embed texts with the served model (OpenAI's embeddings API shape; read key).

        404 ``model_not_found`` names the served model when ``model`` is another one; 400 for
        an empty text, a text over the model's window or not valid Unicode (a lone surrogate),
        too many texts, or ``dimensions`` other
        than the model's; 503 when the model cannot be loaded."""
        state = request.app.state.semsearch
        embedder: Embedder = state.served_embedder()
        texts = [body.input] if isinstance(body.input, str) else list(body.input)
        _check(body, embedder, texts, state.limits.max_batch)
        return await run_sync(_embed, embedder, texts, body, limiter=state.search_limiter)

    return router


def _check(body: EmbeddingsIn, embedder: Embedder, texts: list[str], max_batch: int) -> None:
    served = embedder.model_id
    if body.model not in model_names(served):
        raise ApiError(
            404, "model_not_found", f"model {body.model!r} is not served here; this server "
            f"serves {served!r}", f'send "model": "{served.split("?", 1)[0]}"',
        )  # fmt: skip
    if body.dimensions is not None and body.dimensions != embedder.dim:
        raise ApiError(
            400, "invalid_query", f"dimensions={body.dimensions}, but {served!r} gives "
            f"{embedder.dim}", f"leave dimensions out or send {embedder.dim}",
        )  # fmt: skip
    if not 1 <= len(texts) <= max_batch:
        raise ApiError(
            400, "invalid_query", f"input holds {len(texts)} texts; send 1 to {max_batch}",
            "split the texts into smaller requests",
        )  # fmt: skip
    for i, text in enumerate(texts):
        if not text.strip() or len(text) > MAX_TEXT:
            raise ApiError(
                400, "invalid_query", f"input[{i}] is empty or longer than {MAX_TEXT} characters",
                "send non-empty texts of at most that length",
            )  # fmt: skip
        position = surrogate_at(text)
        if position is not None:  # the tokenizer cannot read it (a TypeError, not a 400)
            raise ApiError(
                400, "invalid_query", f"input[{i}] holds a lone surrogate at character "
                f"{position}", SURROGATE_HINT,
            )  # fmt: skip


def _encode(row: NDArray[np.float32], encoding: str) -> list[float] | str:
    """A vector as floats, or as base64 of its float32 little-endian bytes."""
    if encoding == "base64":
        return base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in row]


def _embed(embedder: Embedder, texts: list[str], body: EmbeddingsIn) -> EmbeddingsOut:
    """The blocking part (tokenizing and embedding), run in a worker thread."""
    counts = [len(embedder.token_spans(t)) for t in texts]
    for i, n in enumerate(counts):
        if n > embedder.max_tokens:
            raise ApiError(
                400, "invalid_query", f"input[{i}] has {n} tokens; {embedder.model_id!r} reads "
                f"at most {embedder.max_tokens}", "split the text into shorter pieces",
            )  # fmt: skip
    vectors = embedder.embed_documents(texts)
    data = [
        EmbeddingOut(index=i, embedding=_encode(row, body.encoding_format))
        for i, row in enumerate(vectors)
    ]
    total = sum(counts)
    return EmbeddingsOut(
        data=data, model=embedder.model_id, usage=UsageOut(prompt_tokens=total, total_tokens=total)
    )
