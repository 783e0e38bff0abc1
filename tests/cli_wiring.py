"""How each real CLI reaches the fake model server, and where the pinned CLI is: shared by the CLI tests.

The file is not named test_*, so pytest never collects it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
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


def claude_acp_wiring(base_url: str) -> Wiring:
    """Claude Code under its ACP bridge: the same model, and auto mode off.

    The bridge starts a session in auto mode where it may, and there Claude Code tells anyone whose model is
    behind a gateway (the fake model on 127.0.0.1) how its auto-mode classifier is billed, as a message of
    the turn, which would stand in the answer. Without auto mode Claude Code asks before each tool, and
    recall-acp answers by its --permission policy.
    """
    settings = {"disableAutoMode": "disable"}
    return replace(claude_wiring(base_url), home_files={".claude/settings.json": json.dumps(settings)})


# What Codex must know of a model it has no metadata for, or it says "Model metadata for `fake` not found"
# as a message of the turn. Each field here is one Codex 0.16.0's bridge refuses to go without; the
# instructions are one line, since the fake model reads none.
CODEX_FAKE_MODEL = {
    "slug": "fake",
    "display_name": "fake",
    "base_instructions": "You are a coding agent.",
    "shell_type": "shell_command",
    "visibility": "list",
    "supported_in_api": True,
    "priority": 0,
    "supported_reasoning_levels": [],
    "supports_reasoning_summaries": False,
    "support_verbosity": False,
    "supports_parallel_tool_calls": False,
    "experimental_supported_tools": [],
    "truncation_policy": {"mode": "tokens", "limit": 10000},
}


def codex_acp_wiring(base_url: str) -> Wiring:
    """Codex under its ACP bridge: the same provider, with the fake model in a model catalog of its own.

    A relative ``model_catalog_json`` is read from CODEX_HOME (~/.codex), so each case's HOME holds its copy.
    """
    config = 'model_catalog_json = "fake-model.json"\n' + codex_wiring(base_url).home_files[".codex/config.toml"]
    catalog = json.dumps({"models": [CODEX_FAKE_MODEL]})
    return Wiring(home_files={".codex/config.toml": config, ".codex/fake-model.json": catalog})


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


def kilo_wiring(base_url: str) -> Wiring:
    """OpenCode's config in Kilo Code's file, and its offline switches under Kilo Code's names."""
    opencode = opencode_wiring(base_url)
    config = json.loads(opencode.home_files[".config/opencode/opencode.json"])
    config["$schema"] = "https://app.kilo.ai/config.json"
    # No model catalogue, no update check, no codebase indexing of the case's folder.
    env = {"KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_CODEBASE_INDEXING": "1"}
    return Wiring(
        home_files={".config/kilo/kilo.json": json.dumps(config)},
        env={**env, "npm_config_registry": opencode.env["npm_config_registry"]},
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


def pi_wiring(base_url: str) -> Wiring:
    # A provider of its own in models.json (any key will do), chosen as the default in settings.json.
    models = {
        "providers": {
            "fake": {
                "baseUrl": f"{base_url}/v1",
                "api": "openai-completions",
                "apiKey": "sk-fake",
                "models": [{"id": "fake"}],
            }
        }
    }
    settings = {"defaultProvider": "fake", "defaultModel": "fake", "enableInstallTelemetry": False}
    files = {".pi/agent/models.json": models, ".pi/agent/settings.json": settings}
    return Wiring(home_files={name: json.dumps(document) for name, document in files.items()})


def cline_wiring(base_url: str) -> Wiring:
    # What `cline auth -p openai -k sk-fake -m fake -b URL` writes: an OpenAI-compatible provider, no account.
    # Cline 3.0.65 ignores a file that fails its schema (an entry without updatedAt) and then asks its own
    # service on the internet instead.
    settings = {"provider": "openai-compatible", "apiKey": "sk-fake", "model": "fake", "baseUrl": f"{base_url}/v1"}
    entry = {"settings": settings, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}
    providers = {"version": 1, "lastUsedProvider": "openai-compatible", "providers": {"openai-compatible": entry}}
    return Wiring(home_files={".cline/data/settings/providers.json": json.dumps(providers)})


def hermes_wiring(base_url: str) -> Wiring:
    # What `hermes model` writes for a custom OpenAI-compatible endpoint; any key will do. Without the probe of
    # the machine's Python tooling (a line of the system prompt) a session spawns no pip, python3 or uname.
    model = f"model:\n  provider: custom\n  default: fake\n  base_url: {base_url}/v1\n  api_key: sk-fake\n"
    config = model + "agent:\n  environment_probe: false\n"
    return Wiring(home_files={".hermes/config.yaml": config})


def openclaw_wiring(base_url: str) -> Wiring:
    """A custom provider for the model and, through the same endpoint, memory-core's embeddings."""
    provider = {
        "baseUrl": f"{base_url}/v1",
        "apiKey": "sk-fake",
        "api": "openai-completions",
        "models": [{"id": "fake", "name": "fake"}],
    }
    config = {
        "agents": {"defaults": {"model": {"primary": "fake/fake"}}},
        "models": {"mode": "merge", "providers": {"fake": provider}},
        "memory": {"search": {"provider": "fake", "model": "fake"}},
    }
    return Wiring(home_files={".openclaw/openclaw.json": json.dumps(config)})


def letta_wiring(base_url: str) -> Wiring:
    """What ``letta backend local`` and ``letta connect openai-compatible --base-url URL --api-key KEY`` write."""
    entry = {
        "id": "local-provider-openai-compatible",
        "name": "openai-compatible",
        "provider_type": "openai-compatible",
        "provider_category": "byok",
        "auth": {"type": "api", "key": "sk-fake"},
        "base_url": f"{base_url}/v1",
    }
    providers = {"version": 1, "providers": {"openai-compatible": entry}}
    files = {
        ".letta/settings.json": {"preferredBackendMode": "local"},
        ".letta/lc-local-backend/providers/auth.json": providers,
    }
    return Wiring(("-m", "openai-compatible/fake"), {name: json.dumps(text) for name, text in files.items()})


WIRINGS: dict[str, Callable[[str], Wiring]] = {
    "claude": claude_wiring,
    "codex": codex_wiring,
    "gemini": gemini_wiring,
    "opencode": opencode_wiring,
    "kilo": kilo_wiring,
    "qwen": qwen_wiring,
    "copilot": copilot_wiring,
    "pi": pi_wiring,
    "cline": cline_wiring,
    "hermes": hermes_wiring,
    "openclaw": openclaw_wiring,
    "letta": letta_wiring,
    "llm": llm_wiring,
    "aider": aider_wiring,
}


# The markers of the test now running, set by tests/conftest.py around each test: a test that drives a
# real CLI or MCP server without its tier's marker would sit in the quick tier, and it fails at once.
running_markers: frozenset[str] = frozenset()


def real_cli(adapter: Adapter) -> str:
    """The CLI the adapter will run; skip when it is absent, unless under CI, where that is a failure."""
    found = shutil.which(os.environ.get(adapter.bin_variable) or adapter.cli)
    reason = f'{adapter.cli} is not installed: run `eval "$(.ci/install-clis)"` or set {adapter.bin_variable}'
    return installed(found, reason)


def installed(found: str | None, reason: str, marker: str = "real_cli") -> str:
    """``found`` if it is there; else skip saying ``reason``, or fail under CI, where everything is installed.

    Either way the test must carry ``marker``, the tier of what it drives (tests/pytest.ini).
    """
    if marker not in running_markers:
        pytest.fail(f"this test drives what the {marker} tier is for ({reason.split(' is not')[0]}): mark it {marker}")
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
