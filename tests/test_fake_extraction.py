"""The fake model answers mem0's memory extraction (``infer=True``) by keeping each new message whole."""

from __future__ import annotations

import json
import urllib.request

import pytest

from pytest_recall.testing import FakeModelServer
from pytest_recall.testing.fake_extraction import extraction_reply, is_extraction_prompt

# The user turn mem0 2.2's generate_additive_extraction_prompt writes, sections in its order.
EXTRACTION = """## Summary


## Last k Messages
user: an earlier session's message, which is no new message

## Recently Extracted Memories
[]

## Existing Memories
[]

## New Messages
{messages}

## Observation Date
2026-12-07

## Current Date
2026-12-07

# Output:"""


@pytest.mark.parametrize(
    ("messages", "kept"),
    [
        ("user: Account ledger:\nclosing balance 27436.42\n", ["Account ledger:\nclosing balance 27436.42"]),
        (
            "system: be brief\nuser: Mel ran a charity race.\nassistant: Noted: a race for mental health.\n",
            ["Mel ran a charity race.", "Noted: a race for mental health."],
        ),
        ("user:    \n", []),
    ],
)
def test_each_new_message_is_one_memory_word_for_word(messages: str, kept: list[str]) -> None:
    prompt = EXTRACTION.format(messages=messages)
    assert is_extraction_prompt(prompt)
    memories = json.loads(extraction_reply(prompt))["memory"]
    assert [memory["text"] for memory in memories] == kept
    assert [memory["id"] for memory in memories] == [str(index) for index in range(len(kept))]


def test_a_prompt_that_only_mentions_the_sections_is_no_extraction() -> None:
    assert not is_extraction_prompt("Explain what '## New Messages' means in mem0's prompt.")
    assert not is_extraction_prompt(EXTRACTION.format(messages="user: hi").replace("# Output:", "Answer now."))


def test_the_server_answers_mem0s_json_mode_request_with_the_memories() -> None:
    body = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a memory extractor."},
            {"role": "user", "content": EXTRACTION.format(messages="user: The vault code is 4417.\n")},
        ],
        "response_format": {"type": "json_object"},
    }
    with FakeModelServer("plain") as model:
        request = urllib.request.Request(
            f"{model.base_url}/v1/chat/completions",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
    content = json.loads(reply["choices"][0]["message"]["content"])
    assert content == {"memory": [{"id": "0", "text": "The vault code is 4417."}]}
