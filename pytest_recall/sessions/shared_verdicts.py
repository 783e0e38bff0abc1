"""The judge command's verdicts, shared by the xdist workers of a run on one host, signed so no agent can plant one.

In default mode an agent runs as the user who runs pytest, so any folder the
workers can write (TMPDIR or elsewhere) the agent can write too: no place on
disk is out of its reach, and a verdict read back as written there would be
whatever the agent put there. So verdict files are not hidden but signed:
each carries an HMAC-SHA256, under a secret the controller draws when the run
starts, of its cache key and its text. The secret goes to each worker in its
``workerinput`` (execnet's pipe: never the environment, a command line or a
file), so an agent that can read all of those still cannot sign. A file whose
signature does not match (written by an agent, changed, or copied from
another request's name) is no verdict: the judge is asked. The files are read
as agent-made files are (:mod:`pytest_recall.sessions.agent_file`): a FIFO, a
link or a huge file in place of a verdict is passed over at once, never
waited on. The folder is opened once, as a descriptor, and every file is
opened relative to it, so a folder later swapped for a link is not followed.

What an agent can still do there: delete or spoil verdicts (the judge is asked
again: more cost, the same scores) and read their reasons.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_recall.sessions.agent_file import read_agent_file
from pytest_recall.sessions.run_folders import made_folder

# A verdict is a score, a reason and its prompt's hash; one larger than this is not shared (the worker keeps its own).
MAX_VERDICT_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SharedVerdicts:
    """Where a run's workers share verdicts, and the secret that signs them; handed from the controller."""

    folder: str
    secret: str  # hex

    @classmethod
    def create(cls) -> SharedVerdicts:
        """A new folder in TMPDIR (mode 0700) and a new secret, once a run, on the controller."""
        return cls(str(made_folder("judge-cache")), secrets.token_hex(32))

    def handoff(self) -> dict[str, str]:
        return {"folder": self.folder, "secret": self.secret}

    @classmethod
    def from_handoff(cls, given: Any) -> SharedVerdicts | None:
        """What a worker was handed; None when nothing (or something else) was."""
        if not isinstance(given, Mapping) or not all(isinstance(given.get(k), str) for k in ("folder", "secret")):
            return None
        return cls(given["folder"], given["secret"])


class VerdictFolder:
    """One process's hold on the shared folder: verdicts saved signed and loaded only when the signature holds."""

    def __init__(self, shared: SharedVerdicts) -> None:
        self._secret = bytes.fromhex(shared.secret)
        # Held while the folder's descriptor is in use: closing it under a judging thread could hand its number on.
        self._lock = threading.Lock()
        try:
            self._fd: int | None = os.open(shared.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            self._fd = None  # gone or replaced already: this process keeps its own verdicts

    def load(self, key: str) -> tuple[float, str | None, str | None] | None:
        """The score, reason and prompt hash saved under ``key`` by a worker of this run; None when there is none
        to trust."""
        with self._lock:
            if self._fd is None:
                return None
            data, _fault = read_agent_file(f"{key}.json", "a shared verdict", MAX_VERDICT_BYTES, dir_fd=self._fd)
        signature, _, body = data.partition(b"\n")
        if not data or not hmac.compare_digest(signature, self._sign(key, body).encode("ascii")):
            return None
        try:
            verdict = json.loads(body.decode("utf-8"))
            score, reason, prompt = float(verdict["score"]), verdict["reason"], verdict.get("prompt_sha256")
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return score, reason if isinstance(reason, str) else None, prompt if isinstance(prompt, str) else None

    def save(self, key: str, score: float | None, reason: str | None, prompt_sha256: str | None = None) -> None:
        """Signed, written whole under a name of its own and renamed into place; a failure only loses the sharing.
        The prompt's hash travels with the verdict: a worker that takes it says which prompt gave it, as the one
        that asked does."""
        if score is None:
            return
        body = json.dumps({"score": score, "reason": reason, "prompt_sha256": prompt_sha256}).encode("utf-8")
        data = self._sign(key, body).encode("ascii") + b"\n" + body
        if len(data) > MAX_VERDICT_BYTES:
            return
        with self._lock:
            if self._fd is not None:
                _write_into(self._fd, f"{key}.json", data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _sign(self, key: str, body: bytes) -> str:
        return hmac.new(self._secret, key.encode("ascii") + b"\n" + body, hashlib.sha256).hexdigest()


def _write_into(folder: int, name: str, data: bytes) -> None:
    """``data`` as ``name`` in the folder, whole or not at all; a name an agent took first only loses the sharing."""
    partial = f".{name}.{os.getpid()}.{secrets.token_hex(4)}.part"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(partial, flags, 0o600, dir_fd=folder)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(partial, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial, dir_fd=folder)
