"""Where known MCP memory servers keep their store: the start-up line for one outside the case; the docs' recipes.

The run here starts no server: the configuration only names one, which is
all the start-up check reads.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pytest_recall.cases.mcp_stores import unscoped_store_lines

ANSWER = shlex.join(["echo", "12345.67"])


NPX_SERVER_MEMORY = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
BASIC_MEMORY = {"command": "/opt/basic-memory/bin/basic-memory", "args": ["mcp"]}
IN_SCOPE = {"MEMORY_FILE_PATH": "{scope}/memory.jsonl"}


@pytest.mark.parametrize(
    ("entry", "home_per_case", "run_env", "says"),
    [
        (NPX_SERVER_MEMORY, True, (), "beside its package (MEMORY_FILE_PATH is unset)"),
        ({"command": "mcp-server-memory", "env": {"MEMORY_FILE_PATH": "memory.jsonl"}}, True, (), "outside"),
        ({"command": "mcp-server-memory", "env": {"MEMORY_FILE_PATH": "/srv/m.jsonl"}}, True, (), "outside"),
        ({"command": "mcp-server-memory", "env": {"MEMORY_FILE_PATH": "/srv/{case}.jsonl"}}, True, (), "outside"),
        ({**NPX_SERVER_MEMORY, "env": IN_SCOPE}, True, (), None),
        (NPX_SERVER_MEMORY, True, (("MEMORY_FILE_PATH", "{scope}/m.jsonl"),), None),
        ({**NPX_SERVER_MEMORY, "env": IN_SCOPE}, True, (("MEMORY_FILE_PATH", "/srv/m.jsonl"),), None),
        (NPX_SERVER_MEMORY, True, (("MEMORY_FILE_PATH", None),), "unset"),
        (
            {"command": "node", "args": ["/x/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]},
            True,
            (),
            "package",
        ),
        (BASIC_MEMORY, True, (), None),
        (BASIC_MEMORY, False, (), "in your HOME, shared under --recall-home=user"),
        ({**BASIC_MEMORY, "env": {"BASIC_MEMORY_HOME": "{home}/notes"}}, False, (), "outside"),
        ({**BASIC_MEMORY, "env": {"BASIC_MEMORY_HOME": "/srv/notes"}}, True, (), "BASIC_MEMORY_HOME=/srv/notes"),
        (
            {"command": "uvx", "args": ["basic-memory", "mcp"], "env": {"BASIC_MEMORY_CONFIG_DIR": "~/.bm"}},
            True,
            (),
            "outside",
        ),
        ({"command": "my-own-memory"}, True, (), None),
        ({"url": "http://127.0.0.1:9/mcp"}, True, (), None),
    ],
)
def test_a_known_server_whose_store_outlives_the_case_is_named(entry, home_per_case, run_env, says):
    lines = unscoped_store_lines({"memory": entry}, home_per_case=home_per_case, run_env=run_env)
    if says is None:
        assert lines == []
    else:
        (line,) = lines
        assert line.startswith("WARNING --recall-mcp: server 'memory'") and says in line, line
        assert "{scope}" in line and "docs/mcp.md" in line


def test_the_run_says_at_start_up_that_a_servers_store_is_outside_the_scope(recall_suite, pytester):
    """server-memory without MEMORY_FILE_PATH keeps its store beside its package: every case, the control too."""
    recall_suite.add("c1", ["one", "two"])
    leaky, safe = pytester.path / "leaky.json", pytester.path / "safe.json"
    leaky.write_text(json.dumps({"mcpServers": {"memory": NPX_SERVER_MEMORY}}), encoding="utf-8")
    safe.write_text(json.dumps({"mcpServers": {"memory": {**NPX_SERVER_MEMORY, "env": IN_SCOPE}}}), encoding="utf-8")

    said = recall_suite.run(f"--recall-mcp={leaky}", command=ANSWER)
    quiet = recall_suite.run(f"--recall-mcp={safe}", command=ANSWER)

    warned = [line for line in said.outlines if "keeps its store" in line]
    assert warned == [
        "recall: WARNING --recall-mcp: server 'memory' (@modelcontextprotocol/server-memory) keeps its store beside "
        "its package (MEMORY_FILE_PATH is unset), shared by every case and the no-memory control, so its score is "
        'not one case\'s memory; set "MEMORY_FILE_PATH": "{scope}/memory.jsonl" in its "env" (docs/mcp.md)'
    ]
    assert not [line for line in quiet.outlines if "keeps its store" in line]


def test_every_recipe_in_the_mcp_docs_keeps_its_store_in_the_scope():
    """A recipe copied from docs/mcp.md must not be what the start-up warning is about."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text(encoding="utf-8")
    recipes = text.split("```json\n")[1:]
    # The "Five minutes" heredoc, quoted or not (unquoted, the shell fills in $PWD).
    recipes.append(re.split(r"cat > memory\.json <<'?EOF'?\n", text, maxsplit=1)[1].replace("$PWD", "/clone"))
    configs = [json.loads(block.split("```", 1)[0].split("\nEOF", 1)[0]) for block in recipes]
    assert len(configs) >= 4
    for config in configs:
        assert unscoped_store_lines(config["mcpServers"], home_per_case=True) == [], config
        assert unscoped_store_lines(config["mcpServers"], home_per_case=False) == [], config
