"""Where an agent session is spawned: a new process, in a new session, on a new pseudo-terminal.

This is the one module that imports pexpect, and the one place a session
starts. It reads top to bottom:

1. find the program as the agent's own PATH would (``pexpect.which``);
2. open a pipe for stderr, so it never reaches the judged text;
3. open a pseudo-terminal with echo off and a wide window;
4. start the program with ``posix_spawn``: a vfork underneath, so nothing
   of the harness is copied, which makes a session start about ten times
   cheaper than ptyprocess's ``fork`` of the whole pytest process. Right
   after ``setsid`` the child opens the terminal by name, which makes it its
   controlling terminal exactly as ``pty.fork`` would. Where that does not
   hold (outside Linux), ptyprocess's public ``spawn`` starts it instead.
   The child is born in the session's cgroup where there is one
   (:mod:`pytest_recall.sessions.cgroup`), with no kernel keyring
   (:mod:`pytest_recall.sessions.seccomp`; where that filter cannot be
   installed, with a new session keyring, :mod:`pytest_recall.sessions.keyring`);
5. hand the terminal to pexpect's ``fdspawn``, through which live turns
   are sent, and watch the process through a pidfd.

stdout is the pty (agents that check ``isatty`` behave as they would for a
person); stdin is the pty in a live session, a pipe that carries the prompt
and then EOF under ``--recall-prompt=stdin``, and ``/dev/null`` otherwise, so
a reader sees EOF at once. A pipe has no line-length limit, which a terminal's
line discipline has (4095 bytes a line), and no size limit, which argv has
(128 KiB an argument on Linux).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import resource
import signal
import struct
import sys
import termios
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pexpect
import pexpect.fdpexpect
import ptyprocess  # type: ignore[import-untyped]

from pytest_recall.sessions.cgroup import SessionCgroup
from pytest_recall.sessions.keyring import clear_keyring, join_fresh_session_keyring
from pytest_recall.sessions.seccomp import run_confined, unavailable_reason

# Rows and columns of every session's terminal: wide, so answers are not wrapped.
TERMINAL_SIZE = (24, 200)
# Opening a terminal makes it the controlling one only on Linux; elsewhere ptyprocess forks.
POSIX_SPAWN_GIVES_A_TERMINAL = (
    sys.platform.startswith("linux") and hasattr(os, "posix_spawn") and hasattr(os, "POSIX_SPAWN_OPEN")
)
# The harness may run with these ignored; an agent must not inherit a SIG_IGN.
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGPIPE)
# What a pty's line discipline reads as end of input when its termios cannot be asked (Ctrl-D).
DEFAULT_EOF_BYTE = b"\x04"


class AgentStartError(Exception):
    """The agent command could not be started at all."""


class CommandUnusable(AgentStartError):
    """The agent's program itself could not run: gone, not executable, or no program.

    At a case's first session that is the user's command line. At a later one,
    after the same program ran, something removed or changed it in between, and
    the program that ran in between was the agent (see ``case_flow``).
    """


class AgentProcess:
    """A started agent: its pid, its terminal (typed to through pexpect when live), its stderr pipe and its pidfd."""

    def __init__(
        self,
        pid: int,
        terminal_fd: int,
        stderr_fd: int,
        stdin_fd: int | None = None,
        *,
        eof_byte: bytes = DEFAULT_EOF_BYTE,
        typed: bool = False,
    ) -> None:
        self.pid = pid
        # The write end of the stdin pipe, while the prompt is still going in.
        self.stdin_fd = stdin_fd
        # A live session's turns are typed through pexpect; a fresh session is only read (directly, see
        # session.py) and sent one end-of-file byte, so it does without the wrapper's set-up.
        self.terminal = pexpect.fdpexpect.fdspawn(terminal_fd) if typed else None
        self.terminal_fd = terminal_fd
        self.stderr_fd = stderr_fd
        self.pidfd = _pidfd(pid)
        self.eof_byte = eof_byte
        self.exit_code: int | None = None
        self.signal: int | None = None
        # The session keyring this process was started with, cleared when the session ends.
        self.keyring: int | None = None
        self._exited = False
        self._reaped = False

    def close_stdin(self) -> None:
        """End of file for a reader of the stdin pipe."""
        if self.stdin_fd is not None:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def send(self, data: bytes) -> int:
        """Write what the terminal takes now (it is non-blocking); returns how much that was."""
        if self.terminal is not None:
            return int(self.terminal.send(data))
        return os.write(self.terminal_fd, data)

    def poll(self) -> bool:
        """True once the main process has exited; its status is known then.

        It is not reaped here (``WNOWAIT``): until :meth:`reap`, it stays a
        zombie, which keeps its pid, and so its process group's id, from being
        reused, and signalling the group by number stays safe.
        """
        if self._exited:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            self._exited = self._reaped = True
            return True
        if info is None or info.si_pid == 0:
            return False
        self._exited = True
        if info.si_code == os.CLD_EXITED:
            self.exit_code = info.si_status
        else:
            self.signal = info.si_status
        return True

    def reap(self) -> None:
        """Make sure the main process is gone and its status known; it cannot outlive its session."""
        if not self.poll():
            # Unreaped, so its pid cannot have been reused: signalling it by number is safe.
            os.kill(self.pid, signal.SIGKILL)
            status = os.waitpid(self.pid, 0)[1]
            self._exited = self._reaped = True
            if os.WIFEXITED(status):
                self.exit_code = os.WEXITSTATUS(status)
            elif os.WIFSIGNALED(status):
                self.signal = os.WTERMSIG(status)
        if not self._reaped:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self._reaped = True

    def close(self) -> None:
        """Close every descriptor and empty the session keyring; the caller has made sure the process is gone."""
        self.close_stdin()
        clear_keyring(self.keyring)
        self.keyring = None
        if self.terminal is not None:
            self.terminal.close()
        else:
            os.close(self.terminal_fd)
        os.close(self.stderr_fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def spawn_agent(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    typed: bool,
    stdin_pipe: bool = False,
    cgroup: SessionCgroup | None = None,
) -> AgentProcess:
    """Start one agent session, in ``cgroup`` if given; raises :class:`AgentStartError` with a line for the user."""
    _refuse_nul_bytes(argv, env)
    program = _which(argv[0], env.get("PATH"))
    if program is None:
        if os.sep in argv[0] and os.path.isfile(argv[0]):
            raise CommandUnusable(f"agent command {argv[0]!r} is not executable; check its permissions or --recall-cmd")
        raise CommandUnusable(f"agent command {argv[0]!r} was not found on PATH; check --recall-cmd")
    try:
        stderr_read, stderr_write = os.pipe()
        stdin_read, stdin_write = os.pipe() if stdin_pipe else (None, None)
    except OSError as exc:
        # EMFILE, ENFILE: this case cannot run now; the error is its own, not the run's.
        raise _start_error(argv[0], program, exc) from None
    os.set_blocking(stderr_read, False)
    if stdin_write is not None:
        os.set_blocking(stdin_write, False)
    # No keyring for the child where the filter holds; else the harness's session keyring, a new one each time.
    keyring = join_fresh_session_keyring() if unavailable_reason() is not None else None
    try:
        if POSIX_SPAWN_GIVES_A_TERMINAL:
            pid, terminal_fd, eof_byte = run_confined(
                lambda: _posix_spawn_on_terminal(program, argv, cwd, env, stderr_write, typed, stdin_read, cgroup)
            )
        else:
            with cgroup.entered() if cgroup is not None else contextlib.nullcontext():
                pid, terminal_fd = _ptyprocess_spawn(program, argv, cwd, env, stderr_write, typed, stdin_read)
            eof_byte = _eof_byte(terminal_fd)
    except BaseException as exc:
        for fd in (stderr_read, stdin_write):
            if fd is not None:
                os.close(fd)
        if isinstance(exc, OSError):
            raise _start_error(argv[0], program, exc) from None
        raise
    finally:
        # The child holds its own copies; ours would keep the pipes from ever reaching EOF.
        for fd in (stderr_write, stdin_read):
            if fd is not None:
                os.close(fd)
    process = AgentProcess(pid, terminal_fd, stderr_read, stdin_write, eof_byte=eof_byte, typed=typed)
    process.keyring = keyring
    if not typed:
        # stdin is /dev/null, but an agent that finds a terminal may read /dev/tty
        # ("press enter"); end of file there too, or it waits for a person until the timeout.
        process.send(process.eof_byte)
    # Non-blocking both ways: reads drain a flood, and a live prompt goes in as the agent takes it.
    os.set_blocking(terminal_fd, False)
    return process


# (name, PATH) -> the program it found: every session of a run asks the same, and a search stats each folder.
_FOUND: dict[tuple[str, str | None], str] = {}


def _which(name: str, path: str | None) -> str | None:
    """The program ``name`` names, as the agent's PATH finds it; found once per run, still executable each time."""
    known = _FOUND.get((name, path))
    if known is not None and os.access(known, os.X_OK):
        return known
    found: str | None = pexpect.which(name, env={} if path is None else {"PATH": path})
    if found is not None:
        _FOUND[(name, path)] = found
    return found


