"""API keys and roles: read < write < admin; 401 without or with an unknown key, 403 below the
needed role; no keys means local mode (loopback only). Plumbing tests with the FakeEmbedder."""

from __future__ import annotations

import pytest

from semsearch.errors import SemsearchError
from semsearch.server.http.auth import KeyRing, Role, check_bind
from tests.http.conftest import ADMIN_KEY, KEYS, READ_KEY, WRITE_KEY, auth

RECORD = {"records": [{"id": "x1", "name": "lost keys", "text": "a ring of three keys"}]}

# (method, path, json body, lowest role allowed)
ROUTES = [
    ("GET", "/collections", None, Role.read),
    ("GET", "/collections/items", None, Role.read),
    ("GET", "/collections/items/stats", None, Role.read),
    ("POST", "/collections/items/search", {"query": "keys", "mode": "keyword"}, Role.read),
    ("GET", "/collections/items/records/blazer", None, Role.read),
    ("POST", "/collections/items/records", RECORD, Role.write),
    ("DELETE", "/collections/items/records/umbrella", None, Role.write),
    ("POST", "/collections/items/reindex", None, Role.admin),
    ("POST", "/collections", {"name": "new-coll"}, Role.admin),
]
KEY_OF = {Role.read: READ_KEY, Role.write: WRITE_KEY, Role.admin: ADMIN_KEY}


@pytest.fixture
def keyed(make_client):
    client, state = make_client(keys=KEYS)
    admin = auth(ADMIN_KEY)
    client.post(
        "/collections",
        json={"name": "items", "fields": {"category": "str"}, "text": ["name", "description"]},
        headers=admin,
    )
    records = [
        {"id": "blazer", "name": "navy blazer"},
        {"id": "umbrella", "name": "black umbrella"},
    ]
    assert (
        client.post(
            "/collections/items/records", json={"records": records}, headers=admin
        ).status_code
        == 200
    )
    assert state.worker.wait_idle(10)
    return client


@pytest.mark.parametrize(("method", "path", "body", "needed"), ROUTES)
def test_every_route_needs_a_key(keyed, method, path, body, needed) -> None:
    response = keyed.request(method, path, json=body)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert "Authorization" in response.json()["hint"]


@pytest.mark.parametrize(("method", "path", "body", "needed"), ROUTES)
def test_unknown_key_is_401(keyed, method, path, body, needed) -> None:
    response = keyed.request(method, path, json=body, headers=auth("not-a-real-key-123"))
    assert response.status_code == 401


@pytest.mark.parametrize(("method", "path", "body", "needed"), ROUTES)
@pytest.mark.parametrize("role", list(Role))
def test_role_matrix(keyed, method, path, body, needed, role) -> None:
    response = keyed.request(method, path, json=body, headers=auth(KEY_OF[role]))
    if role >= needed:
        assert response.status_code in (200, 201), response.text
    else:
        assert response.status_code == 403, response.text
        assert response.json()["error"] == "forbidden"
        assert needed.name in response.json()["message"]


def test_x_api_key_header_works_too(keyed) -> None:
    assert keyed.get("/collections", headers={"X-API-Key": READ_KEY}).status_code == 200


def test_health_and_page_need_no_key(keyed) -> None:
    assert keyed.get("/health").status_code == 200
    assert keyed.get("/").status_code == 200


def test_keyless_health_hides_collection_names_when_keys_are_configured(keyed) -> None:
    public = keyed.get("/health").json()
    assert public["collections"] == 1 and public["index_health"] == {}
    wrong = keyed.get("/health", headers=auth("not-a-known-key-123")).json()
    assert wrong["index_health"] == {}
    keyed_view = keyed.get("/health", headers=auth(READ_KEY)).json()
    assert list(keyed_view["index_health"]) == ["items"]


def test_vectors_only_for_admin_keys(keyed) -> None:
    path = "/collections/items/records/blazer"
    for key in (READ_KEY, WRITE_KEY):
        denied = keyed.get(path, params={"include_vectors": "true"}, headers=auth(key))
        assert denied.status_code == 403
        search = {"query": "blazer", "mode": "keyword", "include_vectors": True}
        assert (
            keyed.post("/collections/items/search", json=search, headers=auth(key)).status_code
            == 403
        )
    plain = keyed.get(path, headers=auth(READ_KEY)).json()
    assert plain["vectors"] is None
    full = keyed.get(path, params={"include_vectors": "true"}, headers=auth(ADMIN_KEY)).json()
    assert len(full["vectors"][0]) == 32
    search = {"query": "blazer", "mode": "keyword", "include_vectors": True}
    hits = keyed.post("/collections/items/search", json=search, headers=auth(ADMIN_KEY)).json()[
        "hits"
    ]
    assert hits[0]["vector"] == full["vectors"][0]


def test_search_hits_never_carry_vectors_by_default(keyed) -> None:
    body = keyed.post(
        "/collections/items/search",
        json={"query": "blazer", "mode": "hybrid"},
        headers=auth(ADMIN_KEY),
    ).json()
    assert body["hits"] and all(h["vector"] is None for h in body["hits"])


def test_keyring_parses_env_and_file_and_merges(tmp_path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("# staff\nfile-admin-key-1:admin\n\nfile-reader-key-2 : read  # kiosk\n")
    ring = KeyRing.load("env-writer-key-3:write", keys_file)
    assert ring.role_for("file-admin-key-1") is Role.admin
    assert ring.role_for("file-reader-key-2") is Role.read
    assert ring.role_for("env-writer-key-3") is Role.write
    assert ring.role_for("nope") is None
    assert not ring.empty and KeyRing.load(None, None).empty


@pytest.mark.parametrize(
    "bad",
    [
        "justakeywithoutrole",
        "long-enough-key:superuser",
        "short:read",
        "dup-key-123:read,dup-key-123:admin",
    ],
)
def test_keyring_refuses_bad_entries(bad: str) -> None:
    with pytest.raises(SemsearchError) as info:
        KeyRing.parse(bad)
    assert info.value.hint
    assert "long-enough-key" not in info.value.message  # keys are never echoed


def test_unreadable_keys_file_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(SemsearchError, match="cannot read the API keys file"):
        KeyRing.load(None, tmp_path / "missing")


def test_without_keys_only_loopback_may_be_bound() -> None:
    empty = KeyRing({})
    check_bind("127.0.0.1", empty)
    for host in ("0.0.0.0", "192.168.1.5", "::", "localhost"):
        with pytest.raises(SemsearchError, match="refusing to bind"):
            check_bind(host, empty)
    check_bind("0.0.0.0", KeyRing.parse("some-admin-key:admin"))
