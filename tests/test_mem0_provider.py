"""mem0 open source as a ``recall-provider`` provider, the real library, against the fake model on loopback.

mem0's embedder and LLM are pointed at the fake model (its lexical
``/v1/embeddings``), its vector store is a local Qdrant folder in the case's
scope: no network, no hosted service. Installed by the ``[mem0]`` extra; a
missing mem0 skips these tests on a developer's machine and fails them under CI.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_wiring import installed

from conftest import SEED_SUITE
from pytest_recall.cli import main
from pytest_recall.testing import FakeModelServer

pytestmark = [pytest.mark.real_cli, pytest.mark.slow]
PROVIDER = str(Path(sys.executable).with_name("recall-provider"))
MEM0 = "pytest_recall.agents.mem0_provider"
LOCOMO = Path(__file__).resolve().parent / "data" / "locomo_tiny.json"
# One conversation's three sessions and three of its answerable questions: nine sessions with the control.
QUESTIONS = ("conv-26-q003", "conv-26-q005", "conv-26-q006")
# Each session imports mem0 (Qdrant's client, about 1.5 s of CPU): a cap for a loaded machine, not an expectation.
INNER_RUN_TIMEOUT_S = 600.0


@pytest.fixture(autouse=True)
def mem0_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    installed("mem0" if importlib.util.find_spec("mem0") else None, "mem0 is not installed: pip install -e '.[mem0]'")
    # The provider's --model-url is the one endpoint mem0 may reach.
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def mem0_command(model: FakeModelServer, factory: str = "open_source") -> str:
    return shlex.join([PROVIDER, f"{MEM0}:{factory}", "--model-url", f"{model.base_url}/v1", "--name", "mem0"])


@pytest.mark.parametrize(("factory", "extractions"), [("open_source", 0), ("extracting", 2)])
def test_mem0_remembers_the_seed_cases_through_the_fake_models_embeddings(
    recall_suite: Any, factory: str, extractions: int
) -> None:
    for case in ("case_01", "case_02"):
        shutil.copytree(SEED_SUITE / case, recall_suite.root / "seed" / case)
    log = recall_suite.pytester.path / "model.jsonl"
    with FakeModelServer("plain", log_path=log) as model:
        result = recall_suite.run("--recall-control", command=mem0_command(model, factory), timeout=INNER_RUN_TIMEOUT_S)
    requests = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    embedded = [entry for entry in requests if entry.get("kind") == "embeddings"]
    # With infer on, each add first asks mem0's LLM (the fake model) which memories to keep.
    assert len([entry for entry in requests if entry.get("kind") == "extract"]) == extractions
    report = recall_suite.report()
    scores = sorted((record["control"], record["score"]) for record in report["cases"])
    assert scores == [(False, 1.0), (False, 1.0), (True, 0.0), (True, 0.0)]
    for record in report["cases"]:
        use = record["memory_use"]
        expected = (0, 1) if record["control"] else (1, 1)
        assert (use["writes_before"], use["reads_last"], use["errors"]) == (*expected, 0), use
        # mem0's notices about its optional extras (spaCy, fastembed) are not the step's output.
        assert all(step["stderr"] == "" for step in record["steps"]), record["steps"]
    # Each add and each search embedded its text at the fake model: two cases' ledgers and four questions;
    # with infer on, an add also embeds the new message, to find the memories it may repeat.
    assert len(embedded) == 6 + extractions
    # The latency figures are the memory runs': an add and a search in each.
    assert report["memory"]["latency_ms"]["mem0"]["calls"] == 4
    result.stdout.fnmatch_lines(["*control (no memory): score 0.000*", "*mem0: 4 calls, p50 * ms, p95 * ms*"])


def test_mem0_on_an_imported_locomo_file_retrieves_the_evidence_and_beats_its_control(recall_suite: Any) -> None:
    ids = [argument for question in QUESTIONS for argument in ("--id", question)]
    assert main(["import", "locomo", str(LOCOMO), *ids, "--out", str(recall_suite.root / "locomo")]) == 0
    with FakeModelServer("plain") as model:
        result = recall_suite.run("--recall-control", command=mem0_command(model), timeout=INNER_RUN_TIMEOUT_S)
    report = recall_suite.report()
    remembered = [record for record in report["cases"] if not record["control"]]
    assert len(remembered) == 3 and report["control"]["n"] == 3
    assert report["score"] > 0.2 and report["control"]["score"] == 0.0
    assert all(record["memory_use"]["evidence_retrieved"] for record in remembered)
    memory = report["memory"]
    assert memory["evidence_recall"] == 1.0 and memory["control_calls"] == 3
    figures = memory["latency_ms"]["mem0"]
    assert figures["calls"] == 3 + 3 and 0 < figures["p50"] <= figures["p95"]
    result.stdout.fnmatch_lines(["*evidence recall 1.000*", "*mem0: 6 calls, p50 * ms, p95 * ms*"])
