"""What the fake model says: one pure decision per request, whatever API carried it.

The model is honest by construction. In a session that shows a ledger (or an
audit trail) it solves it with the project's own solvers, and a coding task
it does with the CLI's own file tools (:mod:`fake_coder`); whether anything
survives to a later session depends only on the mode and on the CLI:

- ``plain`` never asks to remember anything;
- ``memory`` makes the CLI's own memory hold a note: a shell tool call that
  appends it to the file the CLI loads next time (``~/.claude/CLAUDE.md``,
  ``~/.codex/AGENTS.md``, ``~/.gemini/GEMINI.md``, ``~/.qwen/QWEN.md``,
  ``~/.config/opencode/AGENTS.md``, ``~/.config/kilo/AGENTS.md``,
  ``~/.copilot/copilot-instructions.md``, ``~/.pi/agent/AGENTS.md``, a file in Cline's global rules
  folder ``~/Documents/Cline/Rules``), a note under ``memory/`` in OpenClaw's workspace (which a
  later session finds only through its ``memory_search``); for an agent whose memory is a tool of
  its own (Hermes Agent's and Letta Code's ``memory``), a call of that tool; or, for CLIs without
  tools whose memory is the conversation itself (llm, aider), the note written into its reply;
- ``native`` writes Claude Code's auto-memory, in the folder its system
  prompt names.

Shown the memories a ``recall-provider`` search returned, it reads each as
it would have read that step, and answers the question from them alone.
Asked by mem0 to extract memories, it keeps each new message whole
(:mod:`pytest_recall.testing.fake_extraction`).

The sessions of an imported LongMemEval or LoCoMo suite are noted whole; a
question about them is answered as ``recall-retrieval`` would answer it from
the noted sessions alone: a sentence of the best-matching line, in plain
text, or "not mentioned" when no note holds any of its words.

In a later session, or a later turn of a live session, it answers only from
notes found in the context the CLI sent (system prompt, injected memory,
earlier messages), else ``UNKNOWN``. The
ledger of an earlier turn does not count: only a note does, so the score
measures the CLI's memory and the harness's isolation, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pytest_recall.agents import audit_solver, ledger_solver, provider, retrieval
from pytest_recall.testing.exchange import MODES, Api, Mode, Reply, Request, shell_call
from pytest_recall.testing.fake_coder import coding_reply
from pytest_recall.testing.fake_extraction import extraction_reply, is_extraction_prompt
from pytest_recall.testing.fake_judge import is_judge_prompt, judge_verdict
from pytest_recall.testing.mcp_tools import mcp_reply

__all__ = ["MODES", "Api", "Mode", "Reply", "Request", "decide", "shell_call"]

UNKNOWN = "UNKNOWN"
NOTE = "recall-note"
TRAIL_NOTE = "recall-trail"
CHAT_NOTE = "recall-chat"
_NOTE_LINE = re.compile(rf"{NOTE} (?P<key>[^\n=]+?) = (?P<value>[^\s`'\"]+)")
_TRAIL_LINE = re.compile(rf"{TRAIL_NOTE} (?P<trail>\"(?:[^\"\\\n]|\\.)*\")")
_CHAT_LINE = re.compile(rf"{CHAT_NOTE} (?P<chat>\"(?:[^\"\\\n]|\\.)*\")")
# Claude Code names its auto-memory folder in the system prompt; the last path segment is "memory".
_AUTO_MEMORY_DIR = re.compile(r"(/[^\s`'\"]*?/\.claude/projects/[^\s`'\"/]+/memory)/?")
# "(`/home/me/.gemini/GEMINI.md`)": where Gemini CLI's prompt says the global personal memory is.
_GEMINI_GLOBAL_MEMORY = re.compile(r"`(/[^`\s]*/\.gemini/GEMINI\.md)`")
# How pi's system prompt introduces it; its tools (read, bash, edit, write) are a subset of OpenCode's.
_PI_PROMPT = re.compile(r"\boperating inside pi, a coding agent harness\b")
READY_PROMPT = "single word READY"
# A tool that Kilo Code offers and OpenCode, whose tools it otherwise shares, does not.
KILO_TOOL = "kilo_local_recall"
# OpenClaw offers most tools behind a compact surface: named in its system prompt, called through this tool.
OPENCLAW_TOOL = "tool_call"
# How OpenClaw's system prompt names its workspace, and the search tool of its memory plugin (memory-core).
_OPENCLAW_WORKSPACE = re.compile(r"^Working directory: (/\S+)$", re.MULTILINE)
_OPENCLAW_MEMORY_SEARCH = re.compile(r"^- memory_search \(", re.MULTILINE)
# What an audit trail is stored and searched under in an MCP memory server.
AUDIT_SUBJECT = "audit trail"
# What an imported suite's sessions are stored and searched under; each note's first session numbers it.
CHAT_SUBJECT = "chat session"
_SESSION_NUMBER = re.compile(r"[Ss]ession (\d+) of \d+")


def note_for(prompt: str) -> tuple[str, str] | None:
    """``(note, spoken answer)`` for a prompt that teaches something, else None."""
    solved = ledger_solver.solve(prompt)
    if solved is not None:
        key, value = solved
        return f"{NOTE} {key} = {value}", f"Noted: the answer is {value}."
    trail = audit_solver.parse_trail(prompt)
    if trail is not None:
        spoken = "Noted the audit trail."
        question = audit_solver.question_of(prompt)
        if question is not None:
            spoken = audit_solver.format_answer(audit_solver.answer(trail, question))
        return f"{TRAIL_NOTE} {json.dumps(trail)}", spoken
    told = retrieval.told_sessions(prompt)
    if told is not None:
        return f"{CHAT_NOTE} {json.dumps(told)}", "OK"
    return None


def recalled(context: str, prompt: str) -> str:
    """The answer to a later-session question from the notes in ``context`` alone."""
    key = ledger_solver.recall_key(prompt)
    if key is not None:
        values = [m["value"] for m in _NOTE_LINE.finditer(context) if m["key"].strip() == key]
        return values[-1] if values else UNKNOWN
    question = audit_solver.question_of(prompt)
    if question is not None and _is_audit(question):
        trails = [json.loads(m["trail"]) for m in _TRAIL_LINE.finditer(context)]
        if not trails:
            return json.dumps({"value": None, "evidence": []})
        return audit_solver.format_answer(audit_solver.answer(trails[-1], question))
    if question is not None:
        told = "\n".join(json.loads(m["chat"]) for m in _CHAT_LINE.finditer(context))
        return retrieval.answer_from(told, question)
    return UNKNOWN


def read_memories(context: str) -> str:
    """The context with the notes that the memories ``recall-provider`` showed (if any) teach, read as a model reads
    them: a memory holding a ledger, an audit trail or a told session gives the note its own step would have taken,
    so the answer comes from what the provider's search returned and nothing else."""
    learnt = [taught[0] for memory in provider.memories_in(context) if (taught := note_for(memory)) is not None]
    return "\n".join([context, *learnt])


