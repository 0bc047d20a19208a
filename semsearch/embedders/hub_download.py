"""One file of a Hub model into the model cache: resumable, checked, moved into place whole.

Used only by :func:`semsearch.models.pull`. ``huggingface_hub`` gives the URL (``HF_ENDPOINT``),
the headers (token, user agent), the HTTP session (``HF_HUB_OFFLINE`` refuses every request)
and the file's metadata (a HEAD on ``resolve/<commit>/<file>``: ``X-Repo-Commit``, the ETag,
the size, the final location). The bytes are streamed here rather than by ``hf_hub_download``,
because in huggingface_hub 2.x that writes to a temporary name unique to each process and
deletes it on failure, so a killed download starts again from zero; here the partial file is
named by the content it must become (``.pull/<digest>.part``) and a later pull asks only for
the missing bytes (``Range: bytes=<have>-``).

A file is checked twice: its HEAD metadata must name the commit and the digest the repository
listing gave (an ETag is the Git blob id, or the SHA-256 for an LFS file), and the received
bytes must have that size and digest. Only then is it renamed to its place.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from huggingface_hub import (
    constants,
    get_hf_file_metadata,
    get_session,
    hf_hub_url,
    hf_raise_for_status,
)

# public (documented) but not re-exported for type checkers
from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

from semsearch.embedders.model_cache import PARTS, PulledFile
from semsearch.errors import ModelPullFailed

__all__ = ["fetch_file", "file_matches"]

_BLOCK = 1 << 20


def _hasher(entry: PulledFile) -> hashlib._Hash:
    """SHA-256 for an LFS file; for a Git file the blob id's SHA-1, which starts with a header."""
    if entry.sha256:
        return hashlib.sha256()
    blob = hashlib.sha1(usedforsecurity=False)
    blob.update(f"blob {entry.size}\0".encode())
    return blob


def _expected(entry: PulledFile) -> str:
    return (entry.sha256 or entry.blob_id or "").lower()


def _digest_of(path: Path, entry: PulledFile) -> tuple[hashlib._Hash, int]:
    """The running digest of a file's bytes, and how many there were."""
    digest, size = _hasher(entry), 0
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            digest.update(block)
            size += len(block)
    return digest, size


def file_matches(path: Path, entry: PulledFile) -> bool:
    """True when ``path`` holds exactly the bytes ``entry`` describes (size, then digest)."""
    if not path.is_file() or path.stat().st_size != entry.size:
        return False
    digest, _ = _digest_of(path, entry)
    return digest.hexdigest() == _expected(entry)


def fetch_file(
    hub_id: str,
    commit: str,
    entry: PulledFile,
    folder: Path,
    endpoint: str,
    token: str | bool | None,
    advance: Callable[[int], None],
) -> None:
    """Download one file of ``hub_id`` at ``commit`` to ``folder / entry.name``.

    Args:
        hub_id: ``<org>/<name>``.
        commit: the 40-hex commit the file must come from.
        entry: the file's name, size and digest from the repository listing.
        folder: the model folder; the partial file lives in ``folder/.pull``.
        endpoint: the Hub's address (``HF_ENDPOINT`` as read by the caller).
        token: a Hub token, True for the saved one, None for the default (``HF_TOKEN`` or
            the saved one), False for none.
        advance: called with each increment of bytes now on disk (resumed bytes included).
    Raises:
        ModelPullFailed: the Hub's metadata disagrees with the listing, or the bytes fail
            their size or checksum (the partial file is deleted, so the next pull starts
            this file afresh).
        huggingface_hub errors (OfflineModeIsEnabled, HfHubHTTPError, httpx2 errors): the
            caller maps them.
    """
    url = hf_hub_url(hub_id, entry.name, revision=commit, endpoint=endpoint)
    meta = get_hf_file_metadata(url, token=token, endpoint=endpoint)
    _check_metadata(hub_id, commit, entry, meta.commit_hash, meta.etag, meta.size)
    part = folder / PARTS / f"{_expected(entry)}.part"
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    if have > entry.size:
        part.unlink()
        have = 0
    digest = _hasher(entry)
    if have:
        digest, have = _digest_of(part, entry)
        advance(have)
    if have < entry.size:
        have, digest = _stream(meta.location, url, token, part, (have, digest), entry, advance)
    if have != entry.size or digest.hexdigest() != _expected(entry):
        part.unlink(missing_ok=True)
        raise ModelPullFailed(
            f"{hub_id}: {entry.name} failed its check ({have} bytes, digest "
            f"{digest.hexdigest()[:12]}..., the Hub lists {entry.size} bytes, "
            f"{_expected(entry)[:12]}...); it was deleted and the model is not usable",
            hint=f"run `semsearch models pull {hub_id}` again; if it fails the same way, the "
            "Hub or a proxy serves other bytes than it lists (check HF_ENDPOINT)",
        )
    target = folder / entry.name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, target)


def _check_metadata(
    hub_id: str,
    commit: str,
    entry: PulledFile,
    got_commit: str | None,
    etag: str | None,
    size: int | None,
) -> None:
    """The HEAD answer must name the pinned commit, and the listed digest and size."""
    problems = []
    if got_commit != commit:
        problems.append(f"commit {got_commit} instead of {commit}")
    if (etag or "").lower() != _expected(entry):
        problems.append(f"ETag {etag} instead of {_expected(entry)}")
    if size is not None and size != entry.size:
        problems.append(f"size {size} instead of {entry.size}")
    if problems:
        raise ModelPullFailed(
            f"{hub_id}: the Hub's metadata for {entry.name} disagrees with its file list: "
            + "; ".join(problems),
            hint="the repository may have changed during the pull: run the pull again",
        )


def _stream(
    location: str,
    url: str,
    token: str | bool | None,
    part: Path,
    start: tuple[int, hashlib._Hash],
    entry: PulledFile,
    advance: Callable[[int], None],
) -> tuple[int, hashlib._Hash]:
    """Append the bytes from ``start``'s size on to ``part`` (all of them if the server
    ignores the Range); returns the size of ``part`` afterwards and the digest of its bytes."""
    have, digest = start
    headers = build_hf_headers(token=token)
    headers["Accept-Encoding"] = "identity"  # the digest is of the stored bytes
    if urlparse(location).netloc != urlparse(url).netloc:
        headers.pop("authorization", None)  # a CDN's signed URL: never send the token on
    if have:
        headers["Range"] = f"bytes={have}-"
    session = get_session()
    with session.stream(
        "GET", location, headers=headers, timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT
    ) as response:
        hf_raise_for_status(response)
        mode = "ab"
        if have and response.status_code != 206:  # the whole file came: start it again
            advance(-have)
            have, mode, digest = 0, "wb", _hasher(entry)
        with part.open(mode) as handle:
            for block in response.iter_bytes(_BLOCK):
                handle.write(block)
                digest.update(block)
                have += len(block)
                advance(len(block))
            handle.flush()
            os.fsync(handle.fileno())
    return have, digest
