"""pytest-recall's agent-supermemory suite as a ``verifiers.v1`` environment.

``vf-eval pytest-recall-agent-supermemory`` imports this module by that id (an
Environments Hub id ``owner/name@version`` loads it too) and takes from
``__all__`` the taskset, the env that drives an episode and the default harness:

- ``AuditTaskset`` yields one ``AuditTask`` per case of ``--env.taskset.split``
  (train or eval), the first ``--env.taskset.size`` of them (1 to 256), of the
  suite's latest version (``--env.taskset.version``: 3 by default; 1 and 2 by
  number, so older results stay comparable).
- ``AuditEpisodeEnv.run`` is the episode: the model answers the rehearsal
  question, the env judges that answer and sends the feedback with the transfer
  question, the model answers it. The reward is the suite's evidence judge on
  the transfer answer (1.0, 0.25 or 0.0); the rehearsal's score is a metric.
- ``ChatHarness`` is the default harness: a chat loop in this process that
  posts the conversation to the run's model endpoint. With the env's default
  subprocess runtime nothing is installed, no sandbox is started and nothing
  but that endpoint is reached.

Everything about the suite (rows, feedback, judge) comes from
``pytest_recall.verifiers_env``; this module only binds it to the v1 API, in a
form that runs on verifiers 0.3.1 and 0.4.x.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from pytest_recall import verifiers_env as episode


def _needs_v1(error: ImportError) -> str:
    try:
        found = f"verifiers {metadata.version('verifiers')} is installed"
    except metadata.PackageNotFoundError:
        found = "verifiers is not installed"
    return (
        f"{episode.ENV_ID} needs the verifiers.v1 API of verifiers 0.3.1 or 0.4.x, but {found} ({error}): "
        "pip install 'verifiers>=0.3.1,<0.5'"
    )


try:
    import httpx
    import verifiers.v1 as vf
    from pydantic import Field, field_validator
    from verifiers.v1.dialects.chat import message_to_wire
except ImportError as exc:
    raise ImportError(_needs_v1(exc)) from exc

__all__ = ["AuditData", "AuditEpisodeEnv", "AuditTask", "AuditTaskset", "ChatHarness", "load_environment"]


class AuditData(vf.TaskData):
    """One case: ``prompt`` is the trail and the rehearsal question, ``answer`` the transfer answer's JSON line.

    ``info`` holds the case id, family and split, the transfer prompt and the
    rehearsal's expectation; the model sees none of it before its time.
    """

    answer: str
    info: dict[str, Any]


class AuditTask(vf.Task[AuditData, vf.State, vf.TaskConfig]):
    """The suite's judge, as the reward on the transfer answer and a metric on the rehearsal answer."""

    @vf.reward(weight=1.0)
    async def transfer_score(self, trace: vf.Trace) -> float:
        return episode.transfer_reward(trace.messages, self.data.answer, self.data.info)

    @vf.metric
    async def rehearsal_score(self, trace: vf.Trace) -> float:
        return episode.rehearsal_score(trace.messages, self.data.info)


class AuditTasksetConfig(vf.TasksetConfig):
    split: str = "train"
    """Which split's cases: train or eval (they never share a seed)."""
    size: int = Field(64, ge=1, le=episode.MAX_SIZE)
    """How many cases, from the first: a larger size only appends cases."""
    version: int = episode.VERSION
    """Which version of the suite: the latest by default; an older one by number."""

    @field_validator("version")
    @classmethod
    def _known_version(cls, version: int) -> int:
        if version not in episode.VERSIONS:
            raise ValueError(f"version must be one of {', '.join(map(str, episode.VERSIONS))}, not {version!r}")
        return version

    @field_validator("split")
    @classmethod
    def _known_split(cls, split: str) -> str:
        if split not in episode.SPLITS:
            raise ValueError(f"split must be one of {', '.join(episode.SPLITS)}, not {split!r}")
        return split


class AuditTaskset(vf.Taskset[AuditTask, AuditTasksetConfig]):
    def load(self) -> list[AuditTask]:
        # verifiers 0.3.1 leaves `idx` to the taskset (0.4 numbers tasks itself, to the same values).
        return [
            AuditTask(
                AuditData(
                    idx=idx,
                    name=row["info"]["id"],
                    prompt=row["prompt"][0]["content"],
                    answer=row["answer"],
                    info=row["info"],
                ),
                self.config.task,
            )
            for idx, row in enumerate(episode.episode_rows(self.config.split, self.config.size, self.config.version))
        ]


class AuditEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The model under test; the subprocess runtime by default, as the chat harness needs no box."""


class AuditEpisodeEnv(vf.Env[AuditEnvConfig]):
    """Rehearsal, judged feedback, transfer: the suite's episode as one conversation."""

    async def run(self, task: AuditTask, agents: Any) -> None:
        async with agents.agent.interaction(task) as chat:
            rehearsal = await chat.turn()
            if rehearsal.terminated:
                return
            feedback, _verdict = episode.transfer_turn(task.data.info, rehearsal.last_reply)
            await chat.turn(feedback)


class ChatHarness(vf.Harness[vf.HarnessConfig]):
    """One streamed chat completion per segment, sent from this process to the rollout's endpoint.

    The stock harnesses run a program that ``uv`` installs from the internet;
    this one needs nothing the package does not already bring, so the env runs
    offline against any OpenAI-compatible endpoint.
    """

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend(message_to_wire(message) for message in prompt or ())
        body = {"model": ctx.model, "messages": messages, "stream": True}
        headers = {"Authorization": f"Bearer {secret}"}
        reply: list[str] = []
        try:
            async with (
                httpx.AsyncClient(timeout=httpx.Timeout(None, connect=30.0)) as client,
                client.stream("POST", f"{endpoint.rstrip('/')}/chat/completions", json=body, headers=headers) as sent,
            ):
                if sent.status_code != 200:
                    text = (await sent.aread()).decode(errors="replace")
                    return vf.ProgramResult(1, "", f"the model endpoint answered {sent.status_code}: {text}")
                async for line in sent.aiter_lines():
                    reply.extend(_delta_text(line))
        except httpx.HTTPError as error:
            return vf.ProgramResult(1, "", f"the model endpoint at {endpoint} failed: {error}")
        return vf.ProgramResult(0, "".join(reply), "")


def _delta_text(line: str) -> list[str]:
    """The content a server-sent event adds to the reply; nothing for keepalives and the end marker."""
    if not line.startswith("data:") or line[5:].strip() == "[DONE]":
        return []
    chunk = json.loads(line[5:])
    return [
        str(choice["delta"]["content"])
        for choice in chunk.get("choices") or ()
        if choice.get("index", 0) == 0 and (choice.get("delta") or {}).get("content")
    ]


def load_environment(split: str = "train", size: int = 64, version: int = episode.VERSION, **config: Any) -> Any:
    """The env over the first ``size`` cases of ``split`` in suite ``version``, as ``vf-eval`` would build it.

    Other keyword arguments are env config (``agent={"runtime": {...}}`` and
    so on), as ``--env.*`` flags would set them.
    """
    taskset = {"id": episode.ENV_ID, "split": split, "size": size, "version": version}
    return vf.load_environment(vf.resolve_env_config({**config, "taskset": taskset}))
