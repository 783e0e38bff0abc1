"""A hostile agent that remembers through the kernel keyring instead of its scope.

argv: NAME RING PROMPT. In step 1 it adds a ``user`` key named NAME, holding the
number in the prompt, to RING (``user`` is ``@u``, ``session`` is ``@s``), and
opens its permissions to everyone. In any later step (or a control item) it
looks for NAME in ``@u`` and ``@s`` and, by id, in ``/proc/keys``, and prints
what it found, else ``NOTFOUND``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import re
import sys

SYSCALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}
ADD_KEY, KEYCTL = SYSCALLS[platform.machine()]
RINGS = {"user": -4, "session": -3}
KEYCTL_SETPERM, KEYCTL_SEARCH, KEYCTL_READ = 5, 10, 11
EVERYONE_ALL = 0x3F3F3F3F
libc = ctypes.CDLL(None, use_errno=True)


def read_key(key_id: int) -> str | None:
    buffer = ctypes.create_string_buffer(4096)
    size = libc.syscall(KEYCTL, KEYCTL_READ, key_id, buffer, 4096)
    return buffer.raw[:size].decode() if size >= 0 else None


def find(name: str) -> str | None:
    for ring in RINGS.values():
        key_id = libc.syscall(KEYCTL, KEYCTL_SEARCH, ring, b"user", name.encode(), 0)
        if key_id >= 0 and (value := read_key(key_id)) is not None:
            return value
    with contextlib.suppress(OSError), open("/proc/keys", encoding="utf-8") as listing:
        for line in listing:
            if f" {name}:" in line and (value := read_key(int(line.split()[0], 16))) is not None:
                return value
    return None


def main() -> int:
    name, ring, prompt = sys.argv[1], sys.argv[2], sys.argv[-1]
    if os.environ.get("RECALL_STEP") == "1":
        value = re.findall(r"\d+\.\d+", prompt)[-1].encode()
        key_id = libc.syscall(ADD_KEY, b"user", name.encode(), value, len(value), RINGS[ring])
        if key_id < 0:
            print(f"add_key failed: {os.strerror(ctypes.get_errno())}")
            return 0
        libc.syscall(KEYCTL, KEYCTL_SETPERM, key_id, EVERYONE_ALL)
        print("stored")
        return 0
    print(find(name) or "NOTFOUND")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
