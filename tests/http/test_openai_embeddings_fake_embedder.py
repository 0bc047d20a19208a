"""``POST /v1/embeddings`` in OpenAI's shape, called through the real ``openai`` client, behind
the same keys, rate limits and Host/Origin guard as every route.

Plumbing tests with the deterministic fake embedder (``fake:32``): the expected vectors are the
fake embedder's own ``embed_documents`` output, computed here without the server.
"""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.embedders.fake import FakeEmbedder
from semsearch.server.http.embeddings import model_names
from semsearch.server.http.state import Limits
from tests.http.conftest import KEYS, READ_KEY, auth

openai = pytest.importorskip("openai")
TEXTS = ["a navy school blazer", "a folding umbrella"]


def client_for(test_client, key: str = "unused"):  # type: ignore[no-untyped-def]
    """The real openai client, sending through the app's TestClient (an httpx.Client)."""
    return openai.OpenAI(
        api_key=key, base_url="http://localhost/v1", http_client=test_client, max_retries=0
    )


def test_openai_client_gets_the_served_models_vectors(make_client) -> None:
    test_client, _ = make_client(embedder=FakeEmbedder(dim=32))
    expected = FakeEmbedder(dim=32).embed_documents(TEXTS)
    answer = client_for(test_client).embeddings.create(model="fake:32", input=TEXTS)  # base64
    assert [d.index for d in answer.data] == [0, 1]
    got = np.array([d.embedding for d in answer.data], dtype=np.float32)
    np.testing.assert_array_equal(got, expected)
    assert answer.model == "fake:32"
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == 4 + 3  # fake: words
    floats = client_for(test_client).embeddings.create(
        model="fake:32", input=TEXTS[0], encoding_format="float"
    )
    np.testing.assert_allclose(floats.data[0].embedding, expected[0], rtol=1e-6)


def test_raw_body_has_the_documented_shape(make_client) -> None:
    test_client, _ = make_client(embedder=FakeEmbedder(dim=32))
    body = test_client.post("/v1/embeddings", json={"input": "hello", "model": "fake:32"}).json()
    assert set(body) == {"object", "data", "model", "usage"}
    assert body["object"] == "list"
    assert set(body["data"][0]) == {"object", "index", "embedding"}
    assert body["data"][0]["object"] == "embedding" and len(body["data"][0]["embedding"]) == 32
    assert body["usage"] == {"prompt_tokens": 1, "total_tokens": 1}


def test_unknown_model_is_a_404_naming_the_served_model(make_client) -> None:
    test_client, _ = make_client(embedder=FakeEmbedder(dim=32))
    with pytest.raises(openai.NotFoundError) as info:
        client_for(test_client).embeddings.create(model="text-embedding-3-small", input="hi")
    assert "text-embedding-3-small" in str(info.value) and "'fake:32'" in str(info.value)
    raw = test_client.post("/v1/embeddings", json={"input": "hi", "model": "ada"})
    assert raw.status_code == 404
    assert raw.json()["error"]["code"] == "model_not_found"  # OpenAI's error shape
    assert raw.json()["error"]["hint"] == 'send "model": "fake:32"'


def test_model_names_accept_the_id_and_its_short_name() -> None:
    names = model_names("sentence-transformers/all-MiniLM-L6-v2?precision=int8")
    assert {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"} <= names
    assert "all-MiniLM-L12-v2" not in names


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"input": "", "model": "fake:32"}, 400, "input[0] is empty"),
        ({"input": ["ok", "  "], "model": "fake:32"}, 400, "input[1] is empty"),
        ({"input": [], "model": "fake:32"}, 400, "holds 0 texts"),
        ({"input": "x " * 100, "model": "fake:32"}, 400, "has 100 tokens"),  # fake window: 64
        ({"input": "hi", "model": "fake:32", "dimensions": 16}, 400, "gives 32"),
        ({"input": [[1, 2, 3]], "model": "fake:32"}, 422, ""),  # token arrays are not taken
        ({"input": "hi"}, 422, ""),
    ],
)
def test_bad_requests_are_clear_4xx(make_client, body: dict, status: int, needle: str) -> None:
    test_client, _ = make_client(embedder=FakeEmbedder(dim=32))
    response = test_client.post("/v1/embeddings", json=body)
    assert response.status_code == status, response.text
    assert needle in response.text


