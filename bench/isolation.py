"""The least the isolation can cost: the harness's session mechanisms, one by one, in a bare loop beside the floor.

``overhead.py`` holds the harness to 1.5x a bare ``subprocess.run`` loop in
CPU. This script says how much of that budget the isolation itself needs,
apart from the harness's Python around it and from pytest. It runs the same
two-session cases as ``overhead.py``'s floor (``/bin/echo 1234.56``), each
way a plain loop in this process, adding one mechanism a row:

- lean spawn: ``posix_spawn`` on pipes, in a ``mkdir``-ed folder, as the harness spawns;
- + pty: the session's terminal (``openpty``, echo off, the window size, opened by name);
- + filtered thread: the spawn handed to the harness's thread that carries the keyring filter;
- + cgroup: born in a slot cgroup, as the harness does, where cgroups can be used here;
- + event loop: the pty, the stderr pipe and a pidfd watched with ``epoll``;
- + all folders: a case's area, scope and HOME, and each step's own TMPDIR besides its workdir.

The mechanisms are the harness's own (``run_confined``, ``SessionCgroup``,
the terminal set-up of ``spawn.py``); only the loop around them is bare.
Then pytest's own share of a design with one item a case folder: a run of a
plugin that collects each case folder as a ``pytest.Directory`` holding one
item that does nothing. Each figure is the marginal CPU of one case (this
process and the agents, or the pytest run), the best of ``--repeat``
interleaved rounds, against the floor measured in the same rounds. The last
row is the room the 1.5x goal leaves for the rest of the harness: reading
the case, the event loop, the judge, the record and the report.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    ANSWER,
    Row,
    Timing,
    best_timings,
    clock_of,
    ms,
    parse_args,
    print_table,
    pytest_argv,
    ratio_of,
    run_checked,
    scratch,
    write_trivial_cases,
)
from overhead import ECHO_CPU_RATIO_SHOWN, floor_case, floor_env

from pytest_recall.sessions.cgroup import SessionCgroup
from pytest_recall.sessions.cgroup import available as cgroup_available
from pytest_recall.sessions.seccomp import run_confined
from pytest_recall.sessions.spawn import _open_terminal

ARGV = ["/bin/echo", ANSWER]
SIZES, QUICK_SIZES = (40, 400), (4, 12)
Case = Callable[[Path], None]
# pytest's own share: each case folder a Directory with one item that does nothing, as pytest_recall collects it.
NOOP_PLUGIN = """
import pytest

class NoopItem(pytest.Item):
    def runtest(self):
        pass

class CaseFolder(pytest.Directory):
    def collect(self):
        yield NoopItem.from_parent(self, name="recall")

def pytest_collect_directory(path, parent):
    if (path / "answer.json").is_file():
        return CaseFolder.from_parent(parent, path=path)
