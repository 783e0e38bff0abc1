"""Run one agent session inside a bubblewrap (``bwrap``) sandbox.

A memory test is only honest if the agent can remember through nothing but its
memory scope. Without a sandbox, an agent can read the case's expected answers,
read an earlier session's directory or transcript, or leave a daemon running that
carries state into the next session. The sandbox closes those channels:

* The root is a fresh, empty tmpfs. The agent sees only what is mounted into it:
  the system directories and the Python installation, read-only; a fresh ``/tmp``;
  and, read-write, its working directory, the case's scope, and the cost-file
  directory. Every bind sits at the same path inside as outside, so paths that
  the runner puts in argv or env stay valid. After the mounts, ``/`` is made read-only.
* HOME is ``spec.home``, bound read-write, when ``--recall-home=case``. Otherwise
  it is an empty tmpfs at the user's usual home path, dropped at session end. So the
  agent finds its usual ``~`` but none of the real home's files, which may hold earlier
  runs' output. The only entries in it are the mount points of read-only binds that
  live under the home, such as ``~/.pyenv/versions/3.11.7``.
* The sandbox has its own PID and IPC namespaces, and bwrap runs with ``--die-with-parent``.
  When the agent exits, or the runner kills bwrap, the kernel kills every process
  left in the namespace, including ``setsid`` daemons. SysV shared memory dies with it.
* ``--new-session`` stops TIOCSTI from pushing keystrokes into the harness's
  terminal. stdin, stdout and stderr are still the harness's pty, so output flows,
  but the agent has no controlling terminal: opening ``/dev/tty`` fails.
* All capabilities are dropped, and bwrap sets no_new_privs, so even root inside
  the sandbox cannot unmount a mask or mount the host's disks.
* The network is private by default: pasta (:mod:`pytest_recall.sessions.network`) gives every
  session a network namespace of its own with outbound access, because agents
  call their model APIs, and with the host's loopback ports, where a local model
  server listens. Abstract UNIX sockets belong to a network namespace, so
  concurrent sessions cannot meet there. ``host`` shares the harness's network;
  ``none`` gives none.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pytest_recall.sessions.network import Network, in_private_network

__all__ = ["SandboxMode", "SandboxSettings", "SandboxSpec", "check_bwrap", "default_binds", "wrap_argv"]

# Read-only system directories. Merged-/usr distributions make some of them symlinks,
# and those are recreated as symlinks. /usr/local lives under /usr.
SYSTEM_DIRS: tuple[Path, ...] = tuple(
    Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
)
# Resolver configuration that systemd-resolved or NetworkManager keeps under /run.
# Without it, DNS fails inside even though the network is shared.
ETC_FILES_LINKING_OUT: tuple[Path, ...] = (Path("/etc/resolv.conf"),)
PACKAGE_DIR = Path(__file__).parent.parent
# The wheel copies the suites here (pyproject's force-include), inside a directory we bind.
BUNDLED_CASES_DIR = PACKAGE_DIR / "bundled_cases"
# HOME to use when the real one is unusable as a mount point (for example "/").
FALLBACK_HOME = Path("/tmp/recall-home")
PROBE_TIMEOUT_SECONDS = 15.0

# How sessions are confined: by fresh processes and directories alone, or under bubblewrap too.
SandboxMode = Literal["none", "bwrap"]

_T = TypeVar("_T")
_MountKind = Literal["tmpfs", "ro", "hide", "rw"]
# Order for mounts at the same path. A later mount covers an earlier one: hiding beats
# a read-only bind, and the session's own read-write dirs beat everything.
_KIND_ORDER: dict[_MountKind, int] = {"tmpfs": 0, "ro": 1, "hide": 2, "rw": 3}


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """The run's choice of confinement: the mode, what agents may read besides the system, and their network."""

    mode: SandboxMode = "none"
    binds: tuple[Path, ...] = ()
    network: Network = "private"

    @property
    def on(self) -> bool:
        return self.mode != "none"


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """What one session may see. Every path is bound at the same path inside the sandbox.

    ``hide`` lists paths the agent must never see: the cases directory, the
    report, log and transcript directories, and pytest's basetemp. Nothing is
    visible unless it is bound, so hiding matters only when one of those paths lies
    inside a bind (for example ``--recall-sandbox-bind`` of a whole project). Then
    it is covered by an empty tmpfs, or for a file by /dev/null, which cannot be
    opened there (binds are nodev). Only paths that exist can be covered, so pass
    directories, not report files that are not written yet.
    """

    workdir: Path
    scope: Path
    home: Path | None
    binds: tuple[Path, ...]
    cost_file_dir: Path | None
    hide: tuple[Path, ...] = ()
    # "private": a network namespace of its own, given outbound access by pasta; "host": the harness's; "none".
    network: Network = "host"


