"""``--recall-home=case``: an agent that keeps memory under ``~`` cannot mix up cases.

The agent is ``tests/agents/home_memory_agent.py``: its notes live in
``~/.home_memory_agent/notes.txt`` and it answers only when it holds exactly
one note. Inner runs get pytester's directory as HOME, never the real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

PARALLEL = {"concurrency": ("--recall-concurrency=4",), "xdist": ("-n", "2")}
XDG = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}


def add_cases(recall_suite: Any, count: int = 4) -> None:
    for number in range(1, count + 1):
        value = f"{number}{number}.{number}{number}"
        recall_suite.add(f"case_{number:02d}", [f"REMEMBER {value}", "RECALL"], answer=value)


def seen_env(record: dict[str, Any]) -> list[dict[str, Any]]:
    """What each step saw, as the agent printed it on stderr."""
    return [json.loads(step["stderr"].strip().splitlines()[0]) for step in record["steps"]]


@pytest.mark.parametrize("parallel", PARALLEL.values(), ids=PARALLEL.keys())
def test_cases_sharing_the_user_home_cross_talk(recall_suite, parallel):
    add_cases(recall_suite)

    result = recall_suite.run(*parallel, "--recall-home=user", command=recall_suite.agent("home_memory_agent"))

    # Notes pile up in one HOME: every case but the first to answer sees another's note.
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    assert (recall_suite.pytester.path / ".home_memory_agent" / "notes.txt").exists()


@pytest.mark.parametrize("parallel", [(), *PARALLEL.values()], ids=["serial", *PARALLEL.keys()])
def test_a_home_per_case_keeps_parallel_cases_apart(recall_suite, parallel):
    add_cases(recall_suite)

    result = recall_suite.run(*parallel, "--recall-home=case", command=recall_suite.agent("home_memory_agent"))

    result.assert_outcomes(passed=4)
    assert not (recall_suite.pytester.path / ".home_memory_agent").exists(), "the user's HOME was written to"


@pytest.mark.parametrize("args", [(), ("--recall-home=case",)], ids=["default", "explicit"])
def test_case_home_and_xdg_dirs_live_beside_the_scope_shared_by_steps_distinct_per_case(recall_suite, args):
    add_cases(recall_suite, 2)

    recall_suite.run(*args, command=recall_suite.agent("home_memory_agent")).assert_outcomes(passed=2)

    homes = set()
    for record in recall_suite.report()["cases"]:
        first, second = seen_env(record)
        assert first == second, "both steps of a case see the same HOME"
        home = Path(first["HOME"])
        # Beside the scope, in the case's private area; never under its TMPDIR.
        assert home.parent == Path(first["RECALL_SCOPE_DIR"]).parent
        assert not home.is_relative_to(Path(first["TMPDIR"]))
        assert {var: first[var] for var in XDG} == {var: str(home / sub) for var, sub in XDG.items()}
        homes.add(home)
    assert len(homes) == 2


def test_user_home_is_left_alone_and_shared_only_when_asked_and_the_run_warns(recall_suite):
    add_cases(recall_suite, 1)

    result = recall_suite.run("--recall-home=user", command=recall_suite.agent("home_memory_agent"))

    result.assert_outcomes(passed=1)
    first, _ = seen_env(recall_suite.report()["cases"][0])
    assert first["HOME"] == str(recall_suite.pytester.path)
    warning = "*WARNING --recall-home=user: memory an agent keeps in HOME is shared between cases*"
    result.stdout.fnmatch_lines([f"recall: {warning}", "recall: PASSED*", f"  {warning}"])


def test_home_copy_seeds_every_case_home_from_the_real_one(recall_suite):
    add_cases(recall_suite, 2)
    real_home = recall_suite.pytester.path
    (real_home / ".home_memory_agent_login").write_text("token")
    (real_home / ".config" / "agent").mkdir(parents=True)
    (real_home / ".config" / "agent" / "settings.toml").write_text("model = 'x'")
    agent = recall_suite.agent("home_memory_agent", "--need-login")

    without = recall_suite.run("--recall-home=case", command=agent)
    without.assert_outcomes(failed=2)

    copied = recall_suite.run(
        "--recall-home=case", "--recall-home-copy=.home_memory_agent_login, .config/agent", command=agent
    )
    copied.assert_outcomes(passed=2)


def test_a_missing_home_copy_names_it_in_one_line(recall_suite):
    add_cases(recall_suite, 1)

    result = recall_suite.run(
        "--recall-home=case", "--recall-home-copy=.claude.json", command=recall_suite.agent("home_memory_agent")
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    home = recall_suite.pytester.path
    result.stderr.fnmatch_lines(
        [f"ERROR: --recall-home-copy: {home}/.claude.json does not exist; create it or drop it"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--recall-home=shared",), "ERROR: --recall-home must be one of case, user, not 'shared'"),
        (("--recall-home=user", "--recall-home-copy=.x"), "ERROR: --recall-home-copy needs --recall-home=case*"),
        (
            ("--recall-home-copy=/etc/hostname",),
            "ERROR: --recall-home-copy: /etc/hostname is outside your HOME, so say where it goes: /etc/hostname:DEST*",
        ),
    ],
)
def test_bad_home_options_are_one_line_usage_errors(recall_suite, args, message):
    add_cases(recall_suite, 1)

    result = recall_suite.run(*args, command=recall_suite.agent("home_memory_agent"))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_home_options_have_ini_twins(recall_suite):
    add_cases(recall_suite, 2)
    (recall_suite.pytester.path / ".home_memory_agent_login").write_text("token")
    recall_suite.pytester.makeini("[pytest]\nrecall_home = case\nrecall_home_copy = .home_memory_agent_login\n")

    result = recall_suite.run("--recall-concurrency=2", command=recall_suite.agent("home_memory_agent", "--need-login"))

    result.assert_outcomes(passed=2)
