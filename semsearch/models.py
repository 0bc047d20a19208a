"""Models from the Hugging Face Hub: pull once into the model cache, then use offline.

``pull("intfloat/e5-small-v2")`` (``semsearch models pull intfloat/e5-small-v2``) downloads
the files a sentence-transformers model needs into ``<cache>/models/<org>--<name>``
(:mod:`semsearch.embedders.model_cache`), after which ``local:intfloat/e5-small-v2`` names it
everywhere, offline. It is the only thing that downloads: searching, indexing and loading a
model never do, and a model that is not pulled gets an error naming this command.

``huggingface_hub`` does the talking (``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, ``HF_TOKEN`` and the
saved token are honoured); it is imported only here, never on the search path, and it brings no
torch. A pull:

- pins a revision: a branch or tag is resolved to its 40-hex commit once, and every file is
  asked for at that commit; the marker records it and ``semsearch models`` shows it;
- checks every file: the HEAD metadata (``X-Repo-Commit``, ETag) against the repository
  listing, and the bytes against its SHA-256 (LFS files) or Git blob id (other files);
- resumes: an interrupted file continues from the bytes already on disk;
- marks the folder finished last (an atomic write), so a killed or refused pull leaves a
  folder that is never used until a later pull finishes it;
- takes the files a sentence-transformers folder needs and leaves out the other formats of the
  same weights (ONNX, OpenVINO, TensorFlow, Flax, Rust, GGUF; ``*.bin`` when safetensors exist).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from semsearch.embedders.model_cache import (
    MARKER,
    PARTS,
    PulledFile,
    PulledModel,
    is_hub_id,
    model_dir,
    pulled_models,
    read_marker,
    write_marker,
)
from semsearch.errors import InvalidQuery, ModelPullFailed

if TYPE_CHECKING:
    from huggingface_hub.hf_api import RepoSibling

__all__ = ["PullProgress", "PulledFile", "PulledModel", "pull", "pulled_models"]

#: Receives (bytes on disk so far, total bytes of the files to pull), as the pull goes.
PullProgress = Callable[[int, int], None]
#: Other formats of the same weights, and files no engine reads.
_SKIP = (
    ".gitattributes", "onnx/*", "openvino/*", "coreml/*", "*.onnx", "*.onnx_data", "*.h5",
    "*.msgpack", "*.ot", "*.tflite", "*.gguf", "*.ckpt", "*.mlmodel", "*.pt",
)  # fmt: skip
_COMMIT_LENGTH = 40


def pull(
    hub_id: str,
    revision: str | None = None,
    *,
    token: str | bool | None = None,
    progress: PullProgress | None = None,
) -> PulledModel:
    """Download a Hub model into the model cache once, checked, so ``local:<hub_id>`` works.

    Args:
        hub_id: ``<org>/<name>``, e.g. ``"sentence-transformers/all-MiniLM-L6-v2"``.
        revision: a branch, tag or 40-hex commit (default ``"main"``); the commit it names is
            what gets pinned. Pulling a pinned commit that is already pulled needs no network.
        token: a Hub token; None uses ``HF_TOKEN`` or the saved login, False sends none.
        progress: called with (bytes on disk, total bytes) as files arrive.
    Returns:
        The finished pull (folder, pinned commit, files with sizes and digests). Files already
        present with the right digest are not downloaded again.
    Raises:
        InvalidQuery: ``hub_id`` is not ``<org>/<name>``.
        ModelPullFailed: unknown model or revision, no access, offline (``HF_HUB_OFFLINE``),
            the Hub unreachable, the cache not writable, another pull of it running, or a file
            that fails its check. The folder is then left unfinished (never used).
    """
    if not is_hub_id(hub_id):
        raise InvalidQuery(
            f"{hub_id!r} is not a Hugging Face Hub model id",
            hint="write it as <org>/<name>, e.g. sentence-transformers/all-MiniLM-L6-v2",
        )
    folder = model_dir(hub_id)
    old = read_marker(folder)
    if old is not None and revision == old.revision and _intact(old):
        if progress is not None:
            progress(old.bytes, old.bytes)
        return old  # a pinned commit already here: no network at all
    with _hub_errors(hub_id, revision, old):
        from huggingface_hub import HfApi

        endpoint = _endpoint()
        info = HfApi(endpoint=endpoint).model_info(
            hub_id, revision=revision or "main", files_metadata=True, token=token
        )
        commit = str(info.sha or "")
        files = _wanted(hub_id, info.siblings or [])
        return _fetch(hub_id, commit, revision or "main", files, endpoint, token, progress)


def _fetch(
    hub_id: str,
    commit: str,
    requested: str,
    files: list[PulledFile],
    endpoint: str,
    token: str | bool | None,
    progress: PullProgress | None,
) -> PulledModel:
    """Download what is missing, then write the marker (last)."""
    from semsearch.embedders.hub_download import fetch_file, file_matches

    if len(commit) != _COMMIT_LENGTH:
        raise ModelPullFailed(
            f"the Hub gave no commit for {hub_id}", hint="check that HF_ENDPOINT is a Hub"
        )
    folder = model_dir(hub_id)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(folder, exc) from exc
    with _only_pull(hub_id, folder):
        old = read_marker(folder)
        missing = [f for f in files if not file_matches(folder / f.name, f)]
        total = sum(f.size for f in files)
        if old is not None and old.revision == commit and not missing:
            if progress is not None:
                progress(total, total)
            return old
        (folder / MARKER).unlink(missing_ok=True)  # from here on the folder is unfinished
        done = total - sum(f.size for f in missing)

        def advance(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(done, total)

        advance(0)
        for entry in missing:
            fetch_file(hub_id, commit, entry, folder, endpoint, token, advance)
        _drop_stale(folder, old, files)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        record = PulledModel(hub_id, commit, requested, folder, endpoint, stamp, tuple(files))
        write_marker(record)
        return record


def _endpoint() -> str:
    """The Hub's address, read now (``HF_ENDPOINT``), not when huggingface_hub was imported."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT", constants.ENDPOINT).rstrip("/")


