"""A test agent that asks a model over HTTP each step, and reports a rate limit the way an adapter does.

Its prompt is ``remember VALUE`` or ``recall``, kept in the case's memory
scope as the scripted agent keeps it; each step first asks the chat
completions API at ``$RECALL_TEST_MODEL_URL``. A refusal (HTTP 429) goes
through the adapters' own ``finish``, which classes it as a rate limit.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from pytest_recall.agents.adapters.common import Outcome, finish


def ask_model(prompt: str) -> Outcome | None:
    """None when the model answered; the failure to report when it did not."""
    body = json.dumps({"model": "fake", "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(
        os.environ["RECALL_TEST_MODEL_URL"] + "/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        said = exc.read().decode(errors="replace")
        return Outcome("", ok=False, failure=f"HTTP {exc.code}: {said}; retry-after {exc.headers.get('Retry-After')}")
    return None


def main() -> int:
    prompt = sys.argv[-1].strip()
    refused = ask_model(prompt)
    if refused is not None:
        return finish(refused, 1)
    memory = Path(os.environ["RECALL_SCOPE_DIR"]) / "memory.txt"
    if prompt.startswith("remember "):
        memory.write_text(prompt.removeprefix("remember "), encoding="utf-8")
        return finish(Outcome("noted", ok=True), 0)
    return finish(Outcome(memory.read_text(encoding="utf-8") if memory.exists() else "UNKNOWN", ok=True), 0)


if __name__ == "__main__":
    raise SystemExit(main())
