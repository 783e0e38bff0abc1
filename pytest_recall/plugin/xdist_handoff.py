"""Everything that crosses from the xdist controller to its workers, and every "is this a worker?" test.

The controller reads the resume file, the shard of the environment and the
transcript mode once, and hands them to each worker in its ``workerinput``:
a worker (on another machine, maybe) sees none of the controller's files,
environment or ini. Under ``--recall-concurrency`` with ``--dist=load`` it
also deals the cases out in batches (:mod:`pytest_recall.plugin.xdist_batches`),
and tells each worker the batch size; with ``--dist=load`` it also deals each
case group whole to one worker, with or without concurrency. Every
``workerinput`` key is here.

Back the other way, a case's record (and a trap task's grader entry) rides
on its report's ``user_properties``: as the object itself in one process,
as one line of JSON text from a worker, since that is what crosses execnet.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_recall.plugin.config import CONFIG_KEY
from pytest_recall.reporting import ENTRY_PROPERTY, CaseRecord
from pytest_recall.sessions import SharedVerdicts, remove_agent_tree

# The user property that carries a case's record from the item to the recorder.
RECORD_PROPERTY = "recall_record"
# Beside the record when ``--recall-resume`` reused it rather than running the case: the recorder counts them.
RESUMED_PROPERTY = "recall_resumed"

# The resumable records the controller read.
RESUME_INPUT = "recall_resume_index"
# The controller's shard, read from its environment under --recall-shard=auto.
SHARD_INPUT = "recall_shard"
# What a record keeps is the controller's call.
TRANSCRIPTS_INPUT = "recall_transcripts"
# The batch size a worker was dealt in; absent, it runs one case at a time.
BATCH_INPUT = "recall_batch"
# Where workers on this host share the judge command's verdicts, and the secret that signs them; see shared_verdicts.
JUDGE_CACHE_INPUT = "recall_judge_cache"
# --recall-stop=decided: the file the controller writes once the score gate is decided, and the secret that signs it
# (see plugin/stop.py).
STOP_FILE_INPUT = "recall_stop_file"
# The folder of the run's rate-limit pause on this host and the secret that signs its file (see plugin/rate_pause.py);
# absent on another host.
PAUSE_FOLDER_INPUT = "recall_rate_pause"
_WORKER_ID = re.compile(r"^gw(\d+)$")


def worker_input(config: pytest.Config) -> Mapping[str, Any] | None:
    """What the controller handed this xdist worker; None on the controller or in a plain run."""
    handed: Mapping[str, Any] | None = getattr(config, "workerinput", None)
    return handed


def is_worker(config: pytest.Config) -> bool:
    return worker_input(config) is not None


def record_property(config: pytest.Config, record: CaseRecord) -> tuple[str, object]:
    """The record as its item hands it on: the object, or on a worker its JSON as one compact line."""
    return RECORD_PROPERTY, _wire_text(record.as_json()) if is_worker(config) else record


def received_record(properties: list[tuple[str, object]]) -> tuple[CaseRecord, str | None] | None:
    """The record a report carries, and its JSON text when it came over the wire (the spool writes that as it is)."""
    for name, value in properties:
        if name != RECORD_PROPERTY:
            continue
        if isinstance(value, CaseRecord):
            return value, None
        if isinstance(value, str):
            return CaseRecord.from_json(json.loads(value)), value
    return None


def entry_property(config: pytest.Config, entry: dict[str, Any]) -> tuple[str, object]:
    """A trap task's grader entry as its item hands it on: the dict itself, or on a worker its JSON text."""
    return ENTRY_PROPERTY, _wire_text(entry) if is_worker(config) else entry


def received_entry(value: object) -> dict[str, Any] | None:
    """A grader entry as a report carries it, whichever side of the wire it was made on."""
    if isinstance(value, dict):
        return value
    return json.loads(value) if isinstance(value, str) else None


def _wire_text(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def handed(config: pytest.Config, key: str) -> Any:
    """The value the controller handed this worker under ``key``; None on the controller or when not handed."""
    return (worker_input(config) or {}).get(key)


def worker_position(workerinput: Mapping[str, Any]) -> tuple[int, int] | None:
    """(index, count) of an xdist worker from its ``workerinput``; None for a worker outside the first deal."""
    match = _WORKER_ID.match(str(workerinput.get("workerid", "")))
    count = workerinput.get("workercount")
    if match is None or not isinstance(count, int) or not 0 <= int(match.group(1)) < count:
        return None
    return int(match.group(1)), count


def dealt_batch(config: pytest.Config) -> tuple[int, tuple[int, int]] | None:
    """On a worker dealt its cases in batches: the batch size and the worker's position; else None."""
    given = worker_input(config)
    if given is None:
        return None
    batch, position = given.get(BATCH_INPUT), worker_position(given)
    return (int(batch), position) if batch and position is not None else None


class ResumeHandoff(Protocol):
    """The resume index, as far as a worker needs it (see ``runlog.ResumeIndex.handoff``)."""

    def handoff(self, *, same_host: bool) -> dict[str, Any]: ...


class WorkerHandoff:
    """Controller only, under xdist: what the controller read once goes to every worker.

    Each worker would otherwise read the resume file again and probe bwrap
    and the agent command again, for the same answer. ``resume`` gives the
    resume index the controller read, if any, when a worker starts.
    """

    def __init__(self, config: pytest.Config, resume: Callable[[], ResumeHandoff | None]) -> None:
        self.config = config
        self.resume = resume
        self._judge_cache: SharedVerdicts | None = None

    def pytest_configure_node(self, node: Any) -> None:
        run_config = self.config.stash[CONFIG_KEY]
        index = self.resume()
        same_host = bool(getattr(getattr(node.gateway, "spec", None), "popen", False))
        node.workerinput[RESUME_INPUT] = index.handoff(same_host=same_host) if index is not None else None
        node.workerinput[SHARD_INPUT] = run_config.scale_out.shard
        node.workerinput[TRANSCRIPTS_INPUT] = run_config.outputs.transcripts
        if self._batch() is not None:
            node.workerinput[BATCH_INPUT] = self._batch()
        if run_config.llm_judge.on and same_host:
            # A worker on another host cannot see this folder; it keeps a cache of its own.
            node.workerinput[JUDGE_CACHE_INPUT] = self._shared_verdicts().handoff()

    def _shared_verdicts(self) -> SharedVerdicts:
        """One folder and secret for the run, made when the first worker starts; the folder goes when the run ends."""
        if self._judge_cache is None:
            shared = self._judge_cache = SharedVerdicts.create()

            def remove() -> None:
                remove_agent_tree(Path(shared.folder))

            self.config.add_cleanup(remove)
        return self._judge_cache

    def _batch(self) -> int | None:
        """The batch each worker is dealt: --recall-concurrency, when above 1 and xdist balances load."""
        concurrency = self.config.stash[CONFIG_KEY].scale_out.concurrency
        return concurrency if concurrency > 1 and self.config.getoption("dist", None) == "load" else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getoption("dist", None) != "load":
            return None
        from pytest_recall.plugin.xdist_batches import BatchScheduling

        # Without concurrency it deals only a collection with case groups, each group to one worker.
        return BatchScheduling(config, log, self._batch(), worker_position)