def _wanted(hub_id: str, siblings: list[RepoSibling]) -> list[PulledFile]:
    """The files to pull, with the size and digest the listing gives each."""
    names = [s.rfilename for s in siblings]
    has_safetensors = any(n.endswith(".safetensors") for n in names)
    files: list[PulledFile] = []
    for s in siblings:
        name = s.rfilename
        if any(fnmatch.fnmatch(name, p) for p in _SKIP) or (
            has_safetensors and name.endswith(".bin")
        ):
            continue
        if s.lfs is not None:
            files.append(PulledFile(name, int(s.lfs.size), str(s.lfs.sha256).lower(), None))
        elif s.size is not None and s.blob_id:
            files.append(PulledFile(name, int(s.size), None, str(s.blob_id).lower()))
        else:
            raise ModelPullFailed(
                f"the Hub listed {name} of {hub_id} without its size and digest",
                hint="check that HF_ENDPOINT is a Hub that lists file metadata",
            )
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ModelPullFailed(f"{hub_id} lists an unsafe file name {name!r}")
    if not any(f.name in ("config.json", "modules.json") for f in files):
        raise ModelPullFailed(
            f"{hub_id} has no config.json or modules.json: not a model semsearch can run",
            hint="pull a sentence-transformers or BERT-style model",
        )
    return files


def _intact(record: PulledModel) -> bool:
    """True when every file of a finished pull still has its recorded size and digest."""
    from semsearch.embedders.hub_download import file_matches

    return all(file_matches(record.folder / f.name, f) for f in record.files)


def _drop_stale(folder: Path, old: PulledModel | None, files: list[PulledFile]) -> None:
    """Remove files of an earlier revision that this one does not have, and leftover parts."""
    keep = {f.name for f in files}
    for stale in old.files if old else ():
        if stale.name not in keep:
            (folder / stale.name).unlink(missing_ok=True)
    for part in (folder / PARTS).glob("*.part"):
        part.unlink(missing_ok=True)


@contextlib.contextmanager
def _only_pull(hub_id: str, folder: Path) -> Iterator[None]:
    """Hold a lock on the folder, so two pulls of one model never write the same part."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield
        return
    (folder / PARTS).mkdir(exist_ok=True)
    with open(folder / PARTS / "lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise ModelPullFailed(
                f"another pull of {hub_id} is running", hint="wait for it to finish"
            ) from exc
        yield


@contextlib.contextmanager
def _hub_errors(hub_id: str, revision: str | None, old: PulledModel | None) -> Iterator[None]:
    """huggingface_hub's and the network's errors, as ModelPullFailed with a fix."""
    import httpx2
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        yield
    except ModelPullFailed:
        raise
    except OfflineModeIsEnabled as exc:
        have = f"; {hub_id} is already pulled at {old.revision[:12]}" if old else ""
        raise ModelPullFailed(
            f"cannot pull {hub_id}: HF_HUB_OFFLINE is set{have}",
            hint="unset HF_HUB_OFFLINE to download; a pulled model works offline as "
            f"local:{hub_id}",
        ) from exc
    except GatedRepoError as exc:
        raise _failed(f"{hub_id} is gated: accept its terms on the Hub first", exc) from exc
    except RepositoryNotFoundError as exc:
        raise _failed(f"no model {hub_id} on the Hub (or it is private)", exc) from exc
    except RevisionNotFoundError as exc:
        raise _failed(f"{hub_id} has no revision {revision!r}", exc) from exc
    except HfHubHTTPError as exc:
        raise _failed(f"the Hub refused the pull of {hub_id}: {_first_line(exc)}", exc) from exc
    except httpx2.HTTPError as exc:  # huggingface_hub's HTTP client: the network
        raise _failed(f"cannot reach the Hub for {hub_id}: {_first_line(exc)}", exc) from exc
    except OSError as exc:  # the disk, or metadata the Hub did not give (FileMetadataError)
        raise _failed(f"the pull of {hub_id} stopped: {_first_line(exc)}", exc) from exc


def _failed(message: str, exc: BaseException) -> ModelPullFailed:
    return ModelPullFailed(
        message,
        hint="check the id and revision, HF_ENDPOINT and the network; for a private or gated "
        "model set HF_TOKEN; run the pull again to resume what was downloaded",
    )


def _unwritable(folder: Path, exc: OSError) -> ModelPullFailed:
    return ModelPullFailed(
        f"cannot write the model cache in {folder}: {exc.strerror or exc}",
        hint="set SEMSEARCH_CACHE_DIR to a writable folder",
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
