"""Issue 26, item 10: no kernel key outlives its session, serially, at once, in default mode and under bwrap.

The hostile agent (``tests/hostile/keyring.py``) adds a key holding the
answer to its keyring with permissions open to all, and looks for it in a
later step by name in ``/proc/keys`` and by id. Twelve cases at
``--recall-concurrency=4`` gave it 12 of 12 answers in default mode before the
seccomp filter; now ``add_key`` fails and no case finds a key.
"""

from __future__ import annotations

import json
import os
import platform
import struct
import sys
import uuid

import pytest
from test_session_hardening import KEYRING_DENIED, SANDBOX_ARGS, hostile, needs_bwrap

from pytest_recall.sessions import seccomp

CASES = 12
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in seccomp.KEYRING_SYSCALLS,
    reason="the keyring filter is for Linux on x86-64 and AArch64",
)


def keyring_suite(pytester: pytest.Pytester) -> None:
    for number in range(CASES):
        folder = pytester.path / "cases" / "suite" / f"case_{number:02d}"
        folder.mkdir(parents=True)
        answer = f"{48000 + number}.57"
        (folder / "step1.txt").write_text(f"Remember the balance {answer}.", encoding="utf-8")
        (folder / "step2.txt").write_text("What was the balance?", encoding="utf-8")
        expected = {"id": folder.name, "category": "recall", "answer": answer, "answer_kind": "money"}
        (folder / "answer.json").write_text(json.dumps(expected), encoding="utf-8")


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize(
    ("ring", "args"),
    [
        pytest.param("session", ("--recall-concurrency=4",), id="session-keyring-default-mode-concurrent"),
        pytest.param("session", (), id="session-keyring-default-mode-serial"),
        pytest.param("user", ("--recall-concurrency=4",), id="user-keyring-default-mode-concurrent"),
        pytest.param(
            "session",
            ("--recall-concurrency=4", *SANDBOX_ARGS),
            id="session-keyring-bwrap-concurrent",
            marks=needs_bwrap,
        ),
    ],
)
def test_no_case_reads_a_key_any_session_added(pytester: pytest.Pytester, args: tuple[str, ...], ring: str) -> None:
    keyring_suite(pytester)
    name = f"recall-hostile-{uuid.uuid4().hex[:12]}"
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        f"--recall-cmd={hostile('keyring', name, ring)}",
        f"--recall-report={pytester.path / 'report.json'}",
        *args,
        timeout=240,
    )
    cases = json.loads((pytester.path / "report.json").read_text())["cases"]
    assert len(cases) == CASES
    firsts = {c["steps"][0]["stdout"].strip() for c in cases}
    assert firsts == {KEYRING_DENIED}, firsts
    found = [c["id"] for c in cases if c["steps"][-1]["stdout"].strip() != "NOTFOUND"]
    assert found == [], found
    assert sum(c["score"] for c in cases) == 0


# -- the filter program itself, run by a small classic-BPF interpreter ----------------------------


def run_filter(program: bytes, arch: int, nr: int) -> int:
    """What the kernel would return for a call ``nr`` through ABI ``arch`` (only the opcodes the filter uses)."""
    data = struct.pack("iI", nr, arch)
    instructions = [struct.unpack("HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = instructions[pc]
        if code == seccomp.BPF_LD_W_ABS:
            accumulator = struct.unpack_from("I", data, k)[0]
        elif code == seccomp.BPF_AND_K:
            accumulator &= k
        elif code == seccomp.BPF_JEQ_K:
            pc += jt if accumulator == k else jf
        elif code == seccomp.BPF_RET_K:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
        pc += 1


DENY = seccomp.SECCOMP_RET_ERRNO | seccomp.DENIED_ERRNO
FILTER_TABLE = [
    # machine, ABI, syscall number, expected action
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, 248, DENY),  # add_key
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, 249, DENY),  # request_key
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, 250, DENY),  # keyctl
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, 0, seccomp.SECCOMP_RET_ALLOW),  # read
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, 219, seccomp.SECCOMP_RET_ALLOW),  # aarch64's keyctl is something else here
    ("x86_64", seccomp.AUDIT_ARCH_X86_64, seccomp.X32_SYSCALL_BIT | 250, DENY),  # keyctl through x32
    ("x86_64", seccomp.AUDIT_ARCH_I386, 288, DENY),  # keyctl through int 0x80
    ("x86_64", seccomp.AUDIT_ARCH_I386, 250, seccomp.SECCOMP_RET_ALLOW),  # madvise on i386
    ("x86_64", seccomp.AUDIT_ARCH_AARCH64, 219, seccomp.SECCOMP_RET_KILL_PROCESS),  # an ABI the machine lacks
    ("aarch64", seccomp.AUDIT_ARCH_AARCH64, 217, DENY),
    ("aarch64", seccomp.AUDIT_ARCH_AARCH64, 218, DENY),
    ("aarch64", seccomp.AUDIT_ARCH_AARCH64, 219, DENY),
    ("aarch64", seccomp.AUDIT_ARCH_AARCH64, 250, seccomp.SECCOMP_RET_ALLOW),
    ("aarch64", seccomp.AUDIT_ARCH_ARM, 311, DENY),
    ("aarch64", seccomp.AUDIT_ARCH_X86_64, 250, seccomp.SECCOMP_RET_KILL_PROCESS),
]


@pytest.mark.parametrize(("machine", "arch", "nr", "action"), FILTER_TABLE)
def test_the_filter_checks_the_abi_before_the_number(machine: str, arch: int, nr: int, action: int) -> None:
    program = seccomp.keyring_filter(machine)
    assert program is not None
    assert run_filter(program, arch, nr) == action


def test_an_unknown_architecture_gets_no_filter_and_says_why() -> None:
    assert seccomp.keyring_filter("sparc64") is None


@linux_only
def test_the_harness_keeps_its_own_keyring() -> None:
    """Only the spawning thread carries the filter: pytest and the user's tests keep keyctl."""
    assert seccomp.unavailable_reason() is None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = {"x86_64": 250, "aarch64": 219}[platform.machine()]
    # KEYCTL_GET_KEYRING_ID of the session keyring: works unless the caller is filtered.
    assert libc.syscall(keyctl, 0, -3, 0) >= 0 or ctypes.get_errno() != seccomp.DENIED_ERRNO
    child = seccomp.run_confined(
        lambda: os.posix_spawn(
            sys.executable,
            [sys.executable, "-c", f"import ctypes,sys;l=ctypes.CDLL(None);sys.exit(l.syscall({keyctl},0,-3,0)!=-1)"],
            os.environ,
        )
    )
    assert os.waitpid(child, 0)[1] == 0