def _is_audit(question: str) -> bool:
    """Whether a ``Question:`` line asks about an audit trail, rather than an imported suite's sessions."""
    try:
        audit_solver.parse_question(question)
    except ValueError:
        return False
    return True


def memory_command(api: Api, mode: Mode, note: str, context: str, tools: frozenset[str] = frozenset()) -> str | None:
    """The shell command that stores ``note`` where this CLI reads memory next time, or None."""
    line = shlex.quote(note)
    if api == "anthropic" and mode == "native":
        found = _AUTO_MEMORY_DIR.findall(context)
        if not found:
            return None
        folder = shlex.quote(found[-1])
        return f"mkdir -p {folder} && printf '%s\\n' {line} >> {folder}/MEMORY.md"
    if mode != "memory":
        return None
    if api == "anthropic":
        return f"mkdir -p ~/.claude && printf '%s\\n' {line} >> ~/.claude/CLAUDE.md"
    if api == "responses":
        home = '"${CODEX_HOME:-$HOME/.codex}"'
        return f"mkdir -p {home} && printf '%s\\n' {line} >> {home}/AGENTS.md"
    located = _memory_file(api, context, tools)
    if located is None:
        return None
    # No "$(dirname ...)": Gemini CLI and Qwen Code block command substitution in their shell tools.
    folder, name = located
    return f"mkdir -p {folder} && printf '%s\\n' {line} >> {folder}/{name}"


