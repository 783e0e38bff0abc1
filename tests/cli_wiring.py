"""How each real CLI reaches the fake model server, and where the pinned CLI is: shared by the CLI tests.

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents.adapters.common import Adapter


@dataclass(frozen=True)
class Wiring:
    """How one CLI reaches the fake model: extra adapter args, files in HOME to copy, variables."""

    extra_args: tuple[str, ...] = ()
    home_files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def claude_wiring(base_url: str) -> Wiring:
    return Wiring(env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-fake"})


def codex_wiring(base_url: str) -> Wiring:
    config = f"""model = "fake"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}/v1"
wire_api = "responses"

[analytics]
enabled = false
"""
    return Wiring(home_files={".codex/config.toml": config})


def llm_wiring(base_url: str) -> Wiring:
    models = f"- model_id: fake\n  model_name: fake\n  api_base: {base_url}/v1\n"
    return Wiring(("-m", "fake"), {".config/io.datasette.llm/extra-openai-models.yaml": models})


def aider_wiring(base_url: str) -> Wiring:
    # Known metadata for the model keeps aider from fetching litellm's price list from the internet.
    metadata = {
        "openai/fake": {
            "max_input_tokens": 128000,
            "max_output_tokens": 4096,
            "input_cost_per_token": 0.000003,
            "output_cost_per_token": 0.000015,
            "litellm_provider": "openai",
            "mode": "chat",
        }
    }
    return Wiring(
        ("--model", "openai/fake"),
        {".aider.model.metadata.json": json.dumps(metadata)},
        {"OPENAI_API_BASE": f"{base_url}/v1", "OPENAI_API_KEY": "sk-fake"},
    )


def gemini_wiring(base_url: str) -> Wiring:
    # With GOOGLE_GEMINI_BASE_URL set and no auth chosen, Gemini CLI 0.61 picks "gateway" auth and then
    # refuses it in headless mode ("Invalid auth method selected"): the settings choose the API key.
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        # One attempt: a refused connection is otherwise retried ten times, for minutes.
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False, "maxAttempts": 1},
    }
    return Wiring(
        home_files={".gemini/settings.json": json.dumps(settings)},
        env={"GEMINI_API_KEY": "fake", "GOOGLE_GEMINI_BASE_URL": base_url},
    )


def opencode_wiring(base_url: str) -> Wiring:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "fake",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-fake"},
                "models": {"fake": {"name": "fake"}},
            }
        },
        "model": "fake/fake",
        "small_model": "fake/fake",
        "autoupdate": False,
        "share": "disabled",
    }
    # Offline: no models.dev catalogue, and the plugin package OpenCode installs into every config
    # folder in the background asks a registry that is not there, so it fails at once.
    env = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    return Wiring(
        home_files={".config/opencode/opencode.json": json.dumps(config)},
        env={**env, "npm_config_registry": "http://127.0.0.1:9/"},
    )


def qwen_wiring(base_url: str) -> Wiring:
    settings = {"security": {"auth": {"selectedType": "openai"}}}
    return Wiring(
        home_files={".qwen/settings.json": json.dumps(settings)},
        env={"OPENAI_API_KEY": "sk-fake", "OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_MODEL": "fake"},
    )


def copilot_wiring(base_url: str) -> Wiring:
    # Bring your own key: no GitHub login; offline: no telemetry, no update checks, no GitHub MCP server.
    # COPILOT_PKG_CACHE_HOME (from .ci/install-clis) keeps every HOME from unpacking the CLI again.
    env = {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": f"{base_url}/v1"}
    return Wiring(env={**env, "COPILOT_PROVIDER_API_KEY": "sk-fake", "COPILOT_MODEL": "fake"})


def cline_wiring(base_url: str) -> Wiring:
    # What `cline auth -p openai -k sk-fake -m fake -b URL` writes: an OpenAI-compatible provider, no account.
    # Cline 3.0.65 ignores a file that fails its schema (an entry without updatedAt) and then asks its own
    # service on the internet instead.
    settings = {"provider": "openai-compatible", "apiKey": "sk-fake", "model": "fake", "baseUrl": f"{base_url}/v1"}
    entry = {"settings": settings, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}
    providers = {"version": 1, "lastUsedProvider": "openai-compatible", "providers": {"openai-compatible": entry}}
    return Wiring(home_files={".cline/data/settings/providers.json": json.dumps(providers)})


WIRINGS: dict[str, Callable[[str], Wiring]] = {
    "claude": claude_wiring,
    "codex": codex_wiring,
    "gemini": gemini_wiring,
    "opencode": opencode_wiring,
    "qwen": qwen_wiring,
    "copilot": copilot_wiring,
    "cline": cline_wiring,
    "llm": llm_wiring,
    "aider": aider_wiring,
}


def real_cli(adapter: Adapter) -> str:
    """The CLI the adapter will run; skip when it is absent, unless under CI, where that is a failure."""
    found = shutil.which(os.environ.get(adapter.bin_variable) or adapter.cli)
    reason = f'{adapter.cli} is not installed: run `eval "$(.ci/install-clis)"` or set {adapter.bin_variable}'
    return installed(found, reason)


def installed(found: str | None, reason: str) -> str:
    """``found`` if it is there; else skip saying ``reason``, or fail under CI, where everything is installed."""
    if found is not None:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"under CI everything the tests drive must be installed; {reason}")
    pytest.skip(reason)


def install_root(cli_path: str) -> Path:
    """What bwrap must see of a CLI: the npm prefix above its node_modules, or its virtual environment."""
    real = Path(cli_path).resolve()
    for folder in real.parents:
        if folder.name == "node_modules" or (folder / "pyvenv.cfg").exists():
            return folder.parent if folder.name == "node_modules" else folder
    return real.parent


def model_requests(log_path: Path) -> list[dict[str, Any]]:
    """The fake model's request log, one JSON object a line; empty before the first request."""
    if not log_path.exists():
        return []
    return [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