def _posix_spawn_on_terminal(
    program: str,
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    stderr_fd: int,
    typed: bool,
    stdin_fd: int | None,
    cgroup: SessionCgroup | None,
) -> tuple[int, int, bytes]:
    """The start on Linux, on the thread that spawns: it moves into ``cgroup`` first thing, for the reason
    :meth:`SessionCgroup.entered` gives, and back once the agent is born."""
    with cgroup.entered() if cgroup is not None else contextlib.nullcontext():
        master, slave, eof_byte = _open_terminal()
        try:
            terminal = os.ttyname(slave)
            # The first terminal a session leader opens becomes its controlling terminal.
            actions: list[tuple[Any, ...]] = [
                (os.POSIX_SPAWN_OPEN, 1, terminal, os.O_RDWR, 0),
                (os.POSIX_SPAWN_OPEN, 0, terminal, os.O_RDWR, 0)
                if typed
                else (os.POSIX_SPAWN_DUP2, stdin_fd, 0)
                if stdin_fd is not None
                else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
            ]
            # Python's own descriptors close on exec; any inheritable one a plugin left open must
            # not reach the agent.
            actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds() if fd > 2]
            pid = _spawn_in(cwd, program, list(argv), env, actions)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return pid, master, eof_byte


def _open_terminal() -> tuple[int, int, bytes]:
    """A new pty (master, slave) with echo off and the session's window size, and its end-of-input byte."""
    master, slave = os.openpty()
    try:
        attributes = termios.tcgetattr(slave)
        eof_byte = _eof_of(attributes)
        attributes[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *TERMINAL_SIZE, 0, 0))
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    return master, slave, eof_byte


