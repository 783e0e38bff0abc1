"""A run-wide state file (the rate-limit pause, the stop decision), signed so that no agent can plant one.

In default mode an agent runs as the user who runs pytest, so it can find and
write any file the run's processes share on the host, wherever it lies. The
pause file and the stop decision are such files: a planted ``{"until": 4e9}``
would hold the run for ever, a planted decision would end it while the agent
was ahead. So, as the judge's shared verdicts are
(:mod:`pytest_recall.sessions.shared_verdicts`), each carries an HMAC-SHA256 of
its text under a secret the controller draws when the run starts and hands
each xdist worker over execnet (never the environment, a command line or a
file). A file is read as agent-made files are
(:mod:`pytest_recall.sessions.agent_file`: no FIFO, link or huge file is
followed or waited on), and one that is unsigned, wrongly signed or not a JSON
object is ignored with a :class:`RecallStateWarning` that names it. Its values
are the reader's to bound.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import warnings
from pathlib import Path
from typing import Any

from pytest_recall.sessions.agent_file import read_agent_file

# A pause or a decision is a few numbers or a line of text.
MAX_STATE_BYTES = 4096


class RecallStateWarning(UserWarning):
    """A run-wide state file was not as the run wrote it (planted, changed or spoilt) and was ignored."""


def new_secret() -> str:
    return secrets.token_hex(32)


class SignedState:
    """One small JSON object at ``path``, signed under ``secret`` (hex), shared by every process of a run."""

    def __init__(self, path: Path, secret: str, name: str) -> None:
        self.path = path
        self.name = name
        self.secret = secret
        self._secret = bytes.fromhex(secret)
        self._warned = False

    def read(self) -> dict[str, Any] | None:
        """The object as the run wrote it; None when there is none, or (with a warning) none to trust."""
        data, fault = read_agent_file(self.path, self.name, MAX_STATE_BYTES)
        if fault is None and not data:
            return None
        signature, _, body = data.partition(b"\n")
        if fault is None and not hmac.compare_digest(signature, self._sign(body).encode("ascii")):
            fault = f"{self.name} ({self.path}) is not signed by this run"
        if fault is None:
            try:
                loaded = json.loads(body)
            except (ValueError, RecursionError):
                loaded = None
            if isinstance(loaded, dict):
                return loaded
            fault = f"{self.name} ({self.path}) holds no JSON object"
        self.ignore(fault)
        return None

    def ignore(self, why: str) -> None:
        """Warn, once a process, that the file was ignored and why."""
        if not self._warned:
            self._warned = True
            warnings.warn(f"{why}: ignored (an agent may have written it)", RecallStateWarning, stacklevel=3)

    def write(self, value: dict[str, Any]) -> None:
        """Signed, written whole under a name of its own and renamed into place."""
        body = json.dumps(value).encode("utf-8")
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.part")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(partial, flags, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(self._sign(body).encode("ascii") + b"\n" + body)
            os.replace(partial, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise

    def _sign(self, body: bytes) -> str:
        return hmac.new(self._secret, body, hashlib.sha256).hexdigest()