def test_same_keys_rate_limit_and_host_guard(make_client) -> None:
    test_client, _ = make_client(
        keys=KEYS, embedder=FakeEmbedder(dim=32), limits=Limits(rate_per_minute=1, rate_burst=2)
    )
    body = {"input": "hi", "model": "fake:32"}
    assert test_client.post("/v1/embeddings", json=body).status_code == 401
    with pytest.raises(openai.AuthenticationError):
        client_for(test_client, "not-a-key").embeddings.create(**body)
    assert client_for(test_client, READ_KEY).embeddings.create(**body).data  # burst 1 of 2
    assert test_client.post("/v1/embeddings", json=body, headers=auth(READ_KEY)).status_code == 200
    limited = test_client.post("/v1/embeddings", json=body, headers=auth(READ_KEY))
    assert limited.status_code == 429
    rebinding = test_client.post(
        "/v1/embeddings", json=body, headers={**auth(READ_KEY), "Host": "evil.example"}
    )
    assert rebinding.status_code == 421


def assert_openai_shape(response, status: int, code: str) -> None:  # type: ignore[no-untyped-def]
    """OpenAI's error shape: one ``error`` object with ``message``, ``type`` and ``code``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"message", "type", "code"} <= set(error), error
    assert error["code"] == code and error["type"] == code and error["message"]


def test_every_error_status_of_the_route_takes_openai_shape(make_client) -> None:
    """Issue 46, item 9: the guard (421, 403) and the body limit (413) answer before any route
    handler, and used to answer in the house shape ``{error, message, hint}``."""
    test_client, _ = make_client(
        keys=KEYS, embedder=FakeEmbedder(dim=32),
        limits=Limits(max_body_bytes=200, rate_per_minute=60, rate_burst=8),
    )  # fmt: skip
    body = {"input": "hi", "model": "fake:32"}
    key = auth(READ_KEY)
    post = test_client.post
    assert_openai_shape(post("/v1/embeddings", json=body), 401, "unauthorized")
    assert_openai_shape(post("/v1/embeddings", json=body, headers={**key, "Host": "evil.example"}),
                        421, "misdirected_request")  # fmt: skip
    assert_openai_shape(post("/v1/embeddings", json=body,
                             headers={**key, "Origin": "http://evil.example"}),
                        403, "forbidden_origin")  # fmt: skip
    big = {"input": "x" * 300, "model": "fake:32"}
    assert_openai_shape(post("/v1/embeddings", json=big, headers=key), 413, "payload_too_large")
    chunked = post("/v1/embeddings", content=iter([b'{"input": "', b"x" * 300, b'"}']),
                   headers={**key, "Content-Type": "application/json"})  # fmt: skip
    assert_openai_shape(chunked, 413, "payload_too_large")
    assert_openai_shape(test_client.get("/v1/embeddings", headers=key), 405,
                        "method_not_allowed")  # fmt: skip
    assert_openai_shape(post("/v1/embeddings", json={"input": "hi"}, headers=key), 422,
                        "validation_error")  # fmt: skip
    for _ in range(8):
        post("/v1/embeddings", json=body, headers=key)
    assert_openai_shape(post("/v1/embeddings", json=body, headers=key), 429, "rate_limited")
    assert test_client.get("/health", headers={"Host": "evil.example"}).json()["error"] == (
        "misdirected_request"
    )  # other routes keep the house shape


def test_the_openai_client_reads_the_guards_message(make_client) -> None:
    test_client, _ = make_client(embedder=FakeEmbedder(dim=32), limits=Limits(max_body_bytes=200))
    with pytest.raises(openai.APIStatusError) as err:
        client_for(test_client).embeddings.create(input="x" * 300, model="fake:32")
    assert err.value.status_code == 413
    assert "larger than 200 bytes" in err.value.message
