"""The protocol block: what a number depends on, pinned in the report so it can be reproduced.

Two reports measured the same way carry the same block, so it holds no
timestamps and no paths of the machine that ran it. ``compare`` and ``merge``
read it field by field (:func:`protocol_differences`): a score is only
comparable to one measured on the same data, with the same metric, judge and
agent. Pure functions; the glue gathers the facts at start-up.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_recall.reporting.wording import counted
from pytest_recall.scoring import CaseSummary

# A file's or a data set's hash, shown by its first 12 digits where differences are listed.
_SHA256 = re.compile(r"[0-9a-f]{64}")
# The top-level field of a report that holds the block.
PROTOCOL_KEY = "protocol"
# A difference under this field is a different data set: no verdict across it without --allow-protocol-diff.
DATA_FIELD = "data"


def _metrics() -> Mapping[str, Mapping[str, Any]]:
    """How each imported benchmark scores an answer (the metric's name, as verdicts carry it, and what it computes),
    and how its categories are named: the tables the importer and the judge read, so that changing one is a
    difference. Their modules load here, when a report is written, as ``scoring/judge.py`` loads the scorers when a
    case needs one: a run or a judge process that never reads them does not pay for them."""
    from pytest_recall.scoring.beam_rubric import LLM_ONLY as BEAM_JUDGE_ONLY
    from pytest_recall.scoring.beam_rubric import METRIC as BEAM_METRIC
    from pytest_recall.scoring.lexical_judge import METRIC as LEXICAL_METRIC
    from pytest_recall.scoring.locomo_f1 import METRIC as LOCOMO_METRIC
    from pytest_recall.suites import CATEGORY_NAMES as LOCOMO_CATEGORY_NAMES
    from pytest_recall.suites import COMPETENCY_BY_SOURCE, METRIC_BY_SOURCE

    return {
        "locomo": {
            "metric": LOCOMO_METRIC,
            "definition": "token F1 (LoCoMo), adversarial questions scored on declining",
            "category_map": {str(number): name for number, name in LOCOMO_CATEGORY_NAMES.items()},
        },
        "longmemeval": {
            "metric": LEXICAL_METRIC,
            "definition": "gold answer in the final line, or the LLM judge where one is set",
            "category_map": None,
        },
        "beam": {
            "metric": BEAM_METRIC,
            "definition": "each rubric item 1 when all its content words are said, 0.5 when half, averaged; event "
            "ordering (tau-b + 1) / 2 x F1; abstention 1 on declining; the judge-only abilities by the judge command",
            "judge_only": sorted(BEAM_JUDGE_ONLY),
            "category_map": None,  # the categories are the ten abilities, as BEAM names them
        },
        "memoryagentbench": {
            "metric": "mab_<metric of the sub-dataset>",
            "definition": "best over gold answers and over the raw and 'Answer:' readings: substring_exact_match (a "
            "normalised gold inside the answer), exact_match, recall (share of gold elements said); llm_judge by the "
            "judge command only",
            "metric_by_source": dict(METRIC_BY_SOURCE),
            "category_map": dict(COMPETENCY_BY_SOURCE),
        },
    }


def content_hashes(summaries: Iterable[CaseSummary]) -> dict[str, list[str]]:
    """Each suite's case content hashes, as hex, from the cases' summaries."""
    hashes: dict[str, list[str]] = {}
    for summary in summaries:
        if summary.suite is None:
            continue  # a case lost before it was read: no suite, no content to pin
        hashes.setdefault(summary.suite, []).append(str(summary.content_hash))
    return hashes


def _cases_sha256(hashes: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(set(hashes))).encode()).hexdigest()


def data_entry(suite: str, note: Mapping[str, Any] | None, content_hashes: Iterable[str]) -> dict[str, Any]:
    """One suite as the block names it: its import (sources' SHA-256, importer, options), else a hash of its cases.

    The hash of the sorted case content hashes changes when any case file
    does, and not when the cases are run in another order or on another machine.
    """
    if note is not None:
        sources = [
            {"name": source.get("name"), "sha256": source.get("sha256")}
            for source in note.get("sources") or []
            if isinstance(source, Mapping)
        ]
        return {
            "suite": suite,
            "made_by": note.get("importer"),
            "benchmark": note.get("benchmark"),
            "sources": sources,
            "options": note.get("options"),
        }
    return {"suite": suite, "made_by": "case folders", "cases_sha256": _cases_sha256(content_hashes)}


def without_cases_hash(block: Any) -> Any:
    """The block as shards of one run share it: each shard hashes only the cases it ran."""
    if not isinstance(block, Mapping) or not isinstance(block.get(DATA_FIELD), list):
        return block
    data = [{k: v for k, v in entry.items() if k != "cases_sha256"} for entry in block[DATA_FIELD]]
    return {**block, DATA_FIELD: data}


def rehashed(block: Mapping[str, Any], summaries: Iterable[CaseSummary]) -> dict[str, Any]:
    """The block of merged shards: each case-folder suite hashed over every case merged, as one run would have."""
    hashes = content_hashes(summaries)
    data = [
        {**entry, "cases_sha256": _cases_sha256(hashes.get(str(entry.get("suite")), []))}
        if "cases_sha256" in entry
        else entry
        for entry in block.get(DATA_FIELD) or []
    ]
    return {**block, DATA_FIELD: data}


def scoring_entry(notes: Mapping[str, Mapping[str, Any] | None], answer_judge: str) -> dict[str, Any]:
    """The answer metric and category map of each imported benchmark, and how every other case is judged."""
    benchmarks = sorted({str(note.get("benchmark")) for note in notes.values() if note is not None})
    metrics = _metrics() if benchmarks else {}
    return {
        "answer_judge": answer_judge,
        "benchmarks": {
            name: dict(metrics.get(name, {"metric": None, "definition": None, "category_map": None}))
            for name in benchmarks
        },
    }


def build_protocol(
    *,
    data: list[dict[str, Any]],
    scoring: Mapping[str, Any],
    judges: Mapping[str, Any],
    agent: Mapping[str, Any],
    run: Mapping[str, Any],
    harness_version: str,
    seeds: Mapping[str, Any],
) -> dict[str, Any]:
    """The whole block, in a fixed order: data, scoring, judges, agent, run, harness, seeds."""
    return {
        DATA_FIELD: sorted(data, key=lambda entry: str(entry.get("suite"))),
        "scoring": dict(scoring),
        "judges": dict(judges),
        "agent": dict(agent),
        "run": dict(run),
        "harness_version": harness_version,
        "seeds": dict(seeds),
    }


def protocol_differences(base: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every field whose value differs between two blocks, as ``{"field", "base", "new"}``; none when equal.

    A report written before the block existed has none: that is one difference, not a silent match.
    """
    if base == new:
        return []
    if not isinstance(base, Mapping) or not isinstance(new, Mapping):
        return [{"field": PROTOCOL_KEY, "base": _presence(base), "new": _presence(new)}]
    return sorted(_differences(base, new, ""), key=lambda difference: str(difference["field"]))


def _differences(base: Any, new: Any, prefix: str) -> list[dict[str, Any]]:
    """The fields that differ under ``prefix``. A field one report lacks and the other holds as null is no
    difference (``run.epochs_from: None -> None``), and a block one side lacks whole (a judge only one run
    had) is one difference, not a line per hash inside it."""
    if base == new:
        return []
    left, right = _keyed(base), _keyed(new)
    if left is None or right is None:
        return [{"field": prefix, "base": base, "new": new}]
    found: list[dict[str, Any]] = []
    for key in left.keys() | right.keys():
        joined = key if not prefix else f"{prefix}{key}" if key.startswith("[") else f"{prefix}.{key}"
        found += _differences(left.get(key), right.get(key), joined)
    return found


def _keyed(value: Any) -> Mapping[str, Any] | None:
    """A block's fields by name, a list of suites' by ``[suite]``; None for a leaf or a missing block."""
    if isinstance(value, Mapping):
        return {str(key): inner for key, inner in value.items()}
    for name in ("suite", "name"):  # the data's suites; a judges panel's judges
        if isinstance(value, list) and value and all(isinstance(v, Mapping) and name in v for v in value):
            return {f"[{entry[name]}]": {k: v for k, v in entry.items() if k != name} for entry in value}
    return None


# Where a judges panel sits in the block: its judges' files are shown once there, not under every judge.
_PANEL_FIELD = "judges.llm_judge"
# The fields of that block :func:`_panel_rows` shows: the scoring judge's ``command`` and ``files_sha256`` are
# its entry's in ``judges``; the others (``both``, ``score_by``...) are walked as any field.
_PANEL_OWN = ("command", "files_sha256", "judges")


def protocol_rows(block: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The block as (field, value) rows for a reader, in its own order: hashes cut to 12 digits, and a judges
    panel's files once (:func:`_panel_rows`)."""
    rows: list[tuple[str, str]] = []

    def walk(value: Any, prefix: str) -> None:
        if prefix == _PANEL_FIELD and isinstance(value, Mapping) and isinstance(value.get("judges"), list):
            rows.extend(_panel_rows(value["judges"]))
            for key, inner in value.items():
                if key not in _PANEL_OWN:
                    walk(inner, f"{prefix}.{key}")
            return
        keyed = _keyed(value)
        if keyed is None or not keyed:
            rows.append((prefix, _shown(value)))
            return
        for key, inner in keyed.items():
            walk(inner, key if not prefix else f"{prefix}{key}" if key.startswith("[") else f"{prefix}.{key}")

    walk(block, "")
    return rows


def _panel_rows(judges: list[Any]) -> list[tuple[str, str]]:
    """A panel's rows: each file its judges name, with its hash, once (the judges that name it beside it), then
    each judge by name with its command and its files by name. The panel's judges mostly share their files (the
    bundled judge's prompts), which listed under each judge, and again for the scoring one, made a page of
    hashes."""
    panel = [entry for entry in judges if isinstance(entry, Mapping)]
    users: dict[tuple[str, str], list[str]] = {}
    for entry in panel:
        for name, digest in (entry.get("files_sha256") or {}).items():
            users.setdefault((str(name), str(digest)), []).append(str(entry.get("name")))
    rows = [
        (f"{_PANEL_FIELD}.files_sha256.{name}", f"{_shown(digest)} ({_judges_named(named)})")
        for (name, digest), named in users.items()
    ]
    for entry in panel:
        field = f"{_PANEL_FIELD}.judges[{entry.get('name')}]"
        files = ", ".join(str(name) for name in entry.get("files_sha256") or {})
        rows.append((f"{field}.command", _shown(entry.get("command"))))
        rows.append((f"{field}.files_sha256", f"{files} (hashes above)" if files else "none"))
    return rows


def _judges_named(names: list[str]) -> str:
    return f"judge {names[0]}" if len(names) == 1 else f"judges {', '.join(names)}"


def _presence(block: Any) -> str:
    return "present" if isinstance(block, Mapping) else "none (a report from before the protocol block)"


def differs_in_data(differences: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the reports say they measured different data sets.

    A report from before the block says nothing either way: its difference is
    listed, but a baseline saved by an older version still gets its verdict.
    """
    return any(str(d["field"]).startswith(DATA_FIELD) for d in differences)


def difference_lines(differences: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per differing field, for the terminal."""
    return [f"  {d['field']}: {_shown(d['base'])} -> {_shown(d['new'])}" for d in differences]


def _shown(value: Any) -> str:
    """A leaf as read at a glance: a sha256 cut to 12 digits, a block one side lacks as ``none`` or its size."""
    if value is None:
        return "none"
    if isinstance(value, Mapping):
        return f"set ({counted(len(value), 'field')})"
    text = str(value)
    if _SHA256.fullmatch(text):
        return text[:12]
    return text if len(text) <= 80 else text[:77] + "..."
