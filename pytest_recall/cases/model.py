"""Cases, and how a case folder on disk becomes one.

A case is plain data: the prompts of its steps and the answer expected from
the last one. Every source of cases (a case folder, a generated suite, a
trap-task directory) produces the same frozen :class:`Case`, so the runner,
the judge and the report never need to know where a case came from.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from pytest_recall.cases.answer_forms import EXTRA_ANSWER_KEYS, answer_form_error, builtin_kind, judge_only_label
from pytest_recall.cases.groups import CaseGroup, GroupError, group_key_of_nodeid, is_group_dir, read_group
from pytest_recall.cases.live_protocol import (
    DEFAULT_PROTOCOL,
    PROTOCOL_KEYS,
    LiveProtocol,
    ProtocolError,
    parse_exit_codes,
    protocol_fields,
)
from pytest_recall.cases.mcp_config import McpConfigError, settings_with_mcp
from pytest_recall.cases.workspace_tree import (
    WORKSPACE_MODES,
    CaseWorkspace,
    WorkspaceError,
    read_case_workspace,
    write_case_workspace,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ANSWER_FILE = "answer.json"
SETTINGS_FILE = "case.toml"
REQUIRED_ANSWER_KEYS = ("id", "category", "answer", "answer_kind")
# What any answer.json may add: the texts a memory must return for the question (docs/mcp.md, retrieval or reasoning).
EVIDENCE_KEY = "evidence_text"
# An answer.json of a built-in kind holds these keys and no others; a typo there is worth reporting.
KNOWN_ANSWER_KEYS = frozenset((*REQUIRED_ANSWER_KEYS, EVIDENCE_KEY))
# How a case's steps meet the agent: a new process each, or one live process on a terminal.
SessionMode = Literal["fresh", "continue"]
SESSION_MODES: tuple[str, ...] = get_args(SessionMode)
_STEP_FILE = re.compile(r"^step(\d+)\.txt$")
# What the previous step's answer is judged against, told to the agent before this step's prompt.
_FEEDBACK_FILE = re.compile(r"^step(\d+)\.feedback\.json$")
# Settings a case.toml may carry; anything else is a typo worth reporting.
KNOWN_SETTINGS = frozenset({"timeout", "category", "session", "workspace", "ok_exit_codes", "mcp", *PROTOCOL_KEYS})


class CaseError(Exception):
    """A case that cannot be loaded. The message is one line that names the file."""


class CaseUnreadable(CaseError):
    """A case file that could not be read, with the errno: the file's fault, or the harness's (out of descriptors).

    A case read again when it runs must tell the two apart: a file gone or changed is the case's, but a
    harness out of file descriptors or memory is no reason to score the case at all.
    """

    def __init__(self, message: str, errno: int | None) -> None:
        super().__init__(message)
        self.errno = errno

    @property
    def harness_short(self) -> bool:
        return self.errno in _HARNESS_SHORT


_HARNESS_SHORT = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


@dataclass(frozen=True, slots=True)
class Step:
    """One session's prompt.

    ``feedback`` is set on a step that must first tell the agent how its
    previous answer was judged (the audit suite's rehearsal): it holds the
    expectation the previous step's stdout is judged against.
    """

    number: int
    prompt: str
    feedback: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Case:
    """Everything needed to run and judge one case, and nothing about how."""

    case_id: str
    suite: str
    steps: tuple[Step, ...]
    expected: Mapping[str, Any]
    source: str
    timeout_s: float | None = None
    session: SessionMode = "fresh"
    # How a live (continue) session's turns are typed and read; unused by fresh sessions.
    live: LiveProtocol = DEFAULT_PROTOCOL
    # Exit statuses that count as a session ending well (a REPL that exits 1 on quit, say).
    ok_exit_codes: tuple[int, ...] = (0,)
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # ``workspace/`` and ``workspace.stepN/`` of the case, and whether each step starts fresh or carries on.
    workspace: CaseWorkspace | None = None
    workspace_mode: str = "fresh"
    # A grouped case (see cases/groups.py): its group's key, and how many of its first steps are the group's ingest.
    group: str | None = None
    ingest_steps: int = 0
    # The ``mcpServers`` its agent is given (templates; see :mod:`pytest_recall.cases.mcp_config`), if any.
    mcp_servers: Mapping[str, Any] | None = None
    # :attr:`content_hash`, worked out once: the check against what was collected and the record both ask.
    _content_hash: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def category(self) -> str | None:
        category = self.expected.get("category")
        return str(category) if category is not None else None

    @property
    def answer_kind(self) -> str:
        return str(self.expected.get("answer_kind", "money"))

    @property
    def content_hash(self) -> str:
        """A digest of everything that decides the verdict.

        Resume compares it, so a case edited since a log was written is run
        again rather than silently reusing a stale score. A LongMemEval case's
        prompts are megabytes, so it is serialised and hashed once a case.
        """
        digest = self._content_hash
        if digest is None:
            digest = self._digest()
            object.__setattr__(self, "_content_hash", digest)
        return digest

    def _digest(self) -> str:
        payload = {
            "steps": [[s.number, s.prompt, plain_data(s.feedback)] for s in self.steps],
            "expected": plain_data(self.expected),
            "session": self.session,
            "timeout": self.timeout_s,
        }
        # Only cases with a workspace add keys, so every other case keeps the hash its logs hold.
        if self.workspace is not None:
            payload["workspace"] = self.workspace.digest()
        if self.workspace_mode != "fresh":
            payload["workspace_mode"] = self.workspace_mode
        if self.session == "continue" and self.live != DEFAULT_PROTOCOL:
            payload["live"] = [self.live.turn_template, self.live.paste, self.live.quit, self.live.answer_pattern]
        if self.ok_exit_codes != (0,):
            payload["ok_exit_codes"] = list(self.ok_exit_codes)
        if self.group is not None:
            payload["group"] = [self.group, self.ingest_steps]
        if self.mcp_servers:
            payload["mcp"] = plain_data(self.mcp_servers)
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True, slots=True)
class CaseOutline:
    """What collection, sharding and the count of sessions need of a case, without its prompts.

    A collected case keeps this and a way to read itself again (see
    :mod:`pytest_recall.cases.case_refs`), so its text is in memory only while it runs.
    """

    case_id: str
    suite: str
    category: str | None
    group: str | None
    ingest_steps: int
    steps: int
    answer_kind: str = "money"
    # Set for an imported question only the judge command can score: a run without one is refused before it starts.
    judge_only: str | None = None

    @classmethod
    def of(cls, case: Case) -> CaseOutline:
        return cls(
            case.case_id,
            case.suite,
            case.category,
            case.group,
            case.ingest_steps,
            len(case.steps),
            case.answer_kind,
            judge_only_label(case.expected),
        )


def plain_data(value: Any) -> Any:
    """Mappings and sequences as plain dicts and lists, ready for JSON."""
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    return value


def is_case_dir(path: Path) -> bool:
    # os.path, not pathlib: asked of every folder collection meets.
    return os.path.isfile(os.path.join(path, ANSWER_FILE))


def looks_like_case_dir(path: Path) -> bool:
    """A folder of ``stepN.txt`` files without its answer.json: a case with a typo, never silently skipped."""
    try:
        return any(_STEP_FILE.match(entry.name) for entry in path.iterdir())
    except OSError:
        return False


def make_case(
    *,
    case_id: str,
    suite: str,
    prompts: list[str] | tuple[str, ...],
    expected: Mapping[str, Any],
    source: str,
    settings: Mapping[str, Any] | None = None,
    known_kinds: frozenset[str] | None = None,
    feedback: Mapping[int, Mapping[str, Any]] | None = None,
    workspace: CaseWorkspace | None = None,
    group: CaseGroup | None = None,
) -> Case:
    """Validate and build a case from plain parts; every source goes through here.

    ``feedback`` maps a step number (2 or more) to the expectation the step
    before it is judged against; that step then opens with the verdict.
    """
    __tracebackhide__ = True
    settings = dict(settings or {})
    feedback = dict(feedback or {})
    if group is not None:
        if not prompts:
            raise CaseError(f"{source}: no steps; a case of a group needs step1.txt, its question")
        prompts = [*group.prompts, *prompts]
    if len(prompts) < 2:
        raise CaseError(too_few_steps(source, len(prompts)))
    _check_expectation(expected, f"{source}: {ANSWER_FILE}", known_kinds)
    for number, judged_against in feedback.items():
        if not 2 <= number <= len(prompts):
            raise CaseError(f"{source}: step{number}.feedback.json belongs to no step from 2 to {len(prompts)}")
        _check_expectation(judged_against, f"{source}: step{number}.feedback.json", known_kinds)
    for number in workspace.by_step if workspace is not None else ():
        if not 1 <= number <= len(prompts):
            raise CaseError(f"{source}: workspace.step{number} belongs to no step from 1 to {len(prompts)}")
    unknown = sorted(set(settings) - KNOWN_SETTINGS)
    if unknown:
        allowed = ", ".join(sorted(KNOWN_SETTINGS))
        raise CaseError(f"{source}: unknown {SETTINGS_FILE} key(s) {', '.join(unknown)}; allowed: {allowed}")
    expected = dict(expected)
    if "category" in settings:
        expected["category"] = str(settings["category"])
    steps = tuple(
        Step(number=i, prompt=p, feedback=MappingProxyType(dict(feedback[i])) if i in feedback else None)
        for i, p in enumerate(prompts, start=1)
    )
    return Case(
        case_id=case_id,
        suite=suite,
        steps=steps,
        expected=MappingProxyType(expected),
        source=source,
        workspace=workspace,
        group=group.key if group is not None else None,
        ingest_steps=len(group.prompts) if group is not None else 0,
        **session_fields(settings, source),
    )


def session_fields(settings: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The :class:`Case` fields for how a case's sessions run, from case.toml or suite.toml keys.

    Keys: ``timeout`` (seconds per session), ``session`` (``fresh`` or
    ``continue``), ``ok_exit_codes``, ``workspace``, and for live sessions the
    turn protocol (see :mod:`pytest_recall.cases.live_protocol`).
    """
    __tracebackhide__ = True
    if not settings:
        # Most cases set nothing: the defaults, with no protocol to check and build.
        return {"timeout_s": None, "session": "fresh", "live": DEFAULT_PROTOCOL}
    session = str(settings.get("session", "fresh"))
    if session not in SESSION_MODES:
        raise CaseError(f"{source}: session must be one of {', '.join(SESSION_MODES)}, not {session!r}")
    timeout = settings.get("timeout")
    fields: dict[str, Any] = {}
    if settings.get("mcp"):
        fields["mcp_servers"] = MappingProxyType(dict(settings["mcp"]))  # read in by settings_with_mcp
    if "workspace" in settings:
        # Only when given: a suite.toml that sets a timeout must not reset a family's carry cases to fresh.
        mode = settings["workspace"]
        if mode not in WORKSPACE_MODES:
            raise CaseError(f"{source}: workspace must be one of {', '.join(WORKSPACE_MODES)}, not {mode!r}")
        fields["workspace_mode"] = mode
    protocol = dict(settings)
    if "ready_idle" in protocol:
        protocol["ready_idle"] = parse_positive_seconds(protocol["ready_idle"], f"{source}: ready_idle")
    try:
        if "ok_exit_codes" in settings:
            fields["ok_exit_codes"] = parse_exit_codes(settings["ok_exit_codes"], source)
        live = LiveProtocol(**protocol_fields(protocol, source))
    except ProtocolError as exc:
        raise CaseError(str(exc)) from None
    return {
        **fields,
        "timeout_s": None if timeout is None else parse_positive_seconds(timeout, f"{source}: timeout"),
        "session": session,
        "live": live,
    }


def _check_expectation(expected: Mapping[str, Any], what: str, known_kinds: frozenset[str] | None) -> None:
    __tracebackhide__ = True
    missing = [k for k in REQUIRED_ANSWER_KEYS if k not in expected]
    if missing:
        raise CaseError(f"{what} lacks key(s) {', '.join(missing)}")
    if known_kinds is not None and expected["answer"] is None:
        # No built-in judge can match null; only a trap task's own judge (known_kinds None) might want it.
        raise CaseError(f"{what}: 'answer' is null, so the case could never pass; write the expected answer")
    kind = str(expected["answer_kind"])
    if known_kinds is not None and kind not in known_kinds:
        kinds = ", ".join(sorted(known_kinds))
        raise CaseError(f"{what}: unknown answer_kind {kind!r}; use one of: {kinds}")
    if known_kinds is None:
        return  # a trap task with a judge of its own decides what its answers look like
    if builtin_kind(kind):
        extra = EXTRA_ANSWER_KEYS.get(kind, frozenset())
        unknown = sorted(set(expected) - KNOWN_ANSWER_KEYS - extra)
        if unknown:
            allowed = ", ".join([*REQUIRED_ANSWER_KEYS, EVIDENCE_KEY, *sorted(extra)])
            raise CaseError(f"{what}: unknown key(s) {', '.join(unknown)}; allowed: {allowed}")
        evidence = expected.get(EVIDENCE_KEY, [])
        if not isinstance(evidence, list) or not all(isinstance(text, str) for text in evidence):
            raise CaseError(f"{what}: {EVIDENCE_KEY!r} must be a list of strings")
        problem = answer_form_error(kind, expected["answer"])
        if problem is not None:
            raise CaseError(f"{what}: {problem}")


def parse_positive_seconds(value: Any, what: str, *, zero_ok: bool = False) -> float:
    """Seconds from a user; one line of error rather than a ValueError traceback.

    ``zero_ok`` admits 0 where it means "no wait" (a retry's pause), never where it would mean "no time at all".
    """
    __tracebackhide__ = True
    try:
        # float(True) is 1.0: a TOML ``timeout = true`` is a mistake, not one second.
        if isinstance(value, bool):
            raise TypeError(value)
        seconds = float(value)
    except (TypeError, ValueError):
        raise CaseError(f"{what} must be a number of seconds, not {value!r}") from None
    if not (seconds >= 0 if zero_ok else seconds > 0) or seconds == float("inf"):
        wanted = "0 or a positive number" if zero_ok else "a positive number"
        raise CaseError(f"{what} must be {wanted} of seconds, not {value!r}")
    return seconds


def read_step_prompts(folder: Path, source: str, names: Iterable[str] | None = None) -> list[str]:
    """The prompts of ``step1.txt``, ``step2.txt``, ... in order, refusing gaps; ``names``: the folder's, if listed."""
    numbered: dict[int, str] = {}
    for name in os.listdir(folder) if names is None else names:
        match = _STEP_FILE.match(name)
        if match:
            numbered[int(match.group(1))] = name
    if not numbered:
        return []
    count = len(numbered)
    if sorted(numbered) != list(range(1, count + 1)):
        gap = next(n for n in range(1, count + 1) if n not in numbered)
        raise CaseError(f"{source}: step{gap}.txt is missing; steps must be numbered 1, 2, 3 ... without gaps")
    base = os.fspath(folder)
    prompts = []
    for number in range(1, count + 1):
        path = os.path.join(base, numbered[number])
        try:
            prompt = text_of(path, links_within=folder, source=source)
        except UnicodeDecodeError:
            raise CaseError(f"{source}/step{number}.txt is not UTF-8 text") from None
        except OSError as exc:
            raise CaseUnreadable(_unreadable(source, Path(path), exc), exc.errno) from None
        if "\0" in prompt:
            raise CaseError(f"{source}/step{number}.txt holds a NUL byte, which no agent can take in argv; remove it")
        prompts.append(prompt)
    return prompts


def refuse_outside_link(path: Path, folder: Path, source: str) -> None:
    """A prompt file must live in its case folder: a symlink out of it (to ``/etc/shadow``, say)
    would send that file to the agent as a prompt and store it in the report."""
    __tracebackhide__ = True
    if not path.is_symlink():
        return
    home = folder.resolve()
    if home not in path.resolve().parents:
        raise CaseError(
            f"{source}: {path.name} is a symlink to a file outside the case folder; copy the file into the folder"
        )


def is_symlink_loop(path: Path) -> bool:
    """A directory symlink that leads back to one of its own ancestors: following it would find
    the same cases again under a longer name, until the path is too long."""
    if not (path.is_symlink() and path.is_dir()):
        return False
    target = path.resolve()
    parent = path.parent.resolve()
    return target == parent or target in parent.parents


def _unreadable(source: str, path: Path, exc: OSError) -> str:
    return f"{source}: cannot read {path.name} ({exc.strerror or exc}); make it a readable file"


def too_few_steps(source: str, count: int, folder: Path | None = None) -> str:
    """A case of fewer than two steps, naming the text files that look like misspelt step files."""
    what = "no steps" if not count else "only one step"
    found = []
    if folder is not None:
        with contextlib.suppress(OSError):
            found = sorted(p.name for p in folder.iterdir() if p.suffix == ".txt" and not _STEP_FILE.match(p.name))
    renames = [f"{name}: rename it step{digits[0]}.txt" for name in found if (digits := re.findall(r"\d+", name))]
    hint = f" (found {'; '.join(renames)})" if renames else ""
    return f"{source}: {what}{hint}; a case needs step1.txt and step2.txt at least"


def _near_misses(folder: Path) -> str:
    """The JSON files a case folder does hold, which are most likely a misspelt answer.json."""
    try:
        found = sorted(p.name for p in folder.iterdir() if p.suffix == ".json" and not _FEEDBACK_FILE.match(p.name))
    except OSError:
        found = []
    return f" (found {', '.join(found)}: rename it {ANSWER_FILE})" if found else f" in {folder}"


def text_of(path: str | Path, *, links_within: Path | None = None, source: str = "") -> str:
    """A UTF-8 file's text as ``Path.read_text`` gives it (newlines made ``\\n``), in three system calls.

    Every case is read twice (collected, then read again when it runs), each
    time its answer and its step files: the buffered text reader's ``fstat``,
    ``ioctl`` and ``lseek`` a file were a tenth of collecting a case. With
    ``links_within``, a symlink is followed only into that folder (see
    :func:`refuse_outside_link`); the open that refuses to follow one finds
    it, so a plain file costs no ``lstat`` to tell.
    """
    if links_within is None:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    else:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            refuse_outside_link(Path(path), links_within, source)
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_json(path: Path, source: str) -> Any:
    __tracebackhide__ = True
    try:
        return json.loads(text_of(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseError(f"{source}: {path.name} is not valid JSON ({exc})") from None
    except RecursionError:
        # Nested past the parser (in default mode an agent may rewrite a case that has yet to start).
        raise CaseError(f"{source}: {path.name} is JSON nested too deep to read") from None
    except OSError as exc:
        raise CaseUnreadable(_unreadable(source, path, exc), exc.errno) from None


def read_toml(path: Path, source: str) -> dict[str, Any]:
    __tracebackhide__ = True
    try:
        settings: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return settings
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CaseError(f"{source}: {path.name} is not valid TOML ({exc})") from None
    except RecursionError:
        raise CaseError(f"{source}: {path.name} is TOML nested too deep to read") from None
    except OSError as exc:
        raise CaseUnreadable(_unreadable(source, path, exc), exc.errno) from None


def read_step_feedback(folder: Path, source: str, names: Iterable[str] | None = None) -> dict[int, dict[str, Any]]:
    """The ``stepN.feedback.json`` files of a case folder, by step number."""
    __tracebackhide__ = True
    feedback: dict[int, dict[str, Any]] = {}
    for name in os.listdir(folder) if names is None else names:
        match = _FEEDBACK_FILE.match(name)
        if match:
            entry = folder / name
            refuse_outside_link(entry, folder, source)
            judged_against = read_json(entry, source)
            if not isinstance(judged_against, dict):
                raise CaseError(f"{source}: {entry.name} must hold a JSON object")
            feedback[int(match.group(1))] = judged_against
    return feedback


def load_case_dir(
    folder: Path,
    *,
    suite: str,
    source: str,
    known_kinds: frozenset[str] | None,
    answer_dir: Path | None = None,
) -> Case:
    """Load a case folder: ``stepN.txt`` files, ``answer.json`` and an optional ``case.toml``.

    ``answer_dir`` is where ``answer.json`` lives when it is kept apart from
    the prompts, as a trap-task directory keeps it under ``expected/<id>/``.
    """
    __tracebackhide__ = True
    answer_path = (answer_dir or folder) / ANSWER_FILE
    if not answer_path.is_file():
        raise CaseError(f"{source}: {ANSWER_FILE} is missing{_near_misses(answer_path.parent)}; every case needs one")
    expected = read_json(answer_path, f"{source}")
    if not isinstance(expected, dict):
        raise CaseError(f"{source}: {ANSWER_FILE} must hold a JSON object")
    # Listed once: the step files, their feedback, the settings and the workspace are found by name in it.
    names = os.listdir(folder)
    settings_path = folder / SETTINGS_FILE
    settings = read_toml(settings_path, source) if SETTINGS_FILE in names and settings_path.is_file() else {}
    try:
        settings = settings_with_mcp(settings, folder, source)
    except McpConfigError as exc:
        raise CaseError(str(exc)) from None
    prompts = read_step_prompts(folder, source, names)
    group = None
    if is_group_dir(folder.parent):
        try:
            group = read_group(folder.parent, group_key_of_nodeid(source) or folder.parent.name)
        except GroupError as exc:
            raise CaseError(str(exc)) from None
        # A group folder sits between the suite and its cases.
        suite = folder.parent.parent.name
    if len(prompts) + (len(group.prompts) if group is not None else 0) < 2:
        raise CaseError(too_few_steps(source, len(prompts), folder))
    try:
        workspace = read_case_workspace(folder, names)
    except (WorkspaceError, OSError) as exc:
        raise CaseError(f"{source}: {exc}") from None
    return make_case(
        case_id=str(expected.get("id") or folder.name),
        suite=suite,
        prompts=prompts,
        expected=expected,
        source=source,
        settings=settings,
        known_kinds=known_kinds,
        feedback=read_step_feedback(folder, source, names),
        workspace=workspace,
        group=group,
    )


def case_files(case: Case) -> dict[str, str]:
    """File name -> text of the case folder that :func:`load_case_dir` reads back as ``case``."""
    files = {f"step{step.number}.txt": step.prompt for step in case.steps}
    for step in case.steps:
        if step.feedback is not None:
            files[f"step{step.number}.feedback.json"] = _json_text(step.feedback)
    files[ANSWER_FILE] = _json_text(case.expected)
    settings = {
        "timeout": case.timeout_s,
        "session": case.session if case.session != "fresh" else None,
        "workspace": case.workspace_mode if case.workspace_mode != "fresh" else None,
        "ok_exit_codes": list(case.ok_exit_codes) if case.ok_exit_codes != (0,) else None,
    }
    for key in PROTOCOL_KEYS:
        attribute = "ready_idle_s" if key == "ready_idle" else key
        value = getattr(case.live, attribute)
        if value != getattr(DEFAULT_PROTOCOL, attribute):
            settings[key] = value
    # A JSON string or number is also a valid TOML value, so no TOML writer is needed.
    lines = [
        f"{key} = {json.dumps(value, ensure_ascii=False)}\n" for key, value in settings.items() if value is not None
    ]
    if lines:
        files[SETTINGS_FILE] = "".join(lines)
    return files


def _json_text(value: Mapping[str, Any]) -> str:
    return json.dumps(plain_data(value), indent=2) + "\n"


def write_case_folders(cases: Iterable[Case], out_dir: Path) -> list[Path]:
    """One folder per case under ``out_dir``; bytes, not text mode, so no platform alters a newline."""
    folders = []
    for case in cases:
        folder = out_dir / case.case_id
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in case_files(case).items():
            (folder / name).write_bytes(text.encode("utf-8"))
        if case.workspace is not None:
            write_case_workspace(case.workspace, folder)
        folders.append(folder)
    return folders


def folder_digests(folder: Path) -> dict[str, str]:
    """A signature of every regular file directly in a case folder, taken before the case runs.

    Compared after the run by :func:`changed_files`: an agent that rewrites its
    case (or another's) on disk is reported, never silently believed. The
    signature is the file's inode, size, and modification and change times, so
    no file is read: any write, rename over it, ``chmod`` or ``touch`` moves its
    change time, which no process can set back.
    """
    digests = {}
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return {}
    for entry in entries:
        try:
            if entry.is_file():
                info = entry.stat()
                digests[entry.name] = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"
        except OSError:
            digests[entry.name] = "unreadable"
    return digests


def changed_files(folder: Path, digests: Mapping[str, str]) -> list[str]:
    """The names of files added, removed or changed since :func:`folder_digests` read the folder."""
    now = folder_digests(folder)
    return sorted(name for name in set(now) | set(digests) if now.get(name) != digests.get(name))
