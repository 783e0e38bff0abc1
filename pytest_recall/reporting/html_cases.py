"""The page's case tables: a skeleton in markup, the rows as data the page's script draws.

Rows are written as they are read, one record at a time, so the page of a
100,000-case run is written in constant memory: the compact row of each case
(outcome, id, category, answer, times) goes into one JSON array, and its
evidence (steps, prompts, output tails, memory listing) into a second block,
one JSON line per case, that the script parses only for a row a reader
unfolds. The evidence lines wait in a temporary file while the rows are
written, so one pass over the records makes both.

Data blocks are ``<script>`` elements of a type no browser runs. Each string
in them is cleaned like any text on the page (``html_text.clean_text``), and
every ``<`` is written ``\\u003c``, so nothing inside can close the element.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from markupsafe import Markup

from pytest_recall.reporting.html_text import (
    STATUS_LABELS,
    byte_size,
    clean,
    clean_text,
    number,
    seconds,
    status,
    usd,
)
from pytest_recall.reporting.transcripts import prompt_text

CASE_COLUMNS = ("outcome", "case", "category", "epoch", "expected", "reported", "reason", "memory", "time", "cost")
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# Evidence lines are copied into the page in pieces of this many bytes.
_COPY_CHUNK = 1 << 20


def data_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` data block: no ``<``, so no ``</script>`` and no ``<!--``."""
    return _ENCODER.encode(value).replace("<", "\\u003c")


def case_table_section(title: str, hint: str, count: int, *, control: bool) -> Markup:
    """A case table's section: its controls and an empty body the script fills from the data blocks."""
    if not count:
        return Markup("")
    filters = Markup(
        '<label>outcome <select class="outcome"><option value="">all</option></select></label> '
        '<label>category <select class="category"><option value="">all</option></select></label> '
    )
    return Markup(
        '<section class="case-table" data-control="{control}">\n<h2>{title} ({count})</h2>\n'
        '<p class="hint">{hint}</p>\n{controls}\n<div class="table-scroll"><table class="cases">\n{head}\n'
        "<tbody></tbody>\n</table></div>\n</section>"
    ).format(
        control=int(control),
        title=clean(title),
        count=count,
        hint=clean(hint),
        controls=paged_controls(count, filters),
        head=table_head(CASE_COLUMNS),
    )


def table_head(columns: Iterable[str]) -> Markup:
    return Markup("<thead><tr>{}</tr></thead>").format(
        Markup("").join(Markup("<th>{}</th>").format(name) for name in columns)
    )


def paged_controls(count: int, filters: Markup | None = None) -> Markup:
    """A drawn table's filters, search by case id and pager, hidden until the script shows them, and what
    a reader without the script sees instead."""
    return Markup(
        '<div class="controls" hidden>{filters}'
        '<label>case id <input class="search" type="search" placeholder="search"></label>'
        '<div class="pager"><button type="button" class="first">« first</button>'
        '<button type="button" class="prev">‹ previous</button><span class="page"></span>'
        '<button type="button" class="next">next ›</button><button type="button" class="last">last »</button>'
        '</div><p class="shown"></p></div>\n'
        "<noscript><p>The {count} rows of this table are drawn by the page's script, which is off here; "
        "the JSON report has every case.</p></noscript>"
    ).format(filters=filters or "", count=count)


def data_block(rows: Any) -> Markup:
    """Rows for the script inside the section that draws them: a ``<script>`` of a type no browser runs."""
    return Markup('<script type="application/json" class="rows">{}</script>').format(Markup(data_json(rows)))


def case_row(row: Mapping[str, Any]) -> list[Any]:
    """One row as the script reads it, by position (the constants at the top of ``html_script.SCRIPT``)."""
    score = number(row.get("score"))
    label = status(score, row.get("error"), row.get("outcome"))[0]
    steps = row.get("steps")
    return [
        STATUS_LABELS.index(label),
        label + ("" if score is None or label == "RATE LIMITED" else f" {score:.2f}"),
        score,
        clean_text(row.get("id")),
        clean_text(row.get("suite")),
        clean_text(row.get("category")),
        clean_text(row.get("epoch", "")),
        clean_text(row.get("expected")),
        clean_text(row.get("reported")),
        clean_text(row.get("error") or row.get("reason") or ""),
        _memory_cell(row),
        seconds(number(row.get("duration_s"))),
        usd(number(row.get("cost_usd")), "–"),
        1 if row.get("control") else 0,
        sum(1 for step in steps if isinstance(step, Mapping)) if isinstance(steps, list) else 0,
    ]


def _memory_cell(row: Mapping[str, Any]) -> str:
    """What the agent kept, and on a ``--recall-mcp`` run what it asked of its memory: the tap's writes before
    the last step and reads in it, the two counts that tell an unused memory from a failed retrieval."""
    kept = byte_size(row.get("memory_bytes"))
    use = row.get("memory_use")
    if not isinstance(use, Mapping):
        return kept
    return f"{kept} · {use.get('writes_before', 0)} writes, {use.get('reads_last', 0)} reads"


def evidence_line(row: Mapping[str, Any]) -> list[Any]:
    """What a row unfolds to: where the case ran, then each step's prompt, output tails and memory."""
    where = f"{row.get('nodeid') or ''} · content hash {row.get('content_hash') or '–'}"
    steps = [step for step in row.get("steps") or [] if isinstance(step, Mapping)]
    return [clean_text(where), [_step(step) for step in steps]]


def _step(step: Mapping[str, Any]) -> list[Any]:
    flags = [f"exit {step.get('exit_code', '–')}", seconds(number(step.get("duration_s")))]
    flags += ["timed out"] * bool(step.get("timed_out")) + ["output truncated"] * bool(step.get("truncated"))
    return [
        clean_text(f"step {step.get('step', '?')} · " + " · ".join(flags)),
        clean_text(prompt_text(step.get("prompt"))),
        clean_text(step.get("stdout")),
        clean_text(step.get("stderr")),
        _memory(step),
    ]


def _memory(step: Mapping[str, Any]) -> list[Any] | None:
    """The files the agent kept after this step: path, size and digest, never the content."""
    files = step.get("memory")
    if not isinstance(files, list):
        return None
    heading = (
        f"memory after this step: {clean_text(step.get('memory_files'))} file(s), {byte_size(step.get('memory_bytes'))}"
    )
    listing = [
        [clean_text(f.get("path")), byte_size(f.get("size")), clean_text(str(f.get("sha256"))[:16])]
        for f in files
        if isinstance(f, Mapping)
    ]
    return [heading, listing]


def data_blocks(case_rows: Iterable[Mapping[str, Any]], script: str) -> Iterator[str]:
    """The rows block, ``script``, then the evidence block, from one pass over the records.

    The script runs before the browser has parsed the evidence, the bulk of
    the page, so the first rows are drawn without waiting for it.
    """
    with tempfile.TemporaryFile("w+", encoding="utf-8") as evidence:
        yield '<script type="application/json" id="recall-rows">['
        for position, row in enumerate(case_rows):
            yield ("\n" if position == 0 else ",\n") + data_json(case_row(row))
            evidence.write(("" if position == 0 else "\n") + data_json(evidence_line(row)))
        yield "]</script>\n"
        yield f"<script>{script}</script>\n"
        yield '<script type="application/x-ndjson" id="recall-evidence">'
        evidence.seek(0)
        while chunk := evidence.read(_COPY_CHUNK):
            yield chunk
        yield "</script>\n"
