"""Sentence windows from their chunk's own forward pass (issue 45), with the real model.

The reference for a window vector is computed here with torch (transformers' ``BertModel``,
fp32): the chunk's states entering the last layer, that layer run again with the window's
tokens attending only to themselves, the special tokens and the breadcrumb, then the mean
over those tokens. semsearch computes it in its own ONNX graph and numpy; the two must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import semsearch
from semsearch.chunking import embedding_text
from semsearch.embedders.local import LocalEmbedder
from semsearch.errors import InvalidQuery
from semsearch.reembed import reembed
from semsearch.schema import SchemaConflict
from semsearch.windows import LATE, VECTORS_OPTION, window_spans

pytestmark = pytest.mark.slow

CRUMB = ("Shed", "Tools")
CHUNK = (
    "The hammer hangs on the left wall above the bench. "
    "The spare key for the lighthouse is under the blue pot. "
    "Nails and screws are sorted by size in the tin boxes by the door."
)


def _torch_windows(embedder: LocalEmbedder, text: str, spans: list[tuple[int, int]], crumb: int):
    """Unit window vectors by the rule above, float32[len(spans), 384], with torch."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel.from_pretrained(str(embedder.path), attn_implementation="eager")
    model.eval()
    enc = embedder.tokenizer.encode(text.lower())  # the folder lower-cases; with [CLS]/[SEP]
    offsets = np.array(enc.offsets)
    special = np.array(enc.special_tokens_mask) == 1
    shared = special | (offsets[:, 0] < crumb)
    n = len(enc.ids)
    allowed = np.ones((n, n), dtype=bool)
    members = []
    for start, end in spans:
        inside = ~special & (offsets[:, 0] < end) & (offsets[:, 1] > start)
        members.append(inside)
    for inside in reversed(members):
        allowed[inside] = inside | shared
    bias = np.where(allowed, 0.0, np.finfo(np.float32).min).astype(np.float32)
    ids = torch.tensor([enc.ids])
    with torch.no_grad():
        states = model(input_ids=ids, output_hidden_states=True).hidden_states
        last = model.encoder.layer[-1](states[-2], attention_mask=torch.tensor(bias)[None, None])
        last = (last[0] if isinstance(last, tuple) else last)[0].numpy()
    rows = np.stack([last[inside | shared].mean(axis=0) for inside in members])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_window_vectors_match_a_torch_reference_of_the_local_last_layer() -> None:
    fp32 = LocalEmbedder(precision="fp32")
    text = embedding_text(CHUNK, CRUMB)
    crumb = len(text) - len(CHUNK)
    spans = [(a + crumb, b + crumb) for a, b in window_spans(CHUNK)]
    assert len(spans) == 3
    _, windows = fp32.embed_documents_late([text], [spans], [crumb])
    expected = _torch_windows(fp32, text, spans, crumb)
    assert windows[0] is not None
    cosines = (windows[0] * expected).sum(axis=1)
    assert cosines.min() >= 0.9999


def test_chunk_vectors_equal_embed_documents_and_do_not_depend_on_batch_mates(minilm) -> None:
    texts = [
        embedding_text(CHUNK, CRUMB),
        "Albendazole is used to treat lymphatic filariasis. It is cheap and widely given.",
        "One sentence only.",
    ]
    spans = [window_spans(t) for t in texts]
    together, windows = minilm.embed_documents_late(texts, spans)
    np.testing.assert_array_equal(together, minilm.embed_documents(texts))
    for i, text in enumerate(texts):  # int8 runs one text per pass: batch mates change nothing
        alone, alone_windows = minilm.embed_documents_late([text], [spans[i]])
        np.testing.assert_array_equal(alone[0], together[i])
        if spans[i]:
            np.testing.assert_array_equal(alone_windows[0], windows[i])
        else:
            assert windows[i] is None


def test_the_buried_sentence_keeps_its_own_meaning(minilm) -> None:
    """Plain late chunking (every layer global) pulls the key sentence towards the shed; the
    local last layer keeps it nearest to a question about the key."""
    text = embedding_text(CHUNK, CRUMB)
    crumb = len(text) - len(CHUNK)
    spans = [(a + crumb, b + crumb) for a, b in window_spans(CHUNK)]
    _, windows = minilm.embed_documents_late([text], [spans], [crumb])
    query = minilm.embed_query("where is the lighthouse key")
    assert windows[0] is not None
    assert int(np.argmax(windows[0] @ query)) == 1


def _stored_windows(coll: semsearch.Collection) -> dict[int, np.ndarray]:
    ids = list(coll.store.get_chunks(coll.name, list(range(1, 50))))
    return {
        c: w.vectors.astype(np.float32)
        for c, w in coll.store.window_vectors(coll.name, ids).items()
    }


def test_late_and_separate_collections_store_their_own_kind_of_windows(db, minilm) -> None:
    record = {"id": "shed", "text": CHUNK}
    late_coll = db.collection("late", embedder=minilm, window_vectors="late")
    assert late_coll.info.options[VECTORS_OPTION] == LATE
    late_coll.upsert([record])
    plain = db.collection("plain", embedder=minilm)  # the default, and any older collection
    assert VECTORS_OPTION not in plain.info.options
    plain.upsert([record])

    separate = minilm.embed_documents([CHUNK[a:b] for a, b in window_spans(CHUNK)])
    _, late = minilm.embed_documents_late([CHUNK], [window_spans(CHUNK)])
    (plain_windows,) = _stored_windows(plain).values()
    (late_windows,) = _stored_windows(late_coll).values()
    assert late[0] is not None
    assert (plain_windows * separate).sum(axis=1).min() > 0.999  # float16 storage
    assert (late_windows * late[0]).sum(axis=1).min() > 0.999
    assert (late_windows * separate).sum(axis=1).min() < 0.99  # not the same vectors


def test_the_kind_is_fixed_at_creation_and_checked(db, minilm) -> None:
    db.collection("notes", embedder=minilm)
    with pytest.raises(SchemaConflict, match="reembed --window-vectors late"):
        db.collection("notes", embedder=minilm, window_vectors="late")
    with pytest.raises(InvalidQuery, match=r"separate, late"):
        db.collection("other", embedder=minilm, window_vectors="fast")
    assert db.collections() == ["notes"]


def test_reembed_rebuilds_separate_windows_the_late_way(db, minilm) -> None:
    coll = db.collection("notes", embedder=minilm)
    coll.upsert([{"id": "shed", "text": CHUNK}, {"id": "other", "text": "Tea is brewed at 80 C."}])

    assert reembed(db, "notes", minilm).swapped is False  # same model, same kind
    report = reembed(db, "notes", window_vectors="late")

    assert report.swapped and report.records == 2
    coll = db.collection("notes", embedder=minilm)
    assert coll.info.options[VECTORS_OPTION] == LATE
    _, late = minilm.embed_documents_late([CHUNK], [window_spans(CHUNK)])
    (windows,) = _stored_windows(coll).values()
    assert late[0] is not None and (windows * late[0]).sum(axis=1).min() > 0.999
    assert coll.search("where is the lighthouse key", limit=1)[0].id == "shed"
