"""The same ledger cases and agent, run by inspect_ai: the peer pytest-recall is measured against.

Run with a Python that has ``inspect-ai`` (bench/inspect_peer.py starts it):
``python bench/_inspect_task.py SUITE --max-samples N --log-dir DIR -- AGENT...``.
Each case is one sample; its solver runs the case's steps one after another,
each as a fresh ``AGENT <prompt>`` process in a new empty directory, with the
case's ``RECALL_SCOPE_DIR`` shared by its steps, as the floor and the harness
do. The last step's stdout is the sample's output; ``includes()`` scores it
against answer.json's answer. The model is inspect's ``mockllm``: no model API
is called, and none is needed, since the agent is the program.

It prints one line, ``accuracy <mean> samples <n>``, so the caller can check
that inspect ran every case and scored what the harness scores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from inspect_ai import Task, eval  # type: ignore[import-not-found]
from inspect_ai.dataset import Sample  # type: ignore[import-not-found]
from inspect_ai.model import ModelOutput  # type: ignore[import-not-found]
from inspect_ai.scorer import includes  # type: ignore[import-not-found]
from inspect_ai.solver import Generate, TaskState, solver  # type: ignore[import-not-found]
from inspect_ai.util import subprocess as run_subprocess  # type: ignore[import-not-found]


def step_files(case: Path) -> list[Path]:
    return sorted(case.glob("step*.txt"), key=lambda path: int(path.stem.removeprefix("step")))


def samples(suite: Path) -> list[Sample]:
    found = []
    for case in sorted(path for path in suite.iterdir() if (path / "answer.json").is_file()):
        answer = json.loads((case / "answer.json").read_text(encoding="utf-8"))
        found.append(Sample(id=case.name, input=case.name, target=str(answer["answer"]), metadata={"case": str(case)}))
    return found


@solver  # type: ignore[untyped-decorator]
def agent_steps(agent: list[str]):  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        case = Path(state.metadata["case"])
        scope = tempfile.mkdtemp(prefix="inspect-scope-")
        stdout = ""
        try:
            for step in step_files(case):
                workdir = tempfile.mkdtemp(prefix="inspect-step-")
                try:
                    result = await run_subprocess(
                        [*agent, step.read_text(encoding="utf-8")], cwd=workdir, env={"RECALL_SCOPE_DIR": scope}
                    )
                    stdout = result.stdout
                finally:
                    shutil.rmtree(workdir, ignore_errors=True)
        finally:
            shutil.rmtree(scope, ignore_errors=True)
        state.output = ModelOutput.from_content(model="agent", content=stdout)
        return state

    return solve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", type=Path)
    parser.add_argument("--max-samples", type=int, required=True)
    parser.add_argument("--log-dir", required=True)
    parser.add_argument("agent", nargs="+")
    args = parser.parse_args()
    task = Task(dataset=samples(args.suite), solver=agent_steps(args.agent), scorer=includes())
    logs = eval(
        task,
        model="mockllm/model",
        max_samples=args.max_samples,
        max_subprocesses=args.max_samples,
        log_dir=args.log_dir,
        display="none",
    )
    log = logs[0]
    accuracy = log.results.scores[0].metrics["accuracy"].value if log.results else float("nan")
    print(f"accuracy {accuracy:.3f} samples {len(log.samples or [])} status {log.status}")


if __name__ == "__main__":
    main()
