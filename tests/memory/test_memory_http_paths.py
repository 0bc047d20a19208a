"""Conversation ids in /memory URL paths (real app, real SQLite file; fake embedder: plumbing).

Every conversation the API stores can be listed and deleted by its own path; ids no URL path can
name (a ``/``, or a ``.``/``..`` segment that HTTP clients rewrite) are refused when added.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest


@pytest.fixture
def client(make_client):
    c, _ = make_client()  # local mode: the caller is user "local"
    return c


def _add(client, conversation: str, content: str):
    body = {"conversation_id": conversation, "role": "user", "content": content}
    return client.post("/memory/messages", json=body)


@pytest.mark.parametrize("conversation", ["standup", "line\nbreak", "sp ace", "..x"])
def test_fake_embedder_conversations_are_readable_and_deletable_by_path(
    client, conversation
) -> None:
    assert _add(client, conversation, "we ship on Friday").status_code == 201
    assert _add(client, "other", "keep this one").status_code == 201
    path = "/memory/conversations/" + quote(conversation, safe="")
    listed = client.get(path + "/messages")
    assert listed.status_code == 200
    assert [m["content"] for m in listed.json()] == ["we ship on Friday"]
    assert client.delete(path).json() == {"deleted": 1}
    assert client.get("/memory/stats").json()["messages"] == 1  # "other" is untouched


@pytest.mark.parametrize("conversation", ["team/standup", "..", ".", "a/..", "../x"])
def test_fake_embedder_conversation_ids_no_url_can_name_are_refused(client, conversation) -> None:
    # before: "team/standup" was stored but every GET/DELETE of it was a 404, and httpx sends
    # DELETE /memory/conversations/.. as DELETE /memory, which deletes every conversation
    answer = _add(client, conversation, "secret")
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_record"
    assert repr(conversation) in answer.json()["message"]
    assert "nothing was written" in answer.json()["hint"]
    assert client.get("/memory/stats").json()["messages"] == 0
