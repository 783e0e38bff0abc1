"""``recall-provider MODULE:FACTORY [OPTIONS] PROMPT``: a memory library measured as the agent.

The field compares memory libraries ("providers": mem0, Zep, ...) by calling
their add and search directly, with an answering model on top. This runs one
that way under the harness: each step is a fresh process, as for any agent,
so what the last step knows is only what the library kept.

- ``FACTORY(scope)`` builds the provider over ``$RECALL_SCOPE_DIR``, the case's
  memory scope: the same folder for all of a case's steps, a new one per case.
  ``--model-url`` is ``$OPENAI_BASE_URL`` for it when that is unset, so a
  library's own embedder or LLM calls the same endpoint as the answer.
- A step before the case's last (``$RECALL_STEP`` below ``$RECALL_LAST_STEP``)
  is an ingest: its prompt goes whole to ``add``, and the agent says ``OK``.
- The last step is the question: its prompt (its ``Question:`` line alone,
  when it has one, as imported suites write it) goes to ``search``, and a
  model answers the prompt from the memories that came back, and from nothing
  else. With ``--retrieval-only`` no model is asked: the step prints what the
  search returned, for ``--recall-answer-judge=evidence`` or ``contains``.

Every add and search is written to ``$RECALL_MEMORY_LOG`` (its latency, and
what a search returned), which the harness reads into the case's
``memory_use``: the report then gives the provider's calls, bytes returned,
latency p50/p95 and evidence recall beside the answer's score. A provider
that raises, or a model that refuses or cannot be reached, is one line on
stderr and exit status 2: the agent's failure, scored 0, never an error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_recall.agents.call_log import CallLog

FAILED = 2
DEFAULT_LIMIT = 5
DEFAULT_MODEL = "gpt-4o-mini"
MODEL_TIMEOUT_S = 120.0
_QUESTION = re.compile(r"^Question: (.+)$", re.MULTILINE)
ANSWER_INSTRUCTIONS = (
    "You answer the user's question from your memory. Below is what a search of it returned for this question, "
    "most relevant first; nothing else of earlier sessions is known to you. Follow the question's own "
    "instructions on how to answer."
)
NO_MEMORIES = "The search returned no memories."
_MEMORY = re.compile(r"<memory>\n(.*?)\n</memory>", re.DOTALL)


@runtime_checkable
class MemoryProvider(Protocol):
    """What a memory library offers the harness: store a text, and find the stored texts a query needs.

    ``add`` gets an ingest step's prompt whole; how the library cuts it up,
    extracts or embeds it is its own business. ``search`` returns at most
    ``limit`` texts, most relevant first: what the answering model will read.
    """

    def add(self, text: str) -> None: ...

    def search(self, query: str, limit: int) -> Sequence[str]: ...


class ProviderError(Exception):
    """Something outside the provider failed (a bad FACTORY, the model); the message is the one line to show."""


def load_factory(spec: str) -> Callable[[Path], MemoryProvider]:
    """The callable ``MODULE:FACTORY`` names (a dotted attribute path after the colon is followed)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ProviderError(f"{spec!r} is not MODULE:FACTORY, e.g. pytest_recall.agents.keyword_provider:KeywordStore")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProviderError(f"cannot import {module_name!r} ({exc}); is it installed in this environment?") from None
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ProviderError(f"{module_name!r} has no {attribute!r}")
        found = getattr(found, part)
    if not callable(found):
        raise ProviderError(f"{spec} is not callable: FACTORY must take the scope folder and return a provider")
    return found  # type: ignore[no-any-return]


def query_of(prompt: str) -> str:
    """What the question is searched by: its ``Question:`` line when the prompt has one, else the whole prompt."""
    asked = _QUESTION.search(prompt)
    return asked.group(1).strip() if asked else prompt


def memory_block(found: Sequence[str]) -> str:
    """The answering model's instructions, with each memory the search returned in its own ``<memory>`` element."""
    shown = "\n".join(f"<memory>\n{text}\n</memory>" for text in found) or NO_MEMORIES
    return f"{ANSWER_INSTRUCTIONS}\n\n{shown}"


def memories_in(instructions: str) -> list[str]:
    """The memories :func:`memory_block` put in ``instructions`` (the fake model reads them back this way)."""
    return [match.group(1) for match in _MEMORY.finditer(instructions)]