@dataclass(frozen=True, slots=True)
class _Mount:
    kind: _MountKind
    path: Path

    def sort_key(self) -> tuple[int, int, str]:
        # bwrap mounts in argv order; parents first, so a deeper mount always lands on top.
        return (len(self.path.parts), _KIND_ORDER[self.kind], str(self.path))

    def argv(self) -> list[str]:
        path = str(self.path)
        if self.kind == "ro":
            return ["--ro-bind", path, path]
        if self.kind == "rw":
            return ["--bind", path, path]
        if self.kind == "hide" and not self.path.is_dir():
            return ["--ro-bind", "/dev/null", path]
        return ["--tmpfs", path]


def default_binds() -> tuple[Path, ...]:
    """The read-only paths that the running interpreter and pytest_recall need.

    That is the interpreter prefixes (a venv and its base installation), every
    site-packages, dist-packages, zip or egg entry on sys.path, and the
    ``pytest_recall`` package directory itself. Other sys.path entries are source
    trees: pytest's rootdir, or a repo root that an editable install adds through a
    ``.pth`` file. Binding one of those would expose the repo's ``cases/``, so we
    bind only the package directory, at its own path. An import from the repo root
    still resolves, and the rest of the repo stays hidden. Anything else the agent
    needs, such as its own source checkout, is added with ``--recall-sandbox-bind``.
    """
    prefixes = [Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)]
    installed = [Path(entry) for entry in sys.path if entry and _is_install_location(Path(entry), prefixes)]
    found = [path for path in (*prefixes, *installed, PACKAGE_DIR) if path.is_absolute() and path.exists()]
    # A symlinked prefix is reached by both spellings: the venv's python links to the real path.
    return unique(spelling for path in found for spelling in (path, Path(os.path.realpath(path))))


def wrap_argv(argv: Sequence[str], spec: SandboxSpec) -> list[str]:
    """The bwrap command line that runs argv in the sandbox that spec describes.

    Raises ValueError, with one line naming the path, when a path to bind does not
    exist. A missing ``--recall-sandbox-bind`` is a typo to fix, and skipping it would
    only make the agent fail later, inside the sandbox, with a less clear error.
    """
    __tracebackhide__ = True
    if not argv:
        raise ValueError("sandbox: nothing to run, the agent argv is empty")
    read_write = [
        _existing(spec.workdir, "session workdir"),
        _existing(spec.scope, "memory scope dir (RECALL_SCOPE_DIR)"),
    ]
    if spec.home is not None:
        read_write.append(_existing(spec.home, "case HOME (--recall-home=case)"))
    if spec.cost_file_dir is not None:
        read_write.append(_existing(spec.cost_file_dir, "RECALL_COST_FILE directory"))
    user_binds = [_existing(path, "--recall-sandbox-bind path") for path in spec.binds]
    usual_home = _usual_home()
    home = spec.home if spec.home is not None else usual_home
    # With a case HOME, the usual home is not mounted at all; cover it in case a bind reaches it.
    hide = [*spec.hide, BUNDLED_CASES_DIR] if spec.home is None else [*spec.hide, BUNDLED_CASES_DIR, usual_home]

    system_links, read_only = _system_dirs()
    read_only += [*_resolver_dirs(), *default_binds(), *user_binds]
    read_only = [path for path in unique(read_only) if not _covered_by(path, read_only)]
    spellings = [spelling for path in unique(map(absolute_path, hide)) for spelling in _spellings(path, read_only)]
    hidden = [path for path in unique(spellings) if _must_hide(path, read_only)]

    mounts = [_Mount("tmpfs", Path("/tmp"))]
    if spec.home is None:
        mounts.append(_Mount("tmpfs", home))
    mounts += [_Mount("ro", path) for path in read_only]
    mounts += [_Mount("hide", path) for path in hidden]
    mounts += [_Mount("rw", path) for path in unique(read_write)]

    # A user namespace even as root (where bwrap makes none unless asked): a user keyring of its own.
    command = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    command += ["--cap-drop", "ALL"]
    if spec.network == "none":
        command.append("--unshare-net")
    for link in system_links:
        command += ["--symlink", os.readlink(link), str(link)]
    command += ["--proc", "/proc", "--dev", "/dev"]
    for mount in sorted(unique(mounts), key=_Mount.sort_key):
        command += mount.argv()
    command += ["--remount-ro", "/", "--chdir", str(read_write[0])]
    # Host values would point at paths that do not exist inside.
    command += ["--setenv", "HOME", str(home), "--setenv", "TMPDIR", "/tmp"]
    if spec.network == "private":
        return in_private_network([*command, "--", *argv])
    return [*command, "--", *argv]


