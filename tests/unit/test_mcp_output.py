"""semsearch.server.mcp.output: the lean output schemas accept and refuse what the SDK's schemas
do, and a tool result's text is the structured content as compact JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema.validators import validator_for
from pydantic import TypeAdapter
from referencing import Registry

from semsearch.server.mcp.output import lean_schema, tool_result
from semsearch.server.mcp.tools import HitOut, RecordOut, SearchOut


def _errors(schema: dict[str, Any], doc: Any) -> int:
    validator = validator_for(schema)(schema, registry=Registry())
    return len(list(validator.iter_errors(doc)))


def _hit(**changes: Any) -> dict[str, Any]:
    hit: dict[str, Any] = {
        "id": "user/a.md", "title": "A", "score": 1.5, "text": "alpha beta", "truncated": False,
        "chunk": 0, "heading_path": ["A", "B"], "line_start": 1, "line_end": 4,
        "page_start": None, "page_end": None, "fields": {"tags": ["x"]},
        "components": {"semantic": {"score": 0.7, "rank": 1}, "keyword": {"score": None,
                       "rank": None}},
        "highlight": None,
    }  # fmt: skip
    hit.update(changes)
    return hit


def _result(*hits: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "query": "q", "collection": "notes", "mode": "hybrid", "hyde": False, "degraded": False,
        "degraded_reason": None, "min_score": 0.5, "notes": [], "query_windows": 0,
        "reranked_by": None, "count": len(hits), "hits": list(hits),
    }  # fmt: skip
    doc.update(changes)
    return doc


GOOD = [
    _result(),
    _result(_hit()),
    _result(_hit(components=None, highlight="alpha beta", page_start=3, page_end=4)),
    _result(
        _hit(chunk=None, line_start=None, line_end=None),
        min_score=None,
        degraded=True,
        degraded_reason="semantic leg failed",
    ),
    _result(_hit(components={})),
]
BAD = [
    _result(_hit(score=None)),  # a score is never null
    _result(_hit(chunk="0")),  # a chunk number, not a string
    _result(_hit(chunk=1.5)),
    _result(_hit(line_start=True)),  # a boolean is no integer in JSON Schema
    _result(_hit(heading_path=None)),
    _result(_hit(heading_path=[1])),
    _result(_hit(components=[])),
    _result(_hit(components={"semantic": {"score": "high", "rank": 1}})),
    _result(_hit(components={"semantic": {"score": 0.5}})),  # rank is required
    _result(_hit(highlight=3)),
    _result(_hit(fields=None)),
    _result(min_score="default"),
    _result(degraded_reason=0),
    _result(reranked_by=[]),
    {k: v for k, v in _result().items() if k != "hits"},
    {**_result(), "hits": [{k: v for k, v in _hit().items() if k != "id"}]},
    [],
]


@pytest.mark.parametrize(("doc", "valid"), [(d, True) for d in GOOD] + [(d, False) for d in BAD])
def test_the_lean_search_schema_judges_every_document_as_the_sdk_schema_does(
    doc: Any, valid: bool
) -> None:
    sdk = TypeAdapter(SearchOut).json_schema()
    lean = lean_schema(sdk)
    assert (_errors(sdk, doc) == 0) is valid  # the cases say what they mean
    assert (_errors(lean, doc) == 0) is valid


def test_the_lean_schema_has_no_reference_and_no_nullable_any_of() -> None:
    sdk = TypeAdapter(SearchOut).json_schema()
    text = json.dumps(lean_schema(sdk))
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text
    assert "$defs" in json.dumps(sdk)  # the input is left as it was
    hit = lean_schema(sdk)["properties"]["hits"]["items"]
    assert hit["properties"]["chunk"]["type"] == ["integer", "null"]
    assert hit["properties"]["components"]["type"] == ["object", "null"]
    assert hit["properties"]["components"]["additionalProperties"]["required"] == ["score", "rank"]
    assert hit["required"] == list(HitOut.__annotations__)


def test_the_record_schema_keeps_its_optional_chunk() -> None:
    sdk = TypeAdapter(RecordOut).json_schema()
    lean = lean_schema(sdk)
    record = {"id": "a", "collection": "notes", "title": "A", "fields": {}, "chars": 5,
              "truncated": False, "text": "alpha"}  # fmt: skip
    chunk = {"ordinal": 0, "heading_path": [], "line_start": 1, "line_end": 2,
             "page_start": None, "page_end": None}  # fmt: skip
    for doc, ok in [
        (record, True),
        ({**record, "chunk": chunk}, True),
        ({**record, "chunk": {**chunk, "ordinal": None}}, False),
        ({**record, "chars": None}, False),
    ]:
        assert (_errors(lean, doc) == 0) is ok
        assert (_errors(sdk, doc) == 0) is ok


def test_a_recursive_schema_keeps_its_references() -> None:
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {
            "child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}},
        "$ref": "#/$defs/Node",
    }  # fmt: skip
    lean = lean_schema(schema)
    assert lean["$defs"] == schema["$defs"] and lean["$ref"] == "#/$defs/Node"
    assert _errors(lean, {"child": {"child": None}}) == 0
    assert _errors(lean, {"child": {"child": 3}}) > 0
    within = {"$defs": schema["$defs"], "type": "object", "properties": {"root": schema["$defs"][
        "Node"]["properties"]["child"]}}  # fmt: skip
    assert lean_schema(within)["$defs"] == schema["$defs"]  # a cycle below the top too


def test_a_branch_with_a_keyword_for_every_type_stays_any_of() -> None:
    # enum constrains null too: {"type": ["string", "null"], "enum": ["a"]} would refuse null
    schema = {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}
    assert lean_schema(schema) == schema


def test_the_text_copy_is_the_structured_content_as_compact_json() -> None:
    view = _result(_hit(text="café “quoted” \n line"))
    result = tool_result(view)
    assert result.structured_content == view
    (block,) = result.content
    assert block.type == "text"
    assert json.loads(block.text) == view
    # no indent and no spaces after separators; non-ASCII written as it is, not as \u escapes
    assert block.text == json.dumps(view, ensure_ascii=False, separators=(",", ":"))
