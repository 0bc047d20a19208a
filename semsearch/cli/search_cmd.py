"""`semsearch search QUERY`: ranked search, printed as text or one JSON document."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from semsearch import settings
from semsearch.cli.common import (
    CollectionOpt,
    IndexOpt,
    cli_errors,
    err_console,
    open_collection,
    out,
)
from semsearch.cli.rerank_opts import RerankOpt, RerankTopNOpt
from semsearch.errors import InvalidQuery
from semsearch.results import NO_CONFIDENT_MATCH, Chunk, SearchResult


@cli_errors
def search(
    query: Annotated[
        str, typer.Argument(help="What to look for; empty lists records (by id, no ranking).")
    ] = "",
    index: IndexOpt = settings.DEFAULT_INDEX,
    collection: CollectionOpt = settings.DEFAULT_COLLECTION,
    mode: Annotated[
        str, typer.Option("--mode", "-m", help="semantic | keyword | hybrid.")
    ] = "semantic",
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many hits.")] = 10,
    offset: Annotated[
        int, typer.Option("--offset", help="Listing (empty query) only: skip this many records.")
    ] = 0,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            help="Drop weaker hits: semantic, a cosine similarity in [-1, 1] (default: the "
            "model's calibrated threshold, 0.34 for all-MiniLM-L6-v2); hybrid, a fused score in "
            "[0, 1] (default 0.5, a confident match); keyword, only the default (records that "
            "hold a meaningful query word). -1 keeps all.",
        ),
    ] = None,
    folder: Annotated[
        str | None, typer.Option("--folder", help="Only paths under this prefix.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option("--exclude", help="Hide paths matching this glob.")
    ] = None,
    where: Annotated[
        str | None, typer.Option("--where", help="Filter as JSON, e.g. '{\"level\": 3}'.")
    ] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter", help="NAME=VALUE filter, e.g. level=3 or level_min=2 (repeatable)."
        ),
    ] = None,
    hyde: Annotated[
        str | None, typer.Option("--hyde", help="HyDE: embed this hypothetical answer instead.")
    ] = None,
    rerank: RerankOpt = None,
    rerank_top_n: RerankTopNOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Search an index by meaning (semantic), by words (keyword) or both (hybrid)."""
    from semsearch.cli.filter_opts import build_where

    for name, value in (("QUERY", query), ("--hyde", hyde), ("--folder", folder)):
        check_argument(name, value)
    if hyde and mode == "keyword":
        err_console.print("[yellow]warning:[/] --hyde is ignored in keyword mode "
                          "(it changes what semantic and hybrid search embed)")  # fmt: skip
    check_min_score(min_score)
    coll = open_collection(index, collection)
    scoring = {} if min_score is None else {"min_score": min_score}
    result = coll.search(
        query,
        where=build_where(where, filters or [], coll.schema),
        mode=mode,
        limit=limit,
        folder=folder,
        exclude=tuple(exclude or ()),
        hypothetical_answer=hyde,
        rerank=rerank or None,
        rerank_top_n=rerank_top_n,
        offset=offset,
        **scoring,
    )
    for note in result.notes:  # e.g. a --min-score ignored by keyword or hybrid mode
        err_console.print(f"[yellow]note:[/] {escape(note)}")
    if as_json:
        typer.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        render(result)
    coll.store.close()


def check_argument(name: str, value: str | None) -> None:
    """Refuse a command-line argument holding bytes that are not UTF-8 (Python turns each one
    into a lone surrogate, ``"\\udcff"`` for byte 0xff).

    Raises:
        InvalidQuery: naming the argument, the character position and the fix.
    """
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = ord(value[exc.start]) - 0xDC00 if "\udc80" <= value[exc.start] <= "\udcff" else None
        what = f"byte 0x{byte:02x}" if byte is not None else "a character"
        raise InvalidQuery(
            f"{name} holds {what} that is not valid UTF-8 at character {exc.start}",
            hint="the shell or script passed non-UTF-8 bytes: retype the text, convert it with "
            "`iconv -t UTF-8`, or use a UTF-8 locale (e.g. LANG=C.UTF-8)",
        ) from None


def check_min_score(value: float | None) -> None:
    """Refuse a --min-score outside [-1, 1] in the CLI's own terms: the library's message
    offers ``None`` and ``"default"``, which the option does not take (leaving it out does).

    Raises:
        InvalidQuery: naming the flag, the value and what the flag accepts.
    """
    if value is None or -1.0 <= value <= 1.0:  # NaN fails both tests
        return
    raise InvalidQuery(
        f"--min-score must be a number (cosine similarity) in [-1, 1], got {value:g}",
        hint="e.g. --min-score 0.4; leave the option out for the mode's default floor, "
        "or give --min-score -1 to keep every hit",
    )


def _place(chunk: Chunk) -> str:
    """Where a chunk sits in its file: ":12" (markdown line), " p. 3" or " pp. 3-4" (PDF)."""
    if chunk.page_start is not None:
        end = chunk.page_end or chunk.page_start
        return (
            f" p. {chunk.page_start}"
            if end == chunk.page_start
            else f" pp. {chunk.page_start}-{end}"
        )
    return f":{chunk.line_start}" if chunk.line_start else ""


def render(result: SearchResult) -> None:
    """Print hits for a person: rank, score, id, heading path and a one-line snippet."""
    note = " (HyDE)" if result.hyde else ""
    if result.reranked_by:
        note += f", reranked by {result.reranked_by}"
    query = result.query if len(result.query) <= 200 else result.query[:200] + "…"
    empty = "" if result.hits else _why_empty(result)
    out.print(f"[bold]{len(result)} hits[/] for {escape(repr(query))} ({result.mode}{note}){empty}")
    if result.degraded:
        out.print(f"[yellow]degraded:[/] {escape(result.degraded_reason or '')}")
    for rank, hit in enumerate(result, 1):
        where = ""
        if hit.chunk is not None:
            heading = " > ".join(hit.chunk.heading_path)
            lines = _place(hit.chunk)
            where = f"{lines}  [dim]{escape(heading)}[/]" if heading else lines
        out.print(f"{rank:>2}. [cyan]{hit.score:.3f}[/]  [bold]{escape(hit.id)}[/]{where}")
        if hit.chunk is not None:
            out.print(f"    {_snippet(hit.chunk.text, hit.highlight)}")


def _why_empty(result: SearchResult) -> str:
    """``": no confident match"`` when the default floor (or --min-score) removed every hit."""
    floored = any(n.startswith(NO_CONFIDENT_MATCH) for n in result.notes)
    return f": {NO_CONFIDENT_MATCH}" if floored else ""


def _snippet(text: str, highlight: tuple[int, int] | None) -> str:
    """A one-line snippet as rich markup: the chunk's first 160 characters, or, when the hit
    has a highlight, its matching sentence in bold with up to 60 characters on each side."""
    flat = " ".join(text.split())
    if highlight is None:
        return escape(flat[:160] + ("…" if len(flat) > 160 else ""))
    before = " ".join(text[: highlight[0]].split())
    after = " ".join(text[highlight[1] :].split())
    mark = " ".join(text[highlight[0] : highlight[1]].split())
    lead = "…" + before[-60:] if len(before) > 60 else before
    tail = after[:60] + "…" if len(after) > 60 else after
    return f"{escape(lead)} [bold]{escape(mark)}[/bold] {escape(tail)}".strip()