def _memory_file(api: Api, context: str, tools: frozenset[str]) -> tuple[str, str] | None:
    """``(folder as a shell word, file name)`` that Gemini CLI, Qwen Code, Copilot CLI, pi, OpenCode, Kilo Code or
    Cline loads in every session.

    All but Gemini CLI speak Chat Completions; their tools' names tell them apart, pi's system prompt tells it
    from OpenCode, and a tool of its own Kilo Code.
    """
    if api == "gemini":
        # Gemini CLI names its global memory file in the system prompt ($GEMINI_CLI_HOME moves it).
        named = _GEMINI_GLOBAL_MEMORY.findall(context)
        return (shlex.quote(named[-1].rsplit("/", 1)[0]), "GEMINI.md") if named else ('"$HOME/.gemini"', "GEMINI.md")
    if "run_shell_command" in tools:  # Qwen Code: its global context file
        return '"$HOME/.qwen"', "QWEN.md"
    if "bash" in tools and "view" in tools:  # Copilot CLI (its file tools are view/create/edit): its instructions
        return '"${COPILOT_HOME:-$HOME/.copilot}"', "copilot-instructions.md"
    if "bash" in tools and _PI_PROMPT.search(context):  # pi: the global context file in its agent folder
        return '"${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}"', "AGENTS.md"
    if "bash" in tools and KILO_TOOL in tools:  # Kilo Code, OpenCode's fork: its own global rules file
        return '"${XDG_CONFIG_HOME:-$HOME/.config}/kilo"', "AGENTS.md"
    if "bash" in tools:  # OpenCode: its global rules file
        return '"${XDG_CONFIG_HOME:-$HOME/.config}/opencode"', "AGENTS.md"
    if "run_commands" in tools:  # Cline: a file in its global rules folder
        return '"$HOME/Documents/Cline/Rules"', "memory.md"
    if "exec" in tools and OPENCLAW_TOOL in tools:  # OpenClaw: a note under memory/ in its workspace
        named = _OPENCLAW_WORKSPACE.findall(context)
        workspace = shlex.quote(named[-1]) if named else '"$HOME/.openclaw/workspace"'
        return f"{workspace}/memory", "recall.md"
    return None


# The memory tool that agents whose memory is a tool of their own name "memory", and a tool that tells Letta Code
# from Hermes Agent.
MEMORY_TOOL = "memory"
LETTA_TOOL = "SendAgentMessage"


def memory_tool_call(tools: frozenset[str], note: str) -> Reply | None:
    """A call of the agent's own memory tool that stores ``note``, when it offers one.

    Hermes Agent's ``memory`` adds an entry to ~/.hermes/memories/MEMORY.md; Letta Code's creates a memory
    block under ``system/`` in its memory filesystem. Either is in every later session's system prompt.
    """
    if MEMORY_TOOL not in tools:
        return None
    if LETTA_TOOL in tools:
        digest = hashlib.sha256(note.encode("utf-8")).hexdigest()[:12]
        arguments = {
            "command": "create",
            "reason": "Remember the result for a later session",
            "file_path": f"system/recall-{digest}.md",
            "description": "A result to remember for a later session.",
            "file_text": note,
        }
    else:
        arguments = {"action": "add", "target": "memory", "content": note}
    return Reply("", MEMORY_TOOL, json.dumps(arguments))


# memory-core indexes a note written late in a session at the next session's first search, and that search does
# not wait for it (the sync runs in the background): the first search can miss the note on a busy machine. A
# model that finds nothing searches again, twice at most, as a careful one would.
MEMORY_SEARCH_ATTEMPTS = 3


def memory_search_reply(
    request: Request, mode: Mode, question: tuple[str, Callable[[str], str], Callable[[str], bool]] | None
) -> Reply | None:
    """OpenClaw's memory plugin answers a later question: its ``memory_search`` is asked, the answer is what it found.

    A note under ``memory/`` is not in the prompt of a later session: only the search finds it, so the
    memory slot (``memory-core``, or ``none``, which offers no search) decides the score.
    """
    if mode != "memory" or question is None or OPENCLAW_TOOL not in request.tools:
        return None
    if not _OPENCLAW_MEMORY_SEARCH.search(request.context):
        return None
    key, answer_from, holds_note = question
    found = [call.result for call in request.calls if call.name == OPENCLAW_TOOL and "memory_search" in call.arguments]
    text = "\n".join(unquoted(result) for result in found)
    if len(found) < MEMORY_SEARCH_ATTEMPTS and not holds_note(text):
        # The key as written and in words: a lexical index and the fake embeddings each match one of them.
        query = f"{key} {re.sub(r'[_:]+', ' ', key)}"
        return Reply("", OPENCLAW_TOOL, json.dumps({"id": "memory_search", "args": {"query": query}}), kind="search")
    return Reply(answer_from(text), kind="recall")