def ask_model(url: str, model: str, api_key: str | None, instructions: str, prompt: str) -> tuple[str, dict[str, Any]]:
    """The answer of an OpenAI-compatible Chat Completions endpoint at ``url``, and its usage figures."""
    body = {
        "model": model,
        "messages": [{"role": "system", "content": instructions}, {"role": "user", "content": prompt}],
        "temperature": 0,
    }
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    endpoint = url.rstrip("/") + "/chat/completions"
    request = urllib.request.Request(endpoint, json.dumps(body).encode("utf-8"), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=MODEL_TIMEOUT_S) as response:
            reply = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise ProviderError(f"the answering model at {endpoint} refused: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ProviderError(f"the answering model at {endpoint} cannot be reached ({reason}); is it running?") from None
    except ValueError:
        raise ProviderError(f"the answering model at {endpoint} answered with no JSON") from None
    try:
        text = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ProviderError(f"the answering model at {endpoint} answered with no message") from None
    usage = reply.get("usage")
    return str(text or ""), usage if isinstance(usage, dict) else {}


def write_cost(usage: dict[str, Any]) -> None:
    """The answering model's tokens into ``$RECALL_COST_FILE``, when it said them."""
    path = os.environ.get("RECALL_COST_FILE")
    figures = {"tokens_in": usage.get("prompt_tokens"), "tokens_out": usage.get("completion_tokens")}
    if path and all(isinstance(value, int) for value in figures.values()):
        Path(path).write_text(json.dumps(figures), encoding="utf-8")


def run_step(options: argparse.Namespace, prompt: str, scope: Path, is_question: bool) -> str:
    """One step: an ingest added, or the question searched (and answered); what the agent says."""
    if options.model_url:
        # A library's own OpenAI client (mem0's embedder and LLM) then reaches the endpoint the answer comes from.
        os.environ.setdefault("OPENAI_BASE_URL", options.model_url)
    factory = load_factory(options.factory)
    log = CallLog.from_environment(
        options.name or options.factory.rpartition(":")[2], reads=("search",), writes=("add",)
    )
    try:
        provider = factory(scope)
    except Exception as exc:
        raise ProviderError(raised("FACTORY", exc)) from None
    if not is_question:
        started = time.perf_counter()
        _logged(log, "add", prompt, started, lambda: provider.add(prompt))
        log.call("add", prompt, "", latency_ms=since(started))
        return "OK"
    query = query_of(prompt)
    started = time.perf_counter()
    found = _logged(log, "search", query, started, lambda: list(provider.search(query, options.limit)))
    if not all(isinstance(text, str) for text in found):
        log.call("search", query, "", latency_ms=since(started), is_error=True)
        raise ProviderError(f"the provider's search returned {_kinds(found)}, not a list of texts")
    log.call("search", query, "\n".join(found), latency_ms=since(started))
    if options.retrieval_only:
        return "\n".join(found)
    url = options.model_url or os.environ.get("OPENAI_BASE_URL")
    if not url:
        raise ProviderError(
            "no answering model: give --model-url (an OpenAI-compatible /v1 URL, e.g. `pytest-recall fake-model`'s "
            "plus /v1), set OPENAI_BASE_URL, or pass --retrieval-only"
        )
    answer, usage = ask_model(url, options.model, os.environ.get(options.api_key_env), memory_block(found), prompt)
    write_cost(usage)
    return answer


def _logged(log: CallLog, tool: str, argument: str, started: float, call: Callable[[], Any]) -> Any:
    """``call()``; what it raises is logged as a failed call and becomes one line naming the method."""
    try:
        return call()
    except Exception as exc:
        log.call(tool, argument, "", latency_ms=since(started), is_error=True)
        raise ProviderError(raised(tool, exc)) from None


def since(started: float) -> float:
    """Milliseconds since ``started`` (``time.perf_counter``)."""
    return (time.perf_counter() - started) * 1000


def raised(what: str, exc: Exception) -> str:
    """One line for an exception the provider raised: what raised it, its type, its message's first line."""
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return f"the provider's {what} raised {type(exc).__name__}" + (f": {first}" if first else "")


def _kinds(found: Sequence[Any]) -> str:
    return ", ".join(sorted({type(item).__name__ for item in found}))


def step_kind(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether this step is the case's question: ``$RECALL_STEP`` is ``$RECALL_LAST_STEP``."""
    step, last = env.get("RECALL_STEP"), env.get("RECALL_LAST_STEP")
    if not step or not last:
        raise ProviderError("RECALL_STEP and RECALL_LAST_STEP are not set; run it under pytest-recall")
    return step == last


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="recall-provider", description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", metavar="MODULE:FACTORY", help="the callable that builds the provider from a folder")
    parser.add_argument("--name", help="the provider's name in the report (default: FACTORY's)")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help=f"texts a search returns (default {DEFAULT_LIMIT})"
    )
    parser.add_argument("--retrieval-only", action="store_true", help="print what search returned; ask no model")
    model = parser.add_argument_group("the answering model (OpenAI-compatible Chat Completions)")
    model.add_argument(
        "--model-url",
        help="its base URL, ending in /v1 (default: $OPENAI_BASE_URL); exported as $OPENAI_BASE_URL to the provider "
        "when that is unset",
    )
    model.add_argument("--model", default=DEFAULT_MODEL, help=f"its model name (default {DEFAULT_MODEL})")
    model.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the variable holding its key")
    parser.add_argument("prompt", help="the step's prompt (the harness puts it last)")
    options = parser.parse_args(list(argv))
    if options.limit < 1:
        parser.error("--limit must be 1 or more")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse(sys.argv[1:] if argv is None else argv)
    scope = os.environ.get("RECALL_SCOPE_DIR")
    try:
        if not scope:
            raise ProviderError("RECALL_SCOPE_DIR is not set; run it under pytest-recall")
        said = run_step(options, options.prompt, Path(scope), step_kind(os.environ))
    except ProviderError as exc:
        print(f"recall-provider: {exc}", file=sys.stderr)
        return FAILED
    print(said, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