@functools.cache
def check_bwrap() -> str | None:
    """None when bwrap can build our sandbox here. Otherwise one line: what is wrong and how to fix it.

    The check runs a real ``true`` through wrap_argv, because a bwrap binary can
    be present and still be unable to create namespaces. The result is cached for
    the process: the answer does not change between sessions, and the probe forks.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap not found on PATH: install bubblewrap (apt-get install bubblewrap / dnf install bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="recall-bwrap-probe-") as probe_dir:
        spec = SandboxSpec(workdir=Path(probe_dir), scope=Path(probe_dir), home=None, binds=(), cost_file_dir=None)
        try:
            probe = subprocess.run(
                wrap_argv(["true"], spec), capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap at {bwrap} could not run a sandbox: {exc}"
    if probe.returncode == 0:
        return None
    detail = next((line.strip() for line in probe.stderr.splitlines() if line.strip()), f"exit {probe.returncode}")
    if any(word in detail.lower() for word in ("namespace", "permission", "not permitted", "uid map")):
        return (
            f"bwrap cannot create namespaces here ({detail}): allow unprivileged user namespaces"
            " (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+"
            " kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap),"
            " or in a container add CAP_SYS_ADMIN (--privileged) or an unconfined seccomp profile"
        )
    return f"bwrap at {bwrap} failed to start a sandbox: {detail}"


def _existing(path: Path, what: str) -> Path:
    __tracebackhide__ = True
    absolute = absolute_path(path)
    if not absolute.exists():
        raise ValueError(f"sandbox: {what} does not exist: {absolute} (create it or fix the path)")
    return absolute


def absolute_path(path: Path) -> Path:
    """abspath, not resolve: a bind must sit at the spelling the agent is given."""
    return Path(os.path.abspath(path))


def _is_install_location(entry: Path, prefixes: Sequence[Path]) -> bool:
    if entry.name in ("site-packages", "dist-packages") or entry.suffix == ".egg" or entry.is_file():
        return True
    return any(_within(entry, prefix) for prefix in prefixes)


def _system_dirs() -> tuple[list[Path], list[Path]]:
    """The system directories to recreate as symlinks, and those to bind read-only.

    A merged-/usr link such as /bin -> usr/bin stays a link, so the agent sees the
    same layout as the host. A link that leads outside the bound system directories
    is bound as a directory instead, so that it does not dangle inside.
    """
    plain = [path for path in SYSTEM_DIRS if path.is_dir() and not path.is_symlink()]
    links: list[Path] = []
    for path in SYSTEM_DIRS:
        if path.is_symlink() and path.exists():
            inside = any(_within(Path(os.path.realpath(path)), bound) for bound in plain)
            (links if inside else plain).append(path)
    return links, plain


def _resolver_dirs() -> list[Path]:
    """The directories that hold the real targets of resolver files that /etc links out of itself."""
    targets = [Path(os.path.realpath(link)) for link in ETC_FILES_LINKING_OUT if link.is_symlink()]
    return [target.parent for target in targets if target.exists()]


def _usual_home() -> Path:
    """The user's home path, unless mounting a tmpfs over it would hide the system (a home of "/", say)."""
    home = absolute_path(Path.home())
    if home == Path("/") or any(_within(system_dir, home) for system_dir in SYSTEM_DIRS):
        return FALLBACK_HOME
    return home


def _spellings(path: Path, binds: Iterable[Path]) -> list[Path]:
    """Every path at which ``path`` shows inside the sandbox.

    That is the spelling given, its real path, and its place under each bind
    that reaches it through another spelling (a bind of ``real`` shows the cases
    given to pytest as ``link/cases`` at ``real/cases``, and the other way round).
    """
    real = Path(os.path.realpath(path))
    found = [path, real]
    for bind in binds:
        bind_real = Path(os.path.realpath(bind))
        if _within(real, bind_real):
            found.append(bind / real.relative_to(bind_real))
    return found


def _must_hide(path: Path, read_only: Iterable[Path]) -> bool:
    # Compare real paths: /lib/x is inside the /usr bind when /lib links to usr/lib.
    real = Path(os.path.realpath(path))
    return path.exists() and any(_within(real, Path(os.path.realpath(bound))) for bound in read_only)


def _covered_by(path: Path, others: Iterable[Path]) -> bool:
    """True when a strict ancestor already binds path read-only, at the same path, with the same content."""
    return any(other != path and _within(path, other) for other in others)


def _within(path: Path, ancestor: Path) -> bool:
    return path == ancestor or ancestor in path.parents


def unique(items: Iterable[_T]) -> tuple[_T, ...]:
    """The items in their first order, each once."""
    return tuple(dict.fromkeys(items))