def _spawn_in(cwd: str, program: str, args: list[str], env: Mapping[str, str], actions: list[tuple[Any, ...]]) -> int:
    """posix_spawn in ``cwd``.

    Python exposes no chdir file action, so the harness steps into the
    directory for the instant of the spawn and straight back; sessions start
    on one thread, and nothing else in the harness uses relative paths.
    """
    home = os.open(".", getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY)
    try:
        os.chdir(cwd)
        try:
            return os.posix_spawn(
                program, args, env, file_actions=actions, setsid=True, setsigdef=DEFAULT_SIGNALS, setsigmask=()
            )
        finally:
            os.fchdir(home)
    finally:
        os.close(home)


def _ptyprocess_spawn(
    program: str,
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    stderr_fd: int,
    typed: bool,
    stdin_fd: int | None,
) -> tuple[int, int]:
    """The portable start: ptyprocess forks, and the child sets up its descriptors before exec."""
    process = ptyprocess.PtyProcess.spawn(
        [program, *argv[1:]],
        cwd=cwd,
        env=dict(env),
        echo=False,
        dimensions=TERMINAL_SIZE,
        preexec_fn=_child_setup(stderr_fd, typed, stdin_fd),
        pass_fds=(stderr_fd,) if stdin_fd is None else (stderr_fd, stdin_fd),
    )
    # The session owns the terminal from here on: keep a copy, and let ptyprocess let go of its own.
    terminal_fd = os.dup(process.fd)
    process.fileobj.close()
    process.closed = True
    return int(process.pid), terminal_fd


