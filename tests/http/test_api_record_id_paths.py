"""Record ids in URL paths: every id the API stores can be read and deleted by its own path.

Plumbing only: the fake embedder (``fake:32``) via the ``items_client`` fixture, on a real
SQLite file through the real app.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.http.conftest import LOST_AND_FOUND


def _path(record_id: str) -> str:
    return "/collections/items/records/" + quote(record_id, safe="/")


def test_fake_embedder_id_with_a_trailing_newline_is_not_another_record(items_client) -> None:
    client, _ = items_client
    blazer = LOST_AND_FOUND[0]["id"]  # "blazer" exists; "blazer\n" does not
    assert client.get(_path(blazer + "\n")).status_code == 404
    assert client.delete(_path(blazer + "\n")).status_code == 404
    assert client.get(_path(blazer)).json()["id"] == blazer  # the delete did not hit it


@pytest.mark.parametrize(
    "record_id", ["two\nlines", "tab\there", "ends-with-newline\n", "crlf\r\n"]
)
def test_fake_embedder_ids_with_control_characters_round_trip(items_client, record_id) -> None:
    client, _ = items_client
    record = {"id": record_id, "name": "wool gloves"}
    assert client.post("/collections/items/records", json={"records": [record]}).status_code == 200
    got = client.get(_path(record_id))
    assert got.status_code == 200
    assert got.json()["id"] == record_id
    assert client.delete(_path(record_id)).json() == {"id": record_id, "deleted": True}
    assert client.get(_path(record_id)).status_code == 404


@pytest.mark.parametrize("record_id", [".", "..", "a/../blazer", "./blazer", "shelf/."])
def test_fake_embedder_ids_with_dot_segments_are_refused_before_writing(
    items_client, record_id
) -> None:
    # HTTP clients (httpx, curl, browsers) rewrite "." and ".." path segments before sending,
    # so GET/DELETE …/records/a/../blazer would reach record "blazer": such ids are refused.
    client, _ = items_client
    records = [{"id": "gloves", "name": "wool gloves"}, {"id": record_id, "name": "a hat"}]
    answer = client.post("/collections/items/records", json={"records": records})
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "invalid_record" and repr(record_id) in body["message"]
    assert "nothing was written" in body["hint"]
    assert client.get(_path("gloves")).status_code == 404
