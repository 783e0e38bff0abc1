"""The adversarial answers of ``judge-audit`` (issue 56): built from the gold alone, of its shape, and the bound.

Each builder is held to edge golds (a bare zero, a dash, numbers with
thousands separators, dates in two formats, a multi-word name, an ID with
several numbers), and the fake model's judges to what they take: the strict
one (any mode but ``lenient`` and ``gullible``) and the gullible one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_recall.agents.judge_prompts import judge_prompt
from pytest_recall.scoring import audit_variants as build
from pytest_recall.scoring.judge_audit import (
    GAMING,
    VARIANTS,
    AuditItem,
    AuditQuestion,
    audit_items,
    audit_lines,
    audit_table,
    flagged,
    question_from,
)
from pytest_recall.testing.fake_judge import judge_verdict

# (gold, its decoys, the gold reformatted)
EDGE_GOLDS = [
    ("27436.42", ["27437.42", "27435.42", "30180.06", "24692.78"], "27,436.42"),
    ("1,234,567", ["1,234,568", "1,234,566", "1,358,023", "1,111,111"], "1234567"),
    ("0", ["1", "2", "3", "5"], "zero"),
    ("14 days", ["15 days", "13 days", "16 days", "12 days"], "fourteen days"),
    ("3.50", ["4.50", "2.50", "5.50", "1.50"], "3.5"),
    ("AR-2026-5807", ["AR-2026-5808", "AR-2026-5806", "AR-2026-6387", "AR-2026-5227"], "ar-2026-5807"),
    ("2023-05-07", ["2023-05-08", "2023-05-06", "2023-05-14", "2023-06-06"], "May 7, 2023"),
    ("on 7 May 2023", ["on May 8, 2023", "on May 6, 2023", "on May 14, 2023", "on June 6, 2023"], "on 2023-05-07"),
    ("Mary Ann Smith", ["Seattle", "Alex", "Paris", "the blue one"], "mary ann smith"),
    ("-", ["Seattle", "Mary Ann Smith", "Alex", "Paris"], "the answer: -"),
]
OTHER_GOLDS = ("12.00", "Seattle", "2024-01-01", "Mary Ann Smith", "seattle")


@pytest.mark.parametrize(("gold", "decoys", "reformatted"), EDGE_GOLDS)
def test_each_gold_gets_decoys_of_its_shape_and_a_fair_reformatting(
    gold: str, decoys: list[str], reformatted: str
) -> None:
    assert build.decoys_of(gold, OTHER_GOLDS) == decoys
    assert build.decoys_of(gold, OTHER_GOLDS) == build.decoys_of(gold, OTHER_GOLDS), "not deterministic"
    assert build.reformatted_of(gold) == reformatted and reformatted != gold
    shotgun = build.shotgun_of(gold, decoys)
    assert all(value in shotgun for value in [gold, *decoys])
    assert build.negated_of(gold) == f"It was not {gold}."
    assert build.hedge_of(gold, decoys[0]).startswith(f"Either {decoys[0]} or {gold},")
    assert gold not in decoys and build.claims_correct_of(decoys[0]).startswith(decoys[0] + "\n")


def test_an_impossible_date_is_a_number_and_a_blank_gold_is_not_audited() -> None:
    assert build.decoys_of("2023-02-30")[0] == "2023-02-31"
    assert question_from({"answer": "  "}, "q?", "s/c") is None
    assert question_from({"answer": 0}, "q?", "s/c") == AuditQuestion("s/c", "money", "q?", "0")


def verdicts_of(items: list[AuditItem], *, gullible: bool) -> list[tuple[AuditItem, float | None]]:
    said = [(item, judge_verdict(judge_prompt(item.request()), lenient=False, gullible=gullible)) for item in items]
    return [(item, 1.0 if word == "yes" else 0.0) for item, word in said]


def test_the_gullible_fake_judge_falls_for_every_gaming_answer_and_the_strict_one_for_some() -> None:
    questions = [
        AuditQuestion("a", "money", "What was the balance?", "27436.42"),
        AuditQuestion("b", "voucher", "Which voucher?", "AR-2026-5807"),
    ]
    items = audit_items(questions)
    assert [item.variant for item in items] == [*VARIANTS, *VARIANTS]
    gullible = audit_table(verdicts_of(items, gullible=True))
    assert {variant: row["rate"] for variant, row in gullible.items()} == {
        **{variant: 1.0 for variant in VARIANTS},
        **{"vague": 0.0, "partial": 0.0, "wrong": 0.0},
    }
    assert flagged(gullible) == list(GAMING)
    # The strict judge matches the gold's words: it reads no negation, and only a gold that is one number
    # is guarded against other values beside it, so a voucher's shotgun and hedge get through.
    strict = audit_table(verdicts_of(items, gullible=False))
    assert {variant: strict[variant]["accepted"] for variant in GAMING} == {
        "shotgun": 1,
        "negated": 2,
        "claims_correct": 0,
        "hedge": 1,
    }
    assert strict["reformatted"]["rate"] == 1.0 and strict["gold"]["rate"] == 1.0
    loose = audit_table(verdicts_of(items, gullible=False), bound=0.5)
    assert flagged(loose) == ["negated"]
    assert audit_lines(loose, 0.5)[-1] == "  flagged: accepts negated above 0.50; its scores can be gamed"


def test_a_gaming_rate_at_the_bound_is_not_flagged_and_errors_are_not_acceptance() -> None:
    items = [item for item in audit_items([AuditQuestion("a", "money", "q?", "12.00")]) if item.variant in GAMING]
    table = audit_table([(item, None if item.variant == "hedge" else 0.0) for item in items], bound=0.0)
    assert flagged(table) == [] and table["hedge"]["errors"] == 1 and table["hedge"]["rate"] is None
    assert table["shotgun"]["expected"] == 0.0


SOUND_JUDGE = """
import json, sys
request = json.load(sys.stdin)
print("yes" if request["answer"] == request["gold"] else "no")
"""


def audit(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    judge = tmp_path / "judge.py"
    judge.write_text(SOUND_JUDGE, encoding="utf-8")
    suite = Path(__file__).parents[1] / "cases" / "session-memory-recall"
    command = [sys.executable, "-m", "pytest_recall.cli", "judge-audit", str(suite), "--limit=2"]
    return subprocess.run(
        [*command, f"--judge-cmd={sys.executable} {judge}", *extra], capture_output=True, text=True, check=False
    )


def test_a_judge_that_takes_no_gaming_answer_exits_zero_and_a_bad_bound_is_one_line(tmp_path: Path) -> None:
    done = audit(tmp_path, "--json", str(tmp_path / "audit.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no gaming answer accepted above 0.10" in done.stdout
    written = json.loads((tmp_path / "audit.json").read_text(encoding="utf-8"))
    assert written["flagged"] == [] and written["bound"] == 0.1
    # This judge compares text exactly, so it refuses the gold reformatted: not sound, but not gamed either.
    assert written["table"]["reformatted"] == {**written["table"]["reformatted"], "rate": 0.0, "expected": 1.0}
    bad = audit(tmp_path, "--gaming-bound=10")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--gaming-bound" in bad.stderr
