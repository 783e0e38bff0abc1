"""The fake model's OpenAI-compatible embeddings: deterministic, lexical, over real HTTP on loopback."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
import urllib.error

import pytest
from test_fake_model import logged, post

from pytest_recall.testing import FakeModelServer
from pytest_recall.testing.fake_embeddings import cosine, embed

NOTE = "The closing balance of the Harbor account is 27436.42"
QUESTION = "What was the closing balance of the Harbor account?"
OTHER = "My dentist appointment moved to Thursday afternoon"


def test_texts_that_share_words_are_near_and_texts_that_share_none_are_not():
    note, question, other = embed(NOTE), embed(QUESTION), embed(OTHER)

    assert cosine(question, note) > 0.5
    assert abs(cosine(question, other)) < 0.2
    assert cosine(note, note) == pytest.approx(1.0)
    assert cosine(embed(""), embed("")) == pytest.approx(1.0)


def test_a_vector_is_the_same_in_another_process():
    code = "import json; from pytest_recall.testing.fake_embeddings import embed; print(json.dumps(embed('Harbor 1')))"
    other = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout)

    assert other == embed("Harbor 1")


def test_the_endpoint_answers_a_list_in_floats_and_a_string_in_base64_and_logs_the_request(tmp_path):
    log_path = tmp_path / "requests.jsonl"
    with FakeModelServer("memory", log_path=log_path) as server:
        _, raw = post(server, "/v1/embeddings", {"model": "fake-embed", "input": [NOTE, QUESTION], "dimensions": 64})
        _, packed = post(server, "/embeddings", {"input": NOTE, "encoding_format": "base64"})

    listed = json.loads(raw)
    assert [item["index"] for item in listed["data"]] == [0, 1]
    assert listed["model"] == "fake-embed"
    assert listed["usage"]["prompt_tokens"] > 0
    assert listed["data"][0]["embedding"] == pytest.approx(embed(NOTE, 64))
    vector = json.loads(packed)["data"][0]["embedding"]
    unpacked = struct.unpack("<256f", base64.b64decode(vector))
    assert list(unpacked) == pytest.approx(embed(NOTE), abs=1e-6)
    assert [entry["inputs"] for entry in logged(log_path)] == [2, 1]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"input": []}, "non-empty list"),
        ({"input": [{"text": "x"}]}, "string or a list of token ids"),
        ({"input": "x", "dimensions": 0}, "dimensions"),
        ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
    ],
)
def test_a_request_openai_would_refuse_gets_a_400_that_says_why(body, why):
    with FakeModelServer("memory") as server, pytest.raises(urllib.error.HTTPError) as refused:
        post(server, "/v1/embeddings", body)

    assert refused.value.code == 400
    assert why in json.loads(refused.value.read())["error"]["message"]
