"""The folders a run makes in TMPDIR, and the removal of those a killed run left behind.

A harness killed with SIGKILL (by a user, the OOM killer, a CI timeout)
never reaches its cleanup: its case areas, step folders and shared memories
stay in TMPDIR with all its agents wrote into them, and nothing would ever
remove them. So each harness process holds a lock file there,
``recall-run-<id>.lock``, with an ``flock`` that the kernel lets go of
however the process ends, and names every folder it makes
``recall-<kind>-<id>-<number>``. Before its first folder, a process looks at
the lock files in TMPDIR: one it can lock belongs to a process that is gone,
so that run's folders are removed (by :func:`remove_agent_tree`, which
follows no link) and then its lock file. A run lets its own lock file go
when its cases are done and its last folder is gone. A live run's lock cannot be taken,
so nothing of it is touched; folders without an id (an older version's) are
never touched either. A lock is checked by the file, not by a pid, so a run
in another pid namespace that shares this TMPDIR is not taken for dead.

Only a lock file whose id has the form a run id has (:data:`RUN_ID`) is
acted on, and only the folders whose id part is exactly that id go: a file
an agent names ``recall-run-case.lock`` would otherwise make ``case`` a run
id whose folders are all ``recall-case-...`` folders, a live run's included.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import os
import re
import secrets
import stat
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.sessions.agent_tree import remove_agent_tree

LOCK_PREFIX = "recall-run-"
LOCK_SUFFIX = ".lock"
# A lock file is made under a name no sweep looks at, locked, then renamed: no sweep ever finds it unlocked.
_CLAIMING = ".recall-run-claiming-"
# A run id: the eight characters ``mkstemp`` adds to the claiming name (or the hex of a claim with no lock file).
RUN_ID = re.compile(r"[a-z0-9_]{8}")
# A run's folder: ``recall-<kind>-<id>-<number>``, or ``mkdtemp``'s eight characters in place of the number.
_FOLDER = re.compile(r"recall-[a-z0-9_-]+-(?P<id>[a-z0-9_]{8})-(?:[0-9]+|[a-z0-9_]{8})")


@dataclass(frozen=True, slots=True)
class _Claim:
    """A run id of this process in one TMPDIR, and the locked descriptor of its lock file (None: no lock)."""

    identity: str
    lock: str
    fd: int | None


# Numbers for the folders a run makes; how many taken names made_folder steps over before it lets mkdtemp choose.
_folder_numbers = itertools.count()
NUMBERED_TRIES = 100

# This process's claim in each TMPDIR it made folders in (a forked child makes its own: the key holds the pid).
_claims: dict[tuple[int, str], _Claim] = {}
_claims_lock = threading.Lock()
# The path prefix of each kind of folder, by (pid, tempfile.tempdir, kind), while the run's claim holds.
_prefixes: dict[tuple[int, str | None, str], str] = {}


def made_folder(kind: str) -> Path:
    """A new folder (mode 0700) in TMPDIR, named so that a later run can remove it if this one is killed.

    Numbered, not named by ``mkdtemp``'s random letters, which cost more
    Python than the ``mkdir`` itself (a run makes three folders a case): the
    run id (random, and locked by this run) already makes the name this
    run's own, and ``mkdir`` refuses a name that exists in any form (a
    folder, a file, a link put there), so a name taken only costs the next number.
    """
    prefix = _prefixes.get((os.getpid(), tempfile.tempdir, kind))
    if prefix is None:
        # Worked out once a kind: it asks for the run id, which takes a lock. A release forgets it.
        prefix = os.path.join(tempfile.gettempdir(), folder_prefix(kind))
        _prefixes[(os.getpid(), tempfile.tempdir, kind)] = prefix
    for _ in range(NUMBERED_TRIES):
        path = f"{prefix}{next(_folder_numbers)}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return Path(path)
    return Path(tempfile.mkdtemp(prefix=folder_prefix(kind)))


def folder_prefix(kind: str) -> str:
    """The name a folder of this run starts with: ``recall-<kind>-<id>-``."""
    return f"recall-{kind}-{run_id()}-"


def run_id() -> str:
    """This process's run id in TMPDIR, claimed the first time it is asked, after the dead runs there are removed."""
    tmp = tempfile.gettempdir()
    # A forked child is a process of its own: the parent's lock is not its to hold.
    key = (os.getpid(), tmp)
    with _claims_lock:
        claim = _claims.get(key)
        if claim is None:
            remove_dead_runs(tmp)
            claim = _claims[key] = _claim(tmp)
        return claim.identity


def release_run() -> None:
    """Let this run's lock files go, where no folder of the run is left: the run's folders are all removed.

    Called when the cases are done, since a process may end without ``atexit``
    (an xdist worker stopped by a signal ends with ``os._exit``); ``atexit``
    tries again for what was still there. A folder made after this claims anew.
    """
    with _claims_lock:
        for key in [key for key in _claims if key[0] == os.getpid()]:
            claim = _claims[key]
            if claim.fd is None or _folders_of(key[1], claim.identity):
                continue  # an agent's leftover the harness could not remove: the lock keeps it for a later sweep
            with contextlib.suppress(OSError):
                os.unlink(claim.lock)
            os.close(claim.fd)
            del _claims[key]
            _prefixes.clear()


def _claim(tmp: str) -> _Claim:
    try:
        fd, claiming = tempfile.mkstemp(prefix=_CLAIMING, dir=tmp)
    except OSError:
        # No lock file can be made (a TMPDIR that cannot be written, say): the folders, if any can be made,
        # carry an id no lock names, so no sweep ever takes them; the failure is met where a folder is made.
        return _Claim(secrets.token_hex(4), "", None)
    fcntl.flock(fd, fcntl.LOCK_EX)
    identity = os.path.basename(claiming)[len(_CLAIMING) :]
    lock = os.path.join(tmp, f"{LOCK_PREFIX}{identity}{LOCK_SUFFIX}")
    os.rename(claiming, lock)
    # The descriptor stays open, and so locked, until the run is released or the process ends; it closes on
    # exec, so no agent holds it.
    return _Claim(identity, lock, fd)


def remove_dead_runs(tmp: str) -> None:
    """Remove the folders and lock files of every run in ``tmp`` whose process is gone.

    A lock file is opened without blocking and acted on only when it is a
    plain file: an agent of an unsandboxed run can put a FIFO (whose open
    would wait for a writer) or anything else under a lock file's name.
    """
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        if not (name.startswith(LOCK_PREFIX) and name.endswith(LOCK_SUFFIX)):
            continue
        identity = name[len(LOCK_PREFIX) : -len(LOCK_SUFFIX)]
        if not RUN_ID.fullmatch(identity):
            continue  # no run made it: an agent's, or a stray file
        lock = os.path.join(tmp, name)
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue  # another user's, or a link
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # held: the run is alive
            faults = [remove_agent_tree(Path(tmp, folder)) for folder in _folders_of(tmp, identity)]
            if any(faults):
                continue  # something an agent made could not go: the lock stays, for a later run to try again
            os.unlink(lock)
        except OSError:
            continue  # what could not go now, a later run tries again
        finally:
            os.close(fd)


def _folders_of(tmp: str, identity: str) -> list[str]:
    """The folders of run ``identity`` in ``tmp``: those whose name has the form of a run's and its id exactly."""
    try:
        names = os.listdir(tmp)
    except OSError:
        return []
    return [name for name in names if (match := _FOLDER.fullmatch(name)) and match["id"] == identity]


# At a normal exit, what release_run could not let go of earlier (a forked child's exit lets go of nothing: the key).
atexit.register(release_run)
