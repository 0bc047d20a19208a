"""The sentence-window blob layout: int8 codes written, float16 blobs of older files still read,
one-by-one and batched decoding alike."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.errors import StoreCorrupted
from semsearch.stores.base import WindowSet
from semsearch.stores.window_blobs import INT8_HEADER, pack_windows, unpack_many, unpack_windows


def _unit_rows(m: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((m, dim))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _window_set(m: int, dim: int, seed: int) -> WindowSet:
    spans = np.array([[10 * i, 10 * i + 7] for i in range(m)], dtype=np.int32)
    return WindowSet(spans, _unit_rows(m, dim, seed).astype(np.float16))


def _float16_blobs(ws: WindowSet) -> tuple[bytes, bytes]:
    """The blobs as semsearch wrote them before int8 windows (format 6 and older)."""
    return ws.spans.astype("<i4").tobytes(), ws.vectors.astype("<f2").tobytes()


def test_packed_blobs_are_little_endian_int32_spans_and_int8_codes_after_a_header() -> None:
    vectors = np.array([[0.6, -0.8, 0.0], [0.0, 0.0, 1.0]], np.float16)
    spans, packed = pack_windows(WindowSet(np.array([[0, 5], [6, 20]], np.int32), vectors))
    assert spans == b"".join(n.to_bytes(4, "little") for n in (0, 5, 6, 20))
    # row 1: the largest |component| 0.8 becomes -127, 0.6 becomes 0.6 / 0.8 * 127 = 95.25 -> 95
    # row 2: 1.0 -> 127; int8 -127 is 0x81, 95 is 0x5f, 127 is 0x7f
    assert packed == INT8_HEADER + bytes([0x5F, 0x81, 0x00, 0x00, 0x00, 0x7F])
    assert len(packed) == 2 + 2 * 3  # half of float16's 2 * 2 * 3 bytes, plus the header


def test_int8_windows_move_a_query_cosine_by_the_rounding_error_only() -> None:
    """Rounding to steps of peak / 127 (peak about 0.2 at 384 dimensions) adds uniform noise
    of sd 0.2 / 127 / sqrt(12) = 4.5e-4 per component; its projection on a unit query has the
    same sd, so over 10,000 pairs no error passes about 4.5 sd (2e-3)."""
    ws = _window_set(200, 384, 1)
    back = unpack_windows(*pack_windows(ws))
    assert back.vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(back.vectors, axis=1), 1.0, atol=1e-6)
    queries = _unit_rows(50, 384, 2)
    want = queries @ ws.vectors.astype(np.float32).T
    got = queries @ back.vectors.T
    error = got - want
    assert float(np.sqrt((error**2).mean())) < 5e-4 and float(np.abs(error).max()) < 2.5e-3


def test_float16_blobs_of_older_files_read_exactly_and_mixed_with_int8_rows() -> None:
    old, new = _window_set(3, 8, 3), _window_set(2, 8, 4)
    out = unpack_many([(5, *_float16_blobs(old)), (9, *pack_windows(new))])
    assert out[5].vectors.dtype == np.float16
    np.testing.assert_array_equal(out[5].vectors, old.vectors)
    np.testing.assert_array_equal(out[5].spans, old.spans)
    np.testing.assert_array_equal(out[9].spans, new.spans)
    cosines = (out[9].vectors * new.vectors.astype(np.float32)).sum(axis=1)
    assert cosines.min() > 0.999


def test_no_float16_unit_vector_blob_starts_like_the_int8_header() -> None:
    """The header read as float16 is NaN, so an old blob is never taken for int8 codes."""
    assert np.isnan(np.frombuffer(INT8_HEADER, dtype="<f2")[0])


def test_unpack_many_gives_each_chunk_its_own_arrays() -> None:
    sets = {7: _window_set(2, 8, 1), 3: _window_set(5, 8, 2), 11: _window_set(3, 8, 3)}
    rows = [(cid, *pack_windows(ws)) for cid, ws in sets.items()]
    out = unpack_many(rows)
    assert list(out) == [7, 3, 11]
    for cid, ws in sets.items():
        assert out[cid].spans.dtype == np.int32
        np.testing.assert_array_equal(out[cid].spans, ws.spans)
        alone = unpack_windows(*pack_windows(ws))  # the same as decoding the row alone
        np.testing.assert_array_equal(out[cid].vectors, alone.vectors)


def test_unpack_many_of_no_rows_is_empty() -> None:
    assert unpack_many([]) == {}


@pytest.mark.parametrize("cut", ["spans", "codes", "header only"])
def test_unpack_many_rejects_a_damaged_row(cut: str) -> None:
    good = (1, *pack_windows(_window_set(2, 4, 1)))
    spans, vectors = pack_windows(_window_set(2, 4, 2))
    damaged = {
        "spans": (spans[:-3], vectors),
        "codes": (spans, vectors[:-1]),
        "header only": (spans, INT8_HEADER),
    }[cut]
    with pytest.raises(StoreCorrupted) as err:
        unpack_many([good, (2, *damaged)])
    assert "reindex" in err.value.hint


def test_unpack_many_rejects_rows_of_another_dimension() -> None:
    rows = [(1, *pack_windows(_window_set(2, 4, 1))), (2, *_float16_blobs(_window_set(2, 6, 2)))]
    with pytest.raises(StoreCorrupted) as err:
        unpack_many(rows)
    assert "dimension" in err.value.message
