"""``/v1/embeddings`` serves the real local model to the real ``openai`` client: its vectors are
the model's own, and they carry meaning (a kitten is nearer a cat than a stock market is)."""

from __future__ import annotations

import numpy as np
import pytest

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.slow


def test_openai_client_embeds_with_the_local_model(make_client, minilm) -> None:
    test_client, _ = make_client(embedder=minilm)
    client = openai.OpenAI(
        api_key="local", base_url="http://localhost/v1", http_client=test_client, max_retries=0
    )
    texts = ["a small cat", "a young kitten", "the stock market fell today"]
    answer = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts)
    got = np.array([d.embedding for d in answer.data], dtype=np.float32)
    assert got.shape == (3, 384)
    np.testing.assert_allclose(got, minilm.embed_documents(texts), atol=1e-6)
    assert got[0] @ got[1] > got[0] @ got[2] + 0.2
    assert answer.model == minilm.model_id


def test_lone_surrogate_is_a_400_before_the_tokenizer_sees_it(make_client, minilm) -> None:
    test_client, _ = make_client(embedder=minilm)
    body = b'{"model": "all-MiniLM-L6-v2", "input": ["ok", "a\\ud800"]}'
    response = test_client.post(
        "/v1/embeddings", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_query"
    assert "input[1]" in error["message"] and "character 1" in error["message"]
    assert "surrogate" in error["hint"]
