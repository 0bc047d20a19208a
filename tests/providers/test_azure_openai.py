"""Azure OpenAI provider against a local fake of /openai/deployments/{d}/embeddings."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from semsearch.embedders.azure_openai import DEFAULT_API_VERSION, AzureOpenAIEmbedder
from semsearch.embedders.registry import resolve_embedder
from semsearch.errors import EmbedderUnavailable
from tests.providers.conftest import AZURE_KEY
from tests.providers.servers import Action, raw_vector

pytestmark = pytest.mark.usefixtures("keys")


@pytest.fixture
def azure_env(openai_server, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", openai_server.url)
    return openai_server


def test_deployment_url_api_version_and_key_header(azure_env, policy):
    emb = AzureOpenAIEmbedder("text-embedding-ada-002", policy=policy)
    vectors = emb.embed_documents(["alpha", "beta"])

    seen = azure_env.requests[0]
    assert seen.path == "/openai/deployments/text-embedding-ada-002/embeddings"
    assert seen.query == {"api-version": [DEFAULT_API_VERSION]}
    assert seen.headers["api-key"] == AZURE_KEY
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "text-embedding-ada-002",
        "input": ["alpha", "beta"],
        "encoding_format": "float",
    }
    assert vectors.shape == (2, 1536)  # declared for a deployment named after ada-002
    np.testing.assert_allclose(vectors[1], np.asarray(raw_vector("beta", 1536)) / 3, atol=1e-6)


def test_custom_deployment_probes_dim_once(azure_env, policy):
    emb = resolve_embedder("azure-openai:my-embedder?api_version=2024-06-01")
    emb.policy = policy
    assert emb.model_id == "azure-openai:my-embedder"
    emb.embed_documents(["one"])
    emb.embed_documents(["two"])
    assert [b["input"] for b in azure_env.bodies()] == [["dimension probe"], ["one"], ["two"]]
    assert azure_env.requests[0].query["api-version"] == ["2024-06-01"]
    assert emb.dim == 1536


def test_batches_of_16(azure_env, policy):
    emb = AzureOpenAIEmbedder("text-embedding-3-small", 64, policy=policy)
    emb.embed_documents([f"t{i}" for i in range(40)])
    assert [len(b["input"]) for b in azure_env.bodies()] == [16, 16, 8]
    assert {b["dimensions"] for b in azure_env.bodies()} == {64}


def test_missing_endpoint_is_explained(openai_server, policy, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(EmbedderUnavailable, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIEmbedder("text-embedding-ada-002", policy=policy).embed_query("q")


def test_missing_key_names_the_variable(azure_env, policy, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")
    with pytest.raises(EmbedderUnavailable, match="AZURE_OPENAI_API_KEY"):
        AzureOpenAIEmbedder("text-embedding-ada-002", policy=policy).embed_query("q")


def test_404_deployment_not_retried_and_key_hidden(azure_env, policy, sleeps, caplog):
    caplog.set_level(logging.DEBUG)
    body = {"error": {"code": "DeploymentNotFound", "message": f"no deployment (key {AZURE_KEY})"}}
    azure_env.push(Action(503, {"Retry-After": "1"}, body), Action(404, body=body))
    with pytest.raises(EmbedderUnavailable, match="HTTP 404") as info:
        AzureOpenAIEmbedder("text-embedding-ada-002", policy=policy).embed_query("q")
    assert len(azure_env.requests) == 2 and sleeps == [1.0]
    assert "deployment name" in (info.value.hint or "")
    assert AZURE_KEY not in str(info.value)
    assert all(AZURE_KEY not in r.getMessage() for r in caplog.records)
