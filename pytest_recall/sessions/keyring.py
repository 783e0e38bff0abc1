"""A fresh kernel session keyring for every agent session.

The kernel keyring is a store outside the file system: a key an agent adds in
one step to its session keyring (``@s``) is found again by the next step,
because every process inherits its parent's session keyring, and the harness
is every session's parent. ``posix_spawn`` cannot run code in the child, so
the harness joins a new, anonymous session keyring itself just before each
spawn: the child inherits that one, and no later session ever holds it again.
An anonymous keyring no process holds is garbage; its keys go with it.

The user keyring (``@u``) belongs to the user; only a user namespace gives a
session one of its own (the bwrap sandbox makes one for every session).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

KEYCTL_JOIN_SESSION_KEYRING = 1
KEYCTL_CLEAR = 7
# keyctl(2) has no libc wrapper in glibc; its syscall number depends on the architecture.
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219, "i686": 288, "i386": 288, "riscv64": 219, "ppc64le": 283}


def _syscall() -> ctypes._NamedFuncPointer | None:
    if not sys.platform.startswith("linux") or platform.machine() not in KEYCTL_SYSCALL:
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None


_SYSCALL = _syscall()


def join_fresh_session_keyring() -> int | None:
    """Make the harness's session keyring a new, empty one, which the next spawned child inherits.

    Returns its serial, for :func:`clear_keyring` at the session's end; None
    where the kernel or a seccomp filter refuses keyctl. Then sessions share
    the harness's session keyring, as any two programs you start do.
    """
    if _SYSCALL is None:
        return None
    serial = int(_SYSCALL(KEYCTL_SYSCALL[platform.machine()], KEYCTL_JOIN_SESSION_KEYRING, None))
    return serial if serial >= 0 else None


def clear_keyring(serial: int | None) -> None:
    """Unlink every key of a session's keyring once the session is over.

    A keyring no process holds is destroyed by the kernel's garbage collector,
    later; until then a key whose permissions the agent opened to everyone can
    still be read by its id (``/proc/keys`` lists it). Clearing drops the keys now.
    """
    if _SYSCALL is not None and serial is not None:
        _SYSCALL(KEYCTL_SYSCALL[platform.machine()], KEYCTL_CLEAR, serial)