def unquoted(text: str) -> str:
    """The strings inside a tool result that is JSON, JSON within JSON too (OpenClaw wraps its search's
    JSON in a text block), one a line; text that is no JSON as it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    strings: list[str] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, str):
            strings.append(unquoted(item) if item.lstrip()[:1] in ("{", "[") else item)
    return "\n".join(strings)


_SCHEMA_VALUES: dict[str, Any] = {"string": "OK", "integer": 1, "number": 1, "boolean": False}


def schema_reply(schema: dict[str, Any]) -> str:
    """A JSON object that satisfies a simple object schema: each required property says ``OK``, 1 or false."""
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    kinds = {name: (properties.get(name) or {}).get("type") for name in required}
    return json.dumps({name: _SCHEMA_VALUES.get(str(kind)) for name, kind in kinds.items()})


def _lesson(taught: tuple[str, str] | None) -> tuple[str, str, str] | None:
    """``(what the note is about, note, spoken answer)`` for a step that teaches, else None."""
    if taught is None:
        return None
    note, spoken = taught
    match = _NOTE_LINE.match(note)
    if match:
        return match["key"].strip(), note, spoken
    if note.startswith(CHAT_NOTE):
        # One entity or note per step: a server keeps one entity of a name, so a shared name would keep one step.
        number = _SESSION_NUMBER.search(note)
        return f"{CHAT_SUBJECT} {number[1] if number else 1}", note, spoken
    return AUDIT_SUBJECT, note, spoken


def _question(prompt: str) -> tuple[str, Callable[[str], str], Callable[[str], bool]] | None:
    """``(what to search for, how to answer from found text, whether found text holds a note)`` for a
    later-session question, else None."""
    key = ledger_solver.recall_key(prompt)
    question = audit_solver.question_of(prompt)
    if key is None and question is not None:
        key = AUDIT_SUBJECT if _is_audit(question) else CHAT_SUBJECT
    if key is None:
        return None
    return (
        key,
        lambda found: recalled(found, prompt),
        lambda found: any(n in found for n in (NOTE, TRAIL_NOTE, CHAT_NOTE)),
    )


def decide(request: Request, mode: Mode) -> Reply:
    """The reply to one request. A turn writes memory with at most one tool call, so a tool's
    output in this turn means the memory write is done."""
    if request.side_schema is not None:
        return Reply(schema_reply(request.side_schema))
    if is_extraction_prompt(request.prompt):
        return Reply(extraction_reply(request.prompt), kind="extract")
    if is_judge_prompt(request.prompt):
        return Reply(
            judge_verdict(request.prompt, lenient=mode == "lenient", gullible=mode == "gullible"), kind="judge"
        )
    coded = coding_reply(request, lambda note: memory_command(request.api, mode, note, request.context, request.tools))
    if coded is not None:
        return coded
    taught = note_for(request.prompt)
    through_mcp = mcp_reply(request, mode, _lesson(taught), _question(request.prompt))
    if through_mcp is not None:
        return through_mcp
    searched = memory_search_reply(request, mode, _question(request.prompt))
    if searched is not None:
        return searched
    if request.after_tool:
        # One session, one tool call: the memory is written, so say what was learnt and stop.
        # (Codex may append a user message after the tool's output, e.g. the AGENTS.md it just grew.)
        # The reply repeats the note it stored: a CLI that keeps the conversation (a live session)
        # then has it in context the way a real model remembers what it just wrote; a new session
        # sees it only if the CLI's memory kept it.
        taught = taught or note_for(request.context)
        return Reply(f"{taught[1]}\n{taught[0]}" if taught else "Done.", kind="stored")
    if taught is not None:
        note, spoken = taught
        call = memory_tool_call(request.tools, note) if mode == "memory" else None
        command = None if call else memory_command(request.api, mode, note, request.context, request.tools)
        call = call or (shell_call(request.tools, command) if command else None)
        if call is not None:
            return replace(call, kind="learn")
        if request.api == "chat" and not request.tools:
            # No tools (llm, aider): the conversation is the memory, so the note goes into the reply itself.
            return Reply(f"{spoken}\n{note}" if mode == "memory" else spoken, kind="learn")
        return Reply(spoken, kind="learn")
    if READY_PROMPT in request.prompt:
        return Reply("READY", kind="ready")
    if ledger_solver.recall_key(request.prompt) or audit_solver.question_of(request.prompt):
        return Reply(recalled(read_memories(request.context), request.prompt), kind="recall")
    # A side request (a title, a summary of the history): keep every note, so none is lost.
    notes = [m.group(0) for m in _NOTE_LINE.finditer(request.context)]
    notes += [m.group(0) for m in _TRAIL_LINE.finditer(request.context)]
    notes += [m.group(0) for m in _CHAT_LINE.finditer(request.context)]
    return Reply("\n".join(notes) or "OK")