def _child_setup(stderr_fd: int, typed: bool, stdin_fd: int | None) -> Callable[[], None]:
    def setup() -> None:
        os.dup2(stderr_fd, 2)
        if stdin_fd is not None:
            os.dup2(stdin_fd, 0)
        elif not typed:
            null_fd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null_fd, 0)
            os.close(null_fd)
        for number in DEFAULT_SIGNALS:
            signal.signal(number, signal.SIG_DFL)

    return setup


def _inheritable_fds() -> list[int]:
    """The inheritable descriptors a spawn must close.

    Those at or above the soft ``RLIMIT_NOFILE`` (possible when the limit was
    lowered after they were opened) are made close-on-exec instead: glibc
    refuses a close action there, which would fail every spawn.
    """
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = soft if soft != resource.RLIM_INFINITY else 1 << 30
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    found = []
    for name in names:
        fd = int(name)
        try:
            if not os.get_inheritable(fd):
                continue
            if fd >= limit:
                os.set_inheritable(fd, False)
            else:
                found.append(fd)
        except OSError:
            continue  # the descriptor listdir itself used, closed by now
    return found


def _refuse_nul_bytes(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """exec cannot carry a NUL byte: say so instead of failing somewhere deeper."""
    # Joined first: one search in C rather than a Python step for each of a hundred variables.
    if "\0" in "".join(argv):
        raise AgentStartError("the agent's command line holds a NUL byte, which no program can receive in argv")
    if "\0" in "".join(env) or "\0" in "".join(env.values()):
        raise AgentStartError("the agent's environment holds a NUL byte, which no program can receive")


def _eof_byte(fd: int) -> bytes:
    """The byte this pty's line discipline reads as end of input."""
    try:
        return _eof_of(termios.tcgetattr(fd))
    except (termios.error, OSError):
        return DEFAULT_EOF_BYTE


def _eof_of(attributes: list[Any]) -> bytes:
    try:
        eof = attributes[6][termios.VEOF]
    except IndexError:
        return DEFAULT_EOF_BYTE
    return eof if isinstance(eof, bytes) and eof else DEFAULT_EOF_BYTE


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _start_error(command: str, program: str, exc: OSError) -> AgentStartError:
    """The error of a start that failed; one about the program itself (not the machine's limits) says so."""
    text = _start_error_text(command, program, exc)
    unusable = isinstance(exc, PermissionError) or exc.errno in (errno.ENOENT, errno.ENOEXEC)
    return CommandUnusable(text) if unusable else AgentStartError(text)


def _start_error_text(command: str, program: str, exc: OSError) -> str:
    if isinstance(exc, PermissionError) or exc.errno == errno.EACCES:
        return f"agent command {command!r} is not executable; check its permissions or --recall-cmd"
    if exc.errno == errno.ENOENT and os.path.isfile(program):
        return f"agent command {command!r} could not start: the interpreter on its #! line was not found; fix that line"
    if exc.errno == errno.ENOEXEC:
        return f"agent command {command!r} could not start: it is no program and has no #! line; add one"
    if exc.errno == errno.E2BIG:
        return (
            f"agent command {command!r} could not start: its arguments are too long for one command line; "
            "use --recall-prompt=stdin or --recall-prompt=file"
        )
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"agent command {command!r} could not start: {text}"
