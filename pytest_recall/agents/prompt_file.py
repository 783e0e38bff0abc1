"""``recall-judge --prompt-file=FILE``: a judge prompt of the user's, with named fields, and every prompt's hash.

A published number is only as reproducible as its judge prompt, and the
field's prompts differ (LongMemEval's official one, a vendor's, a strict one):
so the user can bring theirs as a file, in Python's ``str.format`` syntax with
the fields :data:`PROMPT_FIELDS` and ``{{``/``}}`` for a literal brace. A file
that names any other field, or holds a lone brace, is refused before the model
is asked: a judge error, never a verdict. The fields go in as the request
carries them, untouched, so an official prompt is put to the model exactly.

Each prompt's SHA-256 travels with its verdict (see :func:`prompt_sha256`):
the file's bytes for a user's prompt; for a built-in one, the prompt of that
question type with its fields left as placeholders, so a reworded rule changes
the hash of its type and no other, and the protocol block can list them all
before any verdict is in.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_recall.agents.judge_prompts import as_text, builtin_templates, judge_prompt, question_type, rule_name

# The fields a prompt file may name; what the judge request carries (see scoring/judge_scope.judge_request).
PROMPT_FIELDS = ("question", "gold", "answer", "question_type", "question_date")
# A judge prompt is a page; a bigger file is a mistake (a data file named instead), refused in one line.
MAX_PROMPT_FILE_BYTES = 256 * 1024


class PromptFileError(ValueError):
    """A prompt file that cannot be used, said in one line that names the fix."""


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A user's judge prompt: its text with named fields, and the SHA-256 of the file it came from."""

    text: str
    sha256: str

    def render(self, request: Mapping[str, Any]) -> str:
        return self.text.format_map(prompt_fields(request))


def read_prompt_file(path: str) -> PromptTemplate:
    """The template in ``path``, checked: readable UTF-8 text naming only :data:`PROMPT_FIELDS`."""
    try:
        with open(path, "rb") as source:
            data = source.read(MAX_PROMPT_FILE_BYTES + 1)
    except OSError as exc:
        raise PromptFileError(f"cannot read the prompt file {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_PROMPT_FILE_BYTES:
        raise PromptFileError(f"the prompt file {path} is over {MAX_PROMPT_FILE_BYTES // 1024} KiB; is it a prompt?")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PromptFileError(f"the prompt file {path} is not UTF-8 text") from None
    _check_fields(text, path)
    return PromptTemplate(text, hashlib.sha256(data).hexdigest())


def _check_fields(text: str, path: str) -> None:
    fields = ", ".join(f"{{{name}}}" for name in PROMPT_FIELDS)
    braces = "write {{ and }} for a literal brace"
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptFileError(f"the prompt file {path} has a lone brace ({exc}); {braces}") from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in PROMPT_FIELDS or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise PromptFileError(f"the prompt file {path} names {shown}; the fields are {fields}; {braces}")


def prompt_fields(request: Mapping[str, Any]) -> dict[str, str]:
    """The request's values by field name, as a prompt file reads them; a field the request lacks is empty."""
    return {
        "question": str(request.get("question") or ""),
        "gold": as_text(request.get("gold")),
        "answer": str(request.get("answer") or ""),
        "question_type": question_type(request) or str(request.get("kind") or ""),
        "question_date": str(request.get("question_date") or ""),
    }


def judge_prompts_sha256() -> str:
    """The SHA-256 of the bundled judge's prompt module, which stands for its prompts in a run's protocol."""
    return hashlib.sha256(Path(__file__).with_name("judge_prompts.py").read_bytes()).hexdigest()


def builtin_prompts_sha256() -> dict[str, str]:
    """The SHA-256 of each built-in prompt (with placeholders for its fields), by the question type it is for."""
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in builtin_templates().items()}


def prompt_sha256(template: PromptTemplate | None, request: Mapping[str, Any]) -> str:
    """The SHA-256 of the prompt a verdict was given under: the user's file, else the built-in prompt of its kind."""
    return template.sha256 if template is not None else builtin_prompts_sha256()[rule_name(request)]


def prompt_for(template: PromptTemplate | None, request: Mapping[str, Any]) -> str:
    return template.render(request) if template is not None else judge_prompt(request)


def read_prompt_option(args: list[str]) -> tuple[str | None, list[str]]:
    """``--prompt-file=FILE`` or ``--prompt-file FILE`` taken out of recall-judge's arguments; the rest go to llm."""
    rest: list[str] = []
    path: str | None = None
    words = iter(args)
    for word in words:
        if word.startswith("--prompt-file="):
            path = word.split("=", 1)[1]
        elif word == "--prompt-file":
            path = next(words, "")
        else:
            rest.append(word)
            continue
        if not path:
            raise PromptFileError("--prompt-file needs a file: --prompt-file=FILE")
    return path, rest
