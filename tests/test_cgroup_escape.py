"""Issue 26, item 5: a root agent that moves a background process out of its session's cgroup.

``cgroup.kill`` kills only what is in the cgroup; a process that wrote its pid
into another cgroup's ``cgroup.procs`` is not. It still carries the session
token, so the token scan, which now runs after ``cgroup.kill`` too, finds it.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from test_session_hardening import hostile, survivors

from pytest_recall.sessions.cgroup import available as cgroups_available


@pytest.mark.skipif(os.getuid() != 0, reason="moving a process to the root cgroup needs root")
@pytest.mark.skipif(not cgroups_available(), reason="no writable cgroup v2 here")
def test_a_process_moved_out_of_its_cgroup_is_found_by_its_token_and_killed(pytester: pytest.Pytester) -> None:
    marker = f"escaper-{uuid.uuid4().hex[:12]}"
    for number in range(2):
        folder = pytester.path / "cases" / "suite" / f"case_{number}"
        folder.mkdir(parents=True)
        (folder / "step1.txt").write_text("Say 1.00", encoding="utf-8")
        (folder / "step2.txt").write_text("Say 12345.67", encoding="utf-8")
        expected = {"id": folder.name, "category": "recall", "answer": "12345.67", "answer_kind": "money"}
        (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")
    try:
        pytester.runpytest_subprocess(
            "-p",
            "no:cacheprovider",
            f"--recall-cmd={hostile('escaper', marker, 'cgroup-move')}",
            f"--recall-report={pytester.path / 'report.json'}",
            timeout=120,
        )
        alive = survivors(marker)
    finally:
        survivors(marker, settle_s=0)
    assert alive == [], f"{len(alive)} processes that left their cgroup outlived their sessions"
    cases = json.loads((pytester.path / "report.json").read_text())["cases"]
    assert [step["killed_leftovers"] for case in cases for step in case["steps"]] == [1, 1, 1, 1]
