"""`semsearch import FILE`: records from JSON, JSONL or CSV into a typed collection."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import (
    IndexOpt,
    KeywordTokenizerOpt,
    SentenceWindowsOpt,
    WindowVectorsOpt,
    cli_errors,
    err_console,
    failed_note,
    out,
)
from semsearch.errors import SemsearchError


def parse_field_specs(specs: list[str]) -> dict[str, str]:
    """``NAME:TYPE[=PATH]`` options -> ``{name: "type[=path]"}`` for Schema.from_types."""
    types: dict[str, str] = {}
    for spec in specs:
        name, sep, rest = spec.partition(":")
        if not sep or not name.strip() or not rest.strip():
            raise SemsearchError(
                f"bad --field {spec!r}",
                hint="write NAME:TYPE or NAME:TYPE=SOURCE.PATH, e.g. school:str=school.name",
            )
        if name.strip() in types:
            raise SemsearchError(f"--field {name.strip()!r} is declared twice", hint="keep one")
        types[name.strip()] = rest.strip()
    return types


def parse_constants(specs: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` options -> ``{name: value}``: a str field set in every record."""
    constants: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise SemsearchError(
                f"bad --set {spec!r}", hint="write NAME=VALUE, e.g. --set document=srd-5e"
            )
        constants[name.strip()] = value
    return constants


@cli_errors
def import_records(
    file: Annotated[str, typer.Argument(help="A .json array, .jsonl or .csv file.")],
    collection: Annotated[str, typer.Option("--collection", "-c", help="Collection name.")],
    id_field: Annotated[
        str, typer.Option("--id-field", help="Field (dotted path) holding each record's id.")
    ] = "id",
    text: Annotated[
        list[str] | None,
        typer.Option("--text", help="Field whose text is embedded, in order (repeatable)."),
    ] = None,
    field: Annotated[
        list[str] | None,
        typer.Option("--field", help="Filterable field NAME:TYPE[=PATH] (repeatable)."),
    ] = None,
    set_field: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Set field NAME to the text VALUE in every record, over the file's own "
            "(repeatable), e.g. --set document=srd-5e for the file's source book.",
        ),
    ] = None,
    delete_missing: Annotated[
        bool,
        typer.Option(
            "--delete-missing",
            help="Also delete the collection's records whose id is not in the file.",
        ),
    ] = False,
    index: IndexOpt = settings.DEFAULT_INDEX,
    keyword_tokenizer: KeywordTokenizerOpt = None,
    sentence_windows: SentenceWindowsOpt = None,
    window_vectors: WindowVectorsOpt = None,
) -> None:
    """Import records; the same file imported twice changes nothing and embeds nothing.

    Records missing from the file are kept unless --delete-missing is given."""
    import semsearch
    from semsearch.cli.progress import ProgressLine
    from semsearch.sources.records import delete_missing as delete_gone
    from semsearch.sources.records import import_records, load_for_import
    from semsearch.stores.keyword_capabilities import refresh_keyword_index

    schema = semsearch.Schema.from_types(
        parse_field_specs(field or []), text=tuple(text or ("text",))
    )
    constants = parse_constants(set_field or [])  # the file is read before anything is created
    records = load_for_import(file, schema, id_field=id_field, constants=constants)
    db = semsearch.connect(index)
    coll = db.collection(
        collection,
        schema=schema,
        embedder=os.environ.get(settings.ENV_MODEL),
        keyword_tokenizer=keyword_tokenizer,
        sentence_windows=sentence_windows,
        window_vectors=window_vectors,
    )
    with ProgressLine("importing records", "records") as bar:
        report = import_records(coll, records, progress=bar.update)
    deleted = delete_gone(coll, records) if delete_missing else 0
    refresh_keyword_index(coll.store, coll.name)  # a build left to a search dies with us
    for rid, reason in report.failed.items():
        err_console.print(f"[yellow]not embedded[/] {escape(rid)}: {escape(reason)}")
    for message in dict.fromkeys(report.errors):
        err_console.print(f"[yellow]warning:[/] {escape(message)}")
    gone = f", {deleted} deleted" if delete_missing else ""
    out.print(
        f"records: {report.added} new, {report.updated} changed, {report.unchanged} unchanged"
        f"{gone}; chunks embedded: {report.chunks_embedded} (reused {report.chunks_reused}, "
        f"pending {report.chunks_pending}{failed_note(report.chunks_failed)})"
    )
    db.close()
