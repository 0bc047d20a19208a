"""Azure OpenAI embeddings through the official ``openai`` package (``azure-openai:<deployment>``).

Azure serves a model under a *deployment* name of your choosing:
``POST {endpoint}/openai/deployments/{deployment}/embeddings?api-version=...`` with header
``api-key`` and the same body and response as OpenAI's ``/v1/embeddings`` (Azure OpenAI REST
reference, "Embeddings - Create"). The request ``model`` field carries the deployment name.

Settings, all from the environment: ``AZURE_OPENAI_API_KEY`` (the key), ``AZURE_OPENAI_ENDPOINT``
(e.g. ``https://myres.openai.azure.com``) and the API version from the spec option
``api_version`` or ``OPENAI_API_VERSION`` (default :data:`DEFAULT_API_VERSION`).

A deployment's name is yours, so the spec may state the model it serves:
``azure-openai:<deployment>?model=text-embedding-ada-002``. The model then sets the default
threshold (:mod:`semsearch.embedders.thresholds`) and, for a known model, the dimension; it is
part of the model id (``azure-openai:prod?model=text-embedding-ada-002``), but stating it, or
leaving it out, on a collection built the other way is no model mismatch: the deployment makes
the vectors. A deployment named after a known model (``text-embedding-ada-002``, ...) counts as
stating it. Otherwise the dimension is probed with one request on first use, and the threshold
is a guess that searches note.
"""

from __future__ import annotations

import os
from typing import Any

from semsearch.embedders.openai_provider import (
    OPENAI_MODELS,
    OpenAIEmbedder,
    check_dimensions,
    import_openai,
)
from semsearch.embedders.remote import env_secret, int_option, parse_options
from semsearch.embedders.retry import RetryPolicy
from semsearch.errors import EmbedderUnavailable

__all__ = ["DEFAULT_API_VERSION", "AzureOpenAIEmbedder"]

#: A generally-available Azure OpenAI data-plane API version that serves embeddings.
DEFAULT_API_VERSION = "2024-10-21"


class AzureOpenAIEmbedder(OpenAIEmbedder):
    """An Azure OpenAI embedding deployment.

    Args:
        deployment: the deployment name (e.g. ``ada-002-prod``).
        dimensions: shorter output, for deployments of text-embedding-3 models.
        api_version: Azure API version; default ``OPENAI_API_VERSION`` or 2024-10-21.
        endpoint: resource endpoint; default ``AZURE_OPENAI_ENDPOINT``.
        policy: retry/timeout policy.
        model: the model the deployment serves (e.g. ``text-embedding-ada-002``), for its
            threshold and dimension; None when the deployment's name is the model's or unknown.
    Raises:
        EmbedderUnavailable: ``dimensions`` asked of a model that does not accept it.
    """

    provider = "azure-openai"
    max_batch = 16  # older Azure deployments (ada-002 version 1) accept at most 16 inputs

    def __init__(
        self,
        deployment: str,
        dimensions: int | None = None,
        *,
        api_version: str | None = None,
        endpoint: str | None = None,
        policy: RetryPolicy | None = None,
        model: str | None = None,
    ) -> None:
        self.served_model = (model or "").strip() or None  # read by declared_dim() below
        check_dimensions(self.served_model or deployment, dimensions)
        super().__init__(deployment, dimensions, policy=policy)
        if self.served_model:  # stated, it is part of the id (as dimensions is)
            self.model_id = f"{self.provider}:{deployment}?model={self.served_model}" + (
                f"&dimensions={dimensions}" if dimensions else ""
            )
        self.api_version = (
            api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_API_VERSION
        )
        self.endpoint = endpoint

    @classmethod
    def from_spec(cls, name: str) -> AzureOpenAIEmbedder:
        """Factory for ``azure-openai:<deployment>[?model=M&dimensions=N&api_version=V]``."""
        deployment, options = parse_options(
            name, ["model", "dimensions", "api_version"], "azure-openai"
        )
        return cls(
            deployment,
            int_option(options, "dimensions"),
            api_version=options.get("api_version"),
            model=options.get("model"),
        )

    def declared_dim(self) -> int | None:
        known = OPENAI_MODELS.get(self.served_model or self.model)
        return known[0] if known else None

    def secrets(self) -> list[str]:
        return [os.environ.get("AZURE_OPENAI_API_KEY", "")]

    def _make_client(self) -> Any:
        openai = import_openai()
        key = env_secret("Azure OpenAI", "AZURE_OPENAI_API_KEY")
        endpoint = self.endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT", "").strip()
        if not endpoint:
            raise EmbedderUnavailable(
                "no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT in the environment",
                hint="e.g. AZURE_OPENAI_ENDPOINT=https://<resource>.openai.azure.com",
            )
        return openai.AzureOpenAI(
            api_key=key,
            azure_endpoint=endpoint,
            api_version=self.api_version,
            timeout=self.policy.timeout,
            max_retries=0,
        )
