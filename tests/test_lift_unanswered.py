"""The lift over the no-memory control and the helped/harmed counts leave out a case that never answered
(issue 66, item 4): an agent that could not start is no evidence of what memory did, as the memory figures
already leave it out."""

from __future__ import annotations

from conftest import RecallSuite


def test_a_case_whose_agent_never_starts_in_either_arm_is_left_out_of_the_lift_and_says_so(
    recall_suite: RecallSuite,
) -> None:
    recall_suite.add("case_01_recalls", ["remember 12345.67\nsay noted", "recall"])
    # The agent's CLI is missing in both arms (exit 127): it never answered, with memory or without.
    recall_suite.add("case_02_missing_cli", ["exit 127", "exit 127"])

    html = recall_suite.pytester.path / "report.html"
    result = recall_suite.run("--recall-control", "--recall-concurrency=2", f"--recall-html={html}")

    records = recall_suite.report()["cases"]
    assert {(r["id"], r["control"]): r["outcome"] for r in records if r["id"] == "case_02_missing_cli"} == {
        ("case_02_missing_cli", False): "agent_failed",
        ("case_02_missing_cli", True): "agent_failed",
    }
    report = recall_suite.report()
    control, effect = report["control"], report["help_harm"]
    # Over the one case that answered in both arms: memory took it from 0 to 1.
    assert (control["lift"], control["n_unanswered"]) == (1.0, 1)
    assert (effect["n"], effect["helped"], effect["harmed"], effect["n_unanswered"]) == (
        1,
        ["suite/case_01_recalls"],
        [],
        1,
    )
    result.stdout.fnmatch_lines(
        [
            "*control (no memory): score 0.000; memory lift +1.000 *; 1 case left out (its agent never answered in one "
            "arm or both)",
            "*memory helped 1 case *harmed 0 cases *; 1 case left out (its agent never answered in one arm or both)",
        ]
    )
    # The page's lift and its helped and harmed say the same.
    assert html.read_text(encoding="utf-8").count("1 case left out (its agent never answered in one arm or both)") == 2
