"""Our judge and grader against the seed task's own, on fuzzed inputs.

The seed's ``judge.py`` and ``grader.py`` are read from the shared seed file
at test time and executed in a fresh module namespace; no line of them is
copied into this repository. CI places ``shared/`` beside the clone.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import types
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.reporting.spool import summary_of_row
from pytest_recall.scoring.grader import aggregate
from pytest_recall.scoring.judge import score_case

SHARED_DIR = Path(__file__).resolve().parents[2] / "shared"
SEED_FILE = SHARED_DIR / "seeds" / "000_8b707e82c5654338.txt"
JUDGE_MARK = "▸judge.py"
GRADER_MARK = "▸grader.py"
FUZZ_SEED = 20260314
OUTPUTS_PER_ANSWER = 3000
RECORD_SETS = 600
COMPARED_KEYS = ("score", "reported", "n_candidates")


@pytest.fixture(scope="module")
def seed_text() -> str:
    if not SEED_FILE.is_file():
        pytest.skip(f"seed file not found at {SEED_FILE}: place a copy of shared/ beside the repository clone")
    return SEED_FILE.read_text(encoding="utf-8")


def seed_section(text: str, start_mark: str, end_mark: str | None) -> str:
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(start_mark))
    end = next((i for i, line in enumerate(lines) if end_mark and line.startswith(end_mark)), len(lines))
    return "".join(lines[start + 1 : end])


def load_seed_module(text: str, name: str, start_mark: str, end_mark: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(seed_section(text, start_mark, end_mark), f"<seed {name}>", "exec"), module.__dict__)
    return module


@pytest.fixture(scope="module")
def seed_judge(seed_text: str) -> types.ModuleType:
    return load_seed_module(seed_text, "seed_judge", JUDGE_MARK, GRADER_MARK)


@pytest.fixture(scope="module")
def seed_grader(seed_text: str) -> types.ModuleType:
    return load_seed_module(seed_text, "seed_grader", GRADER_MARK, None)


@pytest.fixture(scope="module")
def seed_answers(seed_text: str) -> list[dict[str, Any]]:
    blocks = re.findall(r'\{\s*"id":.*?\}', seed_text, flags=re.DOTALL)
    answers = [json.loads(block) for block in blocks]
    assert len(answers) == 8, "the seed suite has eight cases"
    return answers


# -- the output fuzzer --------------------------------------------------------

PROSE = [
    "The value is",
    "I remember it:",
    "Per my notes,",
    "closing balance",
    "Let me check.",
    "Here you go",
    "Résumé — café ☕ naïve",
    "Ledger 第二 部分",
    "Step 3 of 12",
    "rank 2",
    "0.5 percent",
    "12:30",
    "Done.",
    "answer",
    "≈",
    "**Answer**",
    "#",
    "-",
    "Voucher",
    "USD",
    "$",
    "€1.234,56",
    "₹12,000",
    "١٢٣٤٥",
    "２７４３６.４２",
]
UNKNOWNS = ["UNKNOWN", "unknown", "**UNKNOWN**", "UNKNOWN.", "Unknown", "UNKNOWN value", "`UNKNOWN`"]
LINE_ENDS = ["\n", "\n", "\n", "\r\n", "\n\n", "\r", " \n", "\u2028", ""]


def money_form(value: float, rng: random.Random) -> str:
    """One of the ways a value may be written back, right or subtly wrong."""
    plain = f"{value:.2f}"
    grouped = f"{value:,.2f}"
    forms = [plain, grouped, f"${grouped}", f"${plain}", f"{grouped} USD", f"USD {plain}", f"{plain}."]
    forms += [f"{value:.1f}", f"{value:.0f}", f"{value:,.0f}", f"{value:.3f}", f"{plain}.5", f"{plain}0", f"v{plain}"]
    return rng.choice(forms)


def wrap(token: str, rng: random.Random) -> str:
    wrappers = ["{}", "{}", '"{}"', "'{}'", "**{}**", "`{}`", "({})", "[{}]", "{}.", "{},", "{}!", "{}:", " {} "]
    return rng.choice(wrappers).format(token)


def other_money(rng: random.Random) -> float:
    magnitude = rng.choice([10, 100, 1000, 10000, 100000, 1000000])
    return round(rng.uniform(0, magnitude), 2)


def fragment(expected: Mapping[str, Any], rng: random.Random) -> str:
    answer = str(expected["answer"])
    is_voucher = expected["answer_kind"] == "voucher"
    roll = rng.random()
    if roll < 0.22:
        if is_voucher:
            token = rng.choice([answer, answer.lower(), answer + "1", "X" + answer, answer.replace("2026", "2025")])
        else:
            token = money_form(float(answer), rng)
        return wrap(token, rng)
    if roll < 0.40:
        return wrap(money_form(other_money(rng), rng), rng)
    if roll < 0.50:
        return wrap(f"AR-2026-{rng.randrange(10000):04d}", rng)
    if roll < 0.58:
        return wrap(f"{rng.choice([2025, 2026, 2027])}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}", rng)
    if roll < 0.64:
        return wrap(str(rng.choice([0, 1, 2, 3, 7, 12, 42, 99, 365, 2026, 0.5, 1.25])), rng)
    if roll < 0.68:
        return rng.choice(UNKNOWNS)
    if roll < 0.72:
        return rng.choice(["```", "```text", "> quoted", "  ", "\t", "\x1b[1m", "\u00a0"])
    return rng.choice(PROSE)


def fuzzed_output(expected: Mapping[str, Any], rng: random.Random) -> str:
    shape = rng.random()
    if shape < 0.15:
        # A bare answer, the most common honest output, in one of its many spellings.
        return fragment(expected, rng) + rng.choice(LINE_ENDS)
    lines = []
    for _ in range(rng.randrange(0, 7)):
        words = [fragment(expected, rng) for _ in range(rng.randrange(0, 5))]
        lines.append(rng.choice([" ", "  ", ", ", "; ", " / ", "\t"]).join(words))
    if shape < 0.3:
        lines.append(rng.choice(UNKNOWNS))
    return "".join(line + rng.choice(LINE_ENDS) for line in lines)


def compared(verdict: Mapping[str, Any]) -> dict[str, Any]:
    return {key: verdict[key] for key in COMPARED_KEYS if key in verdict}


def test_our_judge_agrees_with_the_seed_judge_on_fuzzed_outputs(seed_judge, seed_answers):
    rng = random.Random(FUZZ_SEED)
    seed_score_case: Callable[[str, dict[str, Any]], dict[str, Any]] = seed_judge.score_case
    branches: Counter[tuple[str, str]] = Counter()
    mismatches = []
    total = 0
    for expected in seed_answers:
        for _ in range(OUTPUTS_PER_ANSWER):
            stdout = fuzzed_output(expected, rng)
            theirs = seed_score_case(stdout, dict(expected))
            ours = score_case(stdout, expected)
            total += 1
            branches[(expected["answer_kind"], re.sub(r"\d+", "N", theirs["reason"]))] += 1
            if compared(ours) != compared(theirs):
                mismatches.append((stdout, expected["answer"], compared(theirs), compared(ours)))
    assert total >= 20_000
    assert mismatches[:5] == [], f"{len(mismatches)} of {total} outputs judged differently"
    # The fuzzer must reach every branch of the seed judge, for both kinds, or agreement proves little.
    for kind in ("money", "voucher"):
        reached = {reason for (k, reason), count in branches.items() if k == kind and count >= 20}
        assert len(reached) == 8, f"{kind}: only reached {sorted(reached)}"


def test_the_seed_judge_loads_from_the_shared_seed(seed_judge):
    """A guard on the extraction itself: the functions the comparison relies on exist."""
    assert callable(seed_judge.score_case)
    assert seed_judge.score_case("27436.42", {"answer": "27436.42", "answer_kind": "money"})["score"] == 1.0


# -- the grader -----------------------------------------------------------------

CATEGORIES = ["closing_balance", "period_debits", "largest_debit_voucher", "", None]


def random_record(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    error = None
    if roll < 0.1:
        score, error = None, "agent command could not start"
    elif roll < 0.15:
        score = None
    else:
        score = rng.choice([0.0, 1.0, 1.0, 0.5, 0.25, 0.0])
    return {
        "id": f"case_{rng.randrange(1000):03d}",
        "category": rng.choice(CATEGORIES),
        "score": score,
        "error": error,
        "control": False,
        "duration_s": rng.choice([None, round(rng.uniform(0.01, 400.0), 4), round(rng.uniform(0, 2), 4)]),
        "cost_usd": rng.choice([None, None, round(rng.uniform(0, 0.5), 6), 0.0]),
    }


def seed_manifest_entry(record: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    if record["score"] is None:
        metrics = rng.choice([None, {"score": None, "category": record["category"]}])
    else:
        metrics = {"score": record["score"], "category": record["category"]}
    return {"metrics": metrics, "duration": record["duration_s"], "cost": {"cost_usd": record["cost_usd"]}}


def run_seed_grader(seed_grader: types.ModuleType, manifest: list[dict[str, Any]], monkeypatch) -> dict[str, Any]:
    monkeypatch.setenv("TRAPTASK_MANIFEST", json.dumps(manifest))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        seed_grader.main()
    result: dict[str, Any] = json.loads(printed.getvalue())
    return result


def test_our_grader_agrees_with_the_seed_grader_on_random_record_sets(seed_grader, monkeypatch):
    rng = random.Random(FUZZ_SEED)
    for index in range(RECORD_SETS):
        records = [random_record(rng) for _ in range(rng.choice([0, 1, 2, 3, rng.randrange(4, 60)]))]
        theirs = run_seed_grader(seed_grader, [seed_manifest_entry(r, rng) for r in records], monkeypatch)
        ours = aggregate([summary_of_row(r) for r in records], threshold=seed_grader.PASS_THRESHOLD)
        assert {key: ours[key] for key in theirs} == theirs, f"record set {index}: {records}"
