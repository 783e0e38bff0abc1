"""A network namespace of its own for each sandboxed session, through pasta (from Debian's passt).

Concurrent sessions that share a network namespace share its abstract UNIX
sockets and its loopback, so one session can keep another case's secret for
it. pasta gives a namespace user-mode networking: outbound connections leave
through the host's stack, and the host's loopback ports answer on the
namespace's loopback, where agents find a local model server.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Literal

Network = Literal["private", "host", "none"]
PROBE_TIMEOUT_SECONDS = 15.0


def in_private_network(command: list[str]) -> list[str]:
    """``command`` run by pasta in a new network namespace.

    What pasta itself says (as root: that it could not map users, which it
    need not) would land in every session's stderr: it goes to /dev/null, and
    the command gets the real stderr back, kept on descriptor 3 meanwhile.
    :func:`check_pasta` has shown at configure time that pasta works here.
    """
    return [
        *("/bin/sh", "-c", 'exec 3>&2 2>/dev/null; exec "$@"', "sh", *pasta_argv(), "--"),
        *("/bin/sh", "-c", 'exec 2>&3 3>&-; exec "$@"', "sh", *command),
    ]


def pasta_argv() -> list[str]:
    """pasta (from passt): a new network namespace with user-mode networking for the command it runs.

    Outbound TCP and UDP go out through the host's stack (``--config-net``
    copies the host's addresses and routes); ``-T auto`` and ``-U auto`` make the
    host's loopback ports answer on the namespace's loopback, so a model server on
    the host's 127.0.0.1 is reached at the same address. Nothing is forwarded
    inwards (``-t none -u none``): a port a session listens on is seen by nobody,
    so two sessions cannot meet over the host's loopback either. As root, pasta
    would make a user namespace and switch to nobody, where bwrap cannot work:
    it keeps the harness's user namespace then (``--netns-only``, ``--runas 0``).
    """
    command = ["pasta", "--config-net", "--quiet", "--foreground", "-t", "none", "-u", "none", "-T", "auto"]
    command += ["-U", "auto"]
    if os.geteuid() == 0:
        command += ["--runas", "0", "--netns-only"]
    return command


@functools.cache
def check_pasta() -> str | None:
    """None when pasta can give a session a private network here; otherwise one line saying what to do."""
    pasta = shutil.which("pasta")
    if pasta is None:
        return "pasta not found on PATH: install passt (apt-get install passt / dnf install passt)"
    try:
        probe = subprocess.run(
            [*pasta_argv(), "--", "true"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"pasta at {pasta} could not run: {exc}"
    if probe.returncode == 0:
        return None
    detail = next((line.strip() for line in reversed(probe.stderr.splitlines()) if line.strip()), "")
    return f"pasta at {pasta} failed to make a network namespace: {detail or f'exit {probe.returncode}'}"
