"""A later step cannot reach what an earlier step saw, however hard the agent looks.

The snoop agent (``tests/agents/snoop.py``) plants a secret in step 1 and
hunts for it in step 2 on disk: the parents of its directory, pytest's
basetemp, ``/tmp``. The one copy of the prompts that may exist on disk is the
case folder the user wrote, which the hunt passes over; anything else it
finds would be the harness's leak.
"""

from __future__ import annotations

import getpass
import secrets
from dataclasses import dataclass
from pathlib import Path

LABELS = ["step 1's prompt", "step 1's token", "step 1's stdout marker", "step 2's own prompt"]


@dataclass(frozen=True)
class Hunt:
    step1_prompt: str
    marker: str
    case_dir: Path
    basetemp: Path


def plant_and_hunt_case(recall_suite, monkeypatch) -> Hunt:
    """A case whose step 1 plants a fresh secret and whose step 2 hunts for it."""
    token = secrets.token_hex(16)
    step1_prompt = f"plant {token}\n"
    marker = "OUT-" + token[::-1]
    needles = [step1_prompt.encode(), token.encode(), marker.encode()]
    # The needles travel hex-encoded: step 2's prompt must not itself be a copy of them.
    step2_prompt = "hunt " + " ".join(needle.hex() for needle in needles) + "\n"
    case_dir = recall_suite.add("isolation", [step1_prompt, step2_prompt], "AR-2026-0001", kind="voucher")
    basetemp = recall_suite.pytester.path / "inner-basetemp"
    # pytest makes the basetemp only when a test asks for tmp_path; the hunt needs it to exist.
    basetemp.mkdir()
    monkeypatch.setenv("RECALL_TEST_CASE_DIR", str(case_dir))
    monkeypatch.setenv("RECALL_TEST_BASETEMP", str(basetemp))
    return Hunt(step1_prompt, marker, case_dir, basetemp)


def run_hunt(recall_suite, hunt: Hunt):
    return recall_suite.run(
        f"--basetemp={hunt.basetemp}", "--recall-timeout=60", command=recall_suite.agent("snoop"), report=False
    )


def test_step_two_cannot_find_anything_of_step_one(recall_suite, monkeypatch):
    hunt = plant_and_hunt_case(recall_suite, monkeypatch)

    result = run_hunt(recall_suite, hunt)

    found = recall_suite.probe("snoop", 2)
    step1_cwd = Path(recall_suite.probe("snoop", 1)["cwd"])
    assert found["cwd"] != str(step1_cwd)
    assert found["step1_dir_exists"] is False
    assert step1_cwd.name not in found["parent_listing"]
    assert found["step1_dir_seen_among_siblings"] == []
    assert str(hunt.basetemp) in found["roots"]
    assert "/tmp" in found["roots"]
    assert found["files_scanned"] > 0
    # The hunt is bounded (a big /tmp is searched as far as the budget goes), but every place this
    # run writes was searched whole: the basetemp, the temp dir, the scope, and each recall-* folder.
    ours = [root for root in found["roots"] if root not in ("/tmp", f"/tmp/pytest-of-{getpass.getuser()}")]
    assert {root: found["complete"][root] for root in ours} == dict.fromkeys(ours, True)
    assert found["skipped"] == [str(hunt.case_dir.resolve())]
    hits = {label: found["hits"][str(index)] for index, label in enumerate(LABELS)}
    assert hits == {label: [] for label in LABELS}
    result.assert_outcomes(passed=1)


def test_the_hunt_finds_stray_copies_so_a_clean_result_means_something(recall_suite, monkeypatch):
    """The control: the same hunt does find the secrets when copies sit where it looks."""
    hunt = plant_and_hunt_case(recall_suite, monkeypatch)
    (recall_suite.pytester.path / "stray-prompt.txt").write_text(hunt.step1_prompt)
    (hunt.basetemp / "stray-marker.txt").write_text(hunt.marker)

    result = run_hunt(recall_suite, hunt)

    found = recall_suite.probe("snoop", 2)
    assert [Path(hit).name for hit in found["hits"]["0"]] == ["stray-prompt.txt"]
    assert [Path(hit).name for hit in found["hits"]["2"]] == ["stray-marker.txt"]
    result.assert_outcomes(failed=1)