"""


def lean_case(*, pty: bool, thread: bool, cgroup: bool, event_loop: bool, all_folders: bool) -> Case:
    """One two-step case with the chosen mechanisms, in folders under ``where``."""
    env = floor_env()

    def run(where: Path) -> None:
        base = str(where)
        case_folders = ["area", "area/scope", "area/home"] if all_folders else ["scope"]
        for name in case_folders:
            os.mkdir(os.path.join(base, name), 0o700)
        for _ in range(2):
            step_folders = ["work", "tmp"] if all_folders else ["work"]
            for name in step_folders:
                os.mkdir(os.path.join(base, name), 0o700)
            _session(os.path.join(base, "work"), env, pty=pty, thread=thread, cgroup=cgroup, event_loop=event_loop)
            for name in step_folders:
                os.rmdir(os.path.join(base, name))
        for name in reversed(case_folders):
            os.rmdir(os.path.join(base, name))

    return run


def _session(cwd: str, env: dict[str, str], *, pty: bool, thread: bool, cgroup: bool, event_loop: bool) -> bytes:
    err_read, err_write = os.pipe()
    if pty:
        out_read, slave, _eof = _open_terminal()
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_OPEN, 1, os.ttyname(slave), os.O_RDWR, 0)]
    else:
        out_read, slave = os.pipe()
        actions = [(os.POSIX_SPAWN_DUP2, slave, 1)]
    actions += [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, err_write, 2)]

    def spawn() -> int:
        home = os.open(".", os.O_PATH | os.O_DIRECTORY)
        os.chdir(cwd)
        try:
            return os.posix_spawn(ARGV[0], ARGV, env, file_actions=actions, setsid=True)
        finally:
            os.fchdir(home)
            os.close(home)

    slot = SessionCgroup.create() if cgroup else None
    with slot.entered() if slot is not None else contextlib.nullcontext():
        pid = run_confined(spawn) if thread else spawn()
    os.close(slave)
    os.close(err_write)
    out = _read_until_exit(pid, out_read, err_read) if event_loop else _read_all(out_read)
    os.waitpid(pid, 0)
    os.close(out_read)
    os.close(err_read)
    if slot is not None:
        slot.pids()
        slot.remove()
    return out


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # a pty whose other side closed reads as EIO
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _read_until_exit(pid: int, out_fd: int, err_fd: int) -> bytes:
    pidfd = os.pidfd_open(pid)
    poller = select.epoll()
    for fd in (out_fd, err_fd, pidfd):
        poller.register(fd, select.EPOLLIN)
    os.set_blocking(out_fd, False)
    chunks = []
    exited = False
    while not exited:
        for fd, _ in poller.poll(5):
            if fd == pidfd:
                exited = True
            elif fd == err_fd:
                os.read(err_fd, 1 << 16)
                poller.unregister(err_fd)
            else:
                try:
                    chunks.append(os.read(out_fd, 1 << 16))
                except BlockingIOError:
                    pass
                except OSError:
                    poller.unregister(out_fd)
    poller.close()
    os.close(pidfd)
    os.set_blocking(out_fd, True)
    return b"".join(chunks) + _read_all(out_fd)


# Each row adds the next mechanism to those above it.
MECHANISMS = {
    "+ pty": "pty",
    "+ filtered thread": "thread",
    "+ cgroup": "cgroup",
    "+ event loop": "event_loop",
    "+ all folders": "all_folders",
}
WAYS: dict[str, dict[str, bool]] = {
    way: {flag: index < added for index, flag in enumerate(MECHANISMS.values())}
    for added, way in enumerate(["lean spawn", *MECHANISMS])
}


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    small, large = QUICK_SIZES if args.quick else SIZES
    env = floor_env()
    with scratch("isolation") as work:
        case_folder = work / "case"
        case_folder.mkdir()
        for number in (1, 2):
            (case_folder / f"step{number}.txt").write_text("What was the value?\n")
        ways: dict[str, Case] = {name: lean_case(**flags) for name, flags in WAYS.items()}

        def timing(way: str, count: int) -> Callable[[], Timing]:
            one_case: Callable[[], object]
            if way == "floor":
                one_case = functools.partial(floor_case, case_folder, ARGV, env)
            else:
                one_case = functools.partial(ways[way], Path(tempfile.mkdtemp(dir=work)))

            def cases() -> None:
                for _ in range(count):
                    one_case()

            return clock_of(cases)

        plugin_folder = work / "plugin"
        plugin_folder.mkdir()
        (plugin_folder / "recall_noop_items.py").write_text(NOOP_PLUGIN, encoding="utf-8")
        suites = {n: write_trivial_cases(work / f"suite-{n}", n) for n in (small, large)}
        pytest_env = dict(os.environ, PYTHONPATH=str(plugin_folder), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        variants = {f"{way} {n}": timing(way, n) for way in ["floor", *ways] for n in (small, large)}
        for n, suite in suites.items():
            argv = pytest_argv(suite, "-p", "recall_noop_items")
            variants[f"pytest {n}"] = clock_of(run_checked, argv, env=pytest_env)
        best = best_timings(variants, args.repeat)
    names = ["floor", *ways, "pytest"]
    cost = {way: (best[f"{way} {large}"].cpu - best[f"{way} {small}"].cpu) / (large - small) for way in names}
    floor = cost["floor"]
    rows = [
        Row(f"{way}, cpu a case", ms(cost[way]), (ms(floor),), "way/floor", ratio_of(cost[way], floor), "")
        for way in ways
    ]
    design = cost["+ all folders"] + cost["pytest"]
    room = ECHO_CPU_RATIO_SHOWN * floor - design
    rows += [
        Row(
            "pytest's own: a Directory and a no-op item",
            ms(cost["pytest"]),
            (ms(floor),),
            "pytest/floor",
            ratio_of(cost["pytest"], floor),
            "",
        ),
        Row("isolation and pytest's own", ms(design), (ms(floor),), "way/floor", ratio_of(design, floor), ""),
        Row(
            f"left for the rest under {ECHO_CPU_RATIO_SHOWN:g}x",
            ms(room),
            (ms(floor),),
            "room/floor",
            ratio_of(room, floor),
            "case, event loop, judge, record, report",
        ),
    ]
    title = f"the isolation's own cost: marginal CPU of one two-session case, best of {args.repeat}"
    print_table(title, ["floor"], rows, first="this way")
    if not cgroup_available():
        print("no cgroup could be made here: the cgroup rows ran without one")


if __name__ == "__main__":
    main()
