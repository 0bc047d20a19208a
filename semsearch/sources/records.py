"""Records from files: a JSON array, JSON Lines, or CSV, imported into a collection.

The record id comes from ``id_field`` (a dotted path). CSV cells are strings, so declared fields
are converted by their type (``int``, ``float``, ``bool``: true/false/1/0/yes/no, ``list[str]``:
a JSON list or ``;``-separated); an empty cell is an absent value. Importing the same file twice
changes nothing and embeds nothing. An import adds and updates records but never deletes the
ones missing from the file, unless asked (:func:`delete_missing`, ``--delete-missing``).

Files must be UTF-8 (a BOM is allowed). CSV is read strictly (an unterminated quote or text
after a closing quote is an error naming the line), column names must be unique, and a cell
holds at most :data:`CSV_FIELD_LIMIT` characters (reading a CSV raises the process-wide
``csv.field_size_limit`` to at least that; it never lowers it).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from semsearch.collection import Collection
from semsearch.errors import InvalidRecord, SemsearchError
from semsearch.results import UpsertReport
from semsearch.schema import Field, Schema, resolve_path
from semsearch.validation import MAX_VALUE_DEPTH

__all__ = [
    "CSV_FIELD_LIMIT",
    "delete_missing",
    "import_file",
    "import_records",
    "load_for_import",
    "read_records",
]

BATCH = 512
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}
#: Most characters in one CSV cell (Python's csv default is 131,072): 16 Mi, above any text a
#: record should hold, below what would exhaust memory on a malformed file.
CSV_FIELD_LIMIT = 16 * 1024 * 1024


def read_records(path: str | Path, schema: Schema | None = None) -> list[dict[str, Any]]:
    """Read every record of a ``.json`` (array), ``.jsonl``/``.ndjson`` or ``.csv`` file.

    Raises:
        SemsearchError: missing file, unknown extension, malformed JSON or CSV (with line
            number; a CSV row with more cells than the header has columns is malformed).
        InvalidRecord: a CSV cell cannot be converted to its declared type.
    """
    file = Path(path)
    if file.is_dir():
        raise SemsearchError(
            f"{file.name or str(file)} is a folder, not a file",
            hint="give a .json, .jsonl or .csv file",
        )
    if not file.is_file():
        raise SemsearchError(f"no such file: {file.name}", hint="check the path")
    suffix = file.suffix.lower()
    if suffix not in (".json", ".jsonl", ".ndjson", ".csv"):
        raise SemsearchError(
            f"cannot import {file.name}: unknown file type {suffix!r}",
            hint="use a .json array, .jsonl (one object per line) or .csv file",
        )
    text = _read_text(file)
    try:
        if suffix == ".json":
            return _read_json_array(file.name, text)
        if suffix == ".csv":
            rows = enumerate(_read_csv(file.name, text), 2)
            return [_convert_csv(row, schema or Schema(), n) for n, row in rows]
        return list(_read_jsonl(file.name, text))
    except RecursionError:
        raise SemsearchError(
            f"{file.name} nests arrays or objects too deep to read",
            hint=f"record values may nest at most {MAX_VALUE_DEPTH} levels; flatten the file",
        ) from None


def _read_text(file: Path) -> str:
    """The file as text: UTF-8 with an optional BOM, or SemsearchError naming the bad byte."""
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SemsearchError(
            f"{file.name} is not UTF-8 text: byte {data[exc.start]:#04x} on line {line} "
            "cannot be decoded",
            hint=f"save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 {file.name} > new"
            f"{file.suffix})",
        ) from None


def _read_json_array(name: str, text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SemsearchError(f"{name} is not valid JSON: {exc}", hint="fix the file") from exc
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise SemsearchError(
            f"{name} must hold a JSON array of objects", hint="or use .jsonl, one per line"
        )
    return data


def _read_jsonl(name: str, text: str) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise SemsearchError(
                f"{name} line {number} is not valid JSON: {exc}", hint="fix that line"
            ) from exc
        if not isinstance(obj, dict):
            raise SemsearchError(f"{name} line {number} is not an object", hint="{...}")
        yield obj


def _read_csv(name: str, text: str) -> Iterator[dict[str, str]]:
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        names = [n for n in reader.fieldnames or () if n]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise SemsearchError(
                f"{name}: the header names column(s) {repeated} more than once",
                hint="give every column a distinct name",
            )
        for row in reader:
            if None in row:  # DictReader's key for cells past the header's columns
                raise SemsearchError(
                    f"{name}: the CSV record ending on line {reader.line_num} has "
                    f"{len(reader.fieldnames or ()) + len(row[None])} cells, but the header "
                    f"names {len(reader.fieldnames or ())} columns",
                    hint="quote cells that hold commas, or add the missing column names to the "
                    "header; nothing was written",
                )
            yield row
    except csv.Error as exc:
        too_long = "field limit" in str(exc)
        raise SemsearchError(
            f"{name}: the CSV record starting on line {reader.line_num + 1} is malformed: {exc}",
            hint=f"a cell holds at most {CSV_FIELD_LIMIT:,} characters"
            if too_long
            else "check that line's quotes: a quoted cell ends with \" before the next comma",
        ) from None


def _convert_csv(row: Mapping[str, str], schema: Schema, line: int) -> dict[str, Any]:
    # a missing trailing cell (None) counts as an empty one
    out: dict[str, Any] = {k: v for k, v in row.items() if k is not None and v not in ("", None)}
    for field in schema.fields:
        if field.source in out:
            out[field.source] = _convert_cell(out[field.source], field, line)
    return out


def _convert_cell(value: str, field: Field, line: int) -> Any:
    try:
        if field.type == "int":
            return int(value)
        if field.type == "float":
            return float(value)
        if field.type == "bool":
            lowered = value.strip().lower()
            if lowered in _TRUE | _FALSE:
                return lowered in _TRUE
            raise ValueError(value)
        if field.type == "list[str]":
            return _as_list(value)
    except ValueError as exc:
        raise InvalidRecord(
            f"CSV line {line}: field {field.name!r} expects {field.type}, got {value!r}",
            hint="fix the cell or declare the field as str; nothing was written",
        ) from exc
    return value


def _as_list(value: str) -> list[str]:
    if value.startswith("["):
        parsed = json.loads(value)
        return [str(v) for v in parsed]
    return [part.strip() for part in value.split(";") if part.strip()]


def import_file(
    collection: Collection,
    path: str | Path,
    *,
    id_field: str = "id",
    progress: Callable[[int, int], None] | None = None,
    constants: Mapping[str, Any] | None = None,
) -> UpsertReport:
    """Import a file into ``collection``; the record id is read from ``id_field``.

    Args:
        progress: called with (records done, total) before the first batch and after each.
        constants: fields set to the same value in every record (over the file's own), e.g.
            ``{"document": "srd-5e"}``, the source book of a whole file.
    Returns:
        The merged UpsertReport (added, updated, unchanged, chunks embedded...).
    Raises:
        InvalidRecord: a record lacks ``id_field`` or has a field of the wrong type; the whole
            file is validated before anything is written.
    """
    records = load_for_import(path, collection.schema, id_field=id_field, constants=constants)
    return import_records(collection, records, progress=progress)


def load_for_import(
    path: str | Path,
    schema: Schema,
    *,
    id_field: str = "id",
    constants: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Read and validate a file's records against ``schema`` without writing anything.

    Args:
        constants: fields set to the same value in every record, over the file's own (as
            :func:`import_file`); ``id`` cannot be one.
    Returns:
        Records with ``id`` set from ``id_field`` and ``constants`` applied.
    Raises:
        SemsearchError, InvalidRecord: as :func:`read_records`, plus ``id`` among the
            constants, a missing id, a field of
            the wrong type, text that is not a str or not valid Unicode (checked as ``upsert``
            checks it, for the whole file), or a text template that yields no text for any
            record.
    """
    from semsearch.validation import check_unique, prepare_record

    if constants and "id" in constants:
        raise InvalidRecord(
            "a constant field cannot set the record id", hint="ids come from --id-field"
        )
    raw = read_records(path, schema)
    records = []
    for number, record in enumerate(raw, 1):
        record_id = resolve_path(record, id_field)
        if record_id is None or isinstance(record_id, dict | list):
            raise InvalidRecord(
                f"record {number} has no usable {id_field!r} value",
                hint="choose --id-field naming a field every record has",
            )
        records.append({**record, **(constants or {}), "id": str(record_id)})
    # validate everything first: nothing is written on a bad record, whichever batch it is in
    check_unique([prepare_record(schema, record) for record in records])
    schema.require_text(records)
    return records


def import_records(
    collection: Collection,
    records: list[dict[str, Any]],
    *,
    progress: Callable[[int, int], None] | None = None,
) -> UpsertReport:
    """Upsert records prepared by :func:`load_for_import` in batches, reporting progress."""
    report = UpsertReport()
    if progress is not None:
        progress(0, len(records))  # the total, before the first batch's chunking and embedding
    for start in range(0, len(records), BATCH):
        report.merge(collection.upsert(records[start : start + BATCH]))
        if progress is not None:
            progress(min(start + BATCH, len(records)), len(records))
    return report


def delete_missing(collection: Collection, records: list[dict[str, Any]]) -> int:
    """Delete the records of ``collection`` whose id is not among ``records`` (a full sync).

    Run after the import, so a failed import deletes nothing.

    Returns:
        The number of records deleted.
    Raises:
        SemsearchError: ``records`` is empty while the collection is not (an empty file would
            delete everything; use ``Database.drop_collection`` for that).
    """
    keep = {str(r["id"]) for r in records}
    gone = [record_id for record_id in collection.ids() if record_id not in keep]
    if gone and not keep:
        raise SemsearchError(
            f"the file has no records; refusing to delete all {len(gone)} records",
            hint="check the file; to empty a collection, drop it instead",
        )
    return collection.delete(gone) if gone else 0
