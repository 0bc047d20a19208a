"""Per-key request rate limit of ``semsearch serve`` (issue 19, item 4): a token bucket per API
key; over it, 429 ``rate_limited`` with ``Retry-After`` in the API's error shape. Off in local
mode (no keys) unless asked for. Before, one client could keep the model busy for everyone.

The real app on a real SQLite file (TestClient), and ``semsearch serve`` as a process over a
real socket for the options; fake embedder (plumbing). The bucket's own arithmetic runs on a
hand-driven clock, so its expected waits are exact.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

import pytest

from semsearch.errors import InvalidQuery
from semsearch.server.http.rate import RateLimiter, TokenBucket
from semsearch.server.http.state import Limits
from tests.http.conftest import ADMIN_KEY, KEYS, READ_KEY, WRITE_KEY, auth


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_grants_a_burst_then_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=1.0, capacity=3, clock=clock)  # 60 per minute, bursts of 3
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(1.0)  # empty: one token in 1 s
    clock.now += 0.5
    assert bucket.take() == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.take() == 0.0
    clock.now += 10  # refills up to the capacity, not beyond
    assert [bucket.take() for _ in range(4)][:3] == [0.0, 0.0, 0.0]


def test_limiter_keeps_one_bucket_per_caller_and_zero_is_off() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=30, burst=1, clock=clock)  # one request per 2 s
    assert limiter.retry_after("a") == 0.0
    assert limiter.retry_after("a") == pytest.approx(2.0)
    assert limiter.retry_after("b") == 0.0  # another key has its own bucket
    off = RateLimiter(per_minute=0)
    assert not off.enabled and all(off.retry_after("a") == 0.0 for _ in range(1000))
    with pytest.raises(InvalidQuery):  # a SemsearchError with a hint (issue 46)
        RateLimiter(per_minute=-1)


SEARCH = {"query": "owl", "mode": "keyword"}


def _search(client, key: str | None = None):
    return client.post("/collections/notes/search", json=SEARCH, headers=auth(key) if key else {})


@pytest.fixture
def keyed(make_client):
    client, _ = make_client(keys=KEYS, limits=Limits(rate_per_minute=60, rate_burst=2))
    made = client.post("/collections", json={"name": "notes"}, headers=auth(ADMIN_KEY))
    assert made.status_code == 201
    return client


def test_a_key_over_its_limit_gets_429_with_retry_after(keyed) -> None:
    assert [_search(keyed, READ_KEY).status_code for _ in range(2)] == [200, 200]
    over = _search(keyed, READ_KEY)
    assert over.status_code == 429
    assert over.headers["Retry-After"] == "1"  # 60 per minute: the next token in at most 1 s
    body = over.json()
    assert set(body) == {"error", "message", "hint"} and body["error"] == "rate_limited"
    assert "60 per minute" in body["message"] and "Retry-After" in body["hint"]
    assert _search(keyed, WRITE_KEY).status_code == 200  # other keys are not held back
    record = {"records": [{"id": "x", "text": "an owl"}]}
    writes = [keyed.post("/collections/notes/records", json=record, headers=auth(WRITE_KEY))
              for _ in range(2)]  # fmt: skip
    assert [w.status_code for w in writes] == [200, 429]  # writes count too
    time.sleep(1.05)
    assert _search(keyed, READ_KEY).status_code == 200


def test_unknown_keys_get_401_not_429(keyed) -> None:
    assert [_search(keyed, "not-a-key-0123456789").status_code for _ in range(4)] == [401] * 4


def test_keys_are_limited_by_default(make_client) -> None:
    _, state = make_client(keys=KEYS)
    assert state.rate.enabled and state.rate.per_minute == 600 and state.rate.burst == 60


def test_local_mode_is_not_limited_unless_asked(make_client) -> None:
    client, state = make_client()
    client.post("/collections", json={"name": "notes"})
    assert not state.rate.enabled
    assert {_search(client).status_code for _ in range(80)} == {200}
    asked, _ = make_client(limits=Limits(rate_per_minute=60, rate_burst=1), name="b.embed.db")
    asked.post("/collections", json={"name": "notes"})  # the creation takes the one token
    refused = _search(asked)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"


def test_serve_takes_the_limit_from_its_options_over_a_real_socket(tmp_path) -> None:
    from tests.http.test_host_origin import _free_port, _start

    index = tmp_path / "r.embed.db"
    keys = tmp_path / "keys"
    keys.write_text(f"{READ_KEY}:read\n{ADMIN_KEY}:admin\n")
    os.chmod(keys, 0o600)
    port = _free_port()
    proc = _start(["serve", "--index", str(index), "--keys-file", str(keys),
                   "--rate-burst", "2"], port, tmp_path / "log.txt",
                  SEMSEARCH_RATE_LIMIT="6")  # fmt: skip
    try:
        statuses, retry = [], None
        for _ in range(3):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/collections", headers={"X-API-Key": READ_KEY}
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    statuses.append(response.status)
            except urllib.error.HTTPError as exc:
                statuses.append(exc.code)
                retry = exc.headers["Retry-After"]
                assert json.loads(exc.read())["error"] == "rate_limited"
        assert statuses == [200, 200, 429]
        assert retry == "10"  # 6 per minute: one request per 10 s
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- issue 46, item 7: "inf", tiny limits, and Retry-After ------------------------------------


def test_an_infinite_limit_means_no_limit_and_tiny_ones_are_refused() -> None:
    unlimited = RateLimiter(per_minute=float("inf"), burst=1)
    assert not unlimited.enabled and all(unlimited.retry_after("a") == 0.0 for _ in range(100))
    for bad in (1e-9, float("nan"), -1.0):
        with pytest.raises(InvalidQuery) as err:
            RateLimiter(per_minute=bad)
        assert err.value.hint and "one a day" in err.value.hint
    daily = RateLimiter(per_minute=1 / 1440, burst=1)  # the smallest limit taken: one a day
    assert daily.enabled


def test_retry_after_at_one_request_a_day_is_one_day(make_client) -> None:
    client, _ = make_client(limits=Limits(rate_per_minute=1 / 1440, rate_burst=1))
    client.post("/collections", json={"name": "notes"})  # takes the day's one request
    refused = _search(client)
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "86400"
    assert "0.000694444 per minute" in refused.json()["message"]


@pytest.mark.parametrize("value", ["1e-9", "0.0001"])
def test_serve_refuses_a_limit_under_one_a_day_with_a_hint(tmp_path, value: str) -> None:
    import subprocess

    from tests.http.test_serve_cli import _env, _serve
    from tests.web.conftest import free_port

    index = tmp_path / "x.embed.db"
    proc = _serve("--index", str(index), "--port", str(free_port()), "--rate-limit", value,
                  env=_env())  # fmt: skip
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # it served with that limit
        proc.kill()
        proc.communicate()
        raise AssertionError(f"serve started with --rate-limit {value}") from None
    assert proc.returncode == 4, err  # bad input (docs/cli.md), not 70 "a bug"
    assert "rate limit" in err and "one a day" in err
    assert "internal error" not in err and "Traceback" not in err
    assert not index.exists()


def test_serve_takes_inf_from_the_environment_as_no_limit(tmp_path) -> None:
    from tests.http.test_host_origin import _free_port, _start

    keys = tmp_path / "keys"
    keys.write_text(f"{READ_KEY}:read\n")
    os.chmod(keys, 0o600)
    port = _free_port()
    proc = _start(["serve", "--index", str(tmp_path / "r.embed.db"), "--keys-file", str(keys),
                   "--rate-burst", "1"], port, tmp_path / "log.txt",
                  SEMSEARCH_RATE_LIMIT="inf")  # fmt: skip
    try:
        statuses = []
        for _ in range(5):  # a limit would refuse all but the first (bursts of 1)
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/collections", headers={"X-API-Key": READ_KEY}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                statuses.append(response.status)
        assert statuses == [200] * 5
    finally:
        proc.terminate()
        proc.wait(timeout=30)
