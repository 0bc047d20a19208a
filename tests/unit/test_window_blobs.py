"""The sentence-window blob layout: one-by-one and batched decoding give the stored arrays."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.errors import StoreCorrupted
from semsearch.stores.base import WindowSet
from semsearch.stores.window_blobs import pack_windows, unpack_many, unpack_windows


def _window_set(m: int, dim: int, seed: int) -> WindowSet:
    rng = np.random.default_rng(seed)
    spans = np.array([[10 * i, 10 * i + 7] for i in range(m)], dtype=np.int32)
    return WindowSet(spans, rng.standard_normal((m, dim)).astype(np.float16))


def test_packed_blobs_are_little_endian_int32_spans_and_float16_vectors() -> None:
    ws = WindowSet(np.array([[0, 5], [6, 20]], np.int32), np.array([[1, 0], [0, -1]], np.float16))
    spans, vectors = pack_windows(ws)
    assert spans == (0).to_bytes(4, "little") + (5).to_bytes(4, "little") + (6).to_bytes(
        4, "little"
    ) + (20).to_bytes(4, "little")
    # float16 1.0 is 0x3c00, -1.0 is 0xbc00, 0.0 is 0x0000
    assert vectors == bytes.fromhex("003c0000000000bc")


def test_unpack_many_gives_each_chunk_its_own_arrays() -> None:
    sets = {7: _window_set(2, 8, 1), 3: _window_set(5, 8, 2), 11: _window_set(3, 8, 3)}
    rows = [(cid, *pack_windows(ws)) for cid, ws in sets.items()]
    out = unpack_many(rows)
    assert list(out) == [7, 3, 11]
    for cid, ws in sets.items():
        assert out[cid].spans.dtype == np.int32 and out[cid].vectors.dtype == np.float16
        np.testing.assert_array_equal(out[cid].spans, ws.spans)
        np.testing.assert_array_equal(out[cid].vectors, ws.vectors)
        # the same as decoding the row alone
        alone = unpack_windows(*pack_windows(ws))
        np.testing.assert_array_equal(out[cid].vectors, alone.vectors)


def test_unpack_many_of_no_rows_is_empty() -> None:
    assert unpack_many([]) == {}


def test_unpack_many_rejects_a_damaged_row() -> None:
    good = (1, *pack_windows(_window_set(2, 4, 1)))
    spans, vectors = pack_windows(_window_set(2, 4, 2))
    with pytest.raises(StoreCorrupted) as err:
        unpack_many([good, (2, spans[:-3], vectors)])
    assert "reindex" in err.value.hint


def test_unpack_many_rejects_rows_of_another_dimension() -> None:
    rows = [(1, *pack_windows(_window_set(2, 4, 1))), (2, *pack_windows(_window_set(2, 6, 2)))]
    with pytest.raises(StoreCorrupted) as err:
        unpack_many(rows)
    assert "dimension" in err.value.message
