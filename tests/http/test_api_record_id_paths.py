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
