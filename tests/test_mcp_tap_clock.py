"""When the relay times a message: as it reads it, before it forwards it, so no call's latency is below zero.

Timed after forwarding, a request could be stamped later than its answer: the
server answers, and the other pump reads the answer, while the thread that
forwarded the request waits to run again. Real runs under load showed
latencies of -0.1 ms. Here the clock is the number of bytes the receiving
side already holds, so "before forwarding" is 0 and "after" is not.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_recall.sessions.mcp_tap import _Lines, _pump


def test_a_message_is_timed_as_it_is_read_before_it_is_forwarded(tmp_path: Path) -> None:
    received = tmp_path / "received"
    seen: list[tuple[Any, float]] = []
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n')
    os.close(write_end)
    with received.open("wb") as target:
        _pump(
            read_end,
            target.fileno(),
            _Lines(lambda message, at, _size: seen.append((message["id"], at))),
            lambda: os.close(read_end),
            clock=lambda: float(received.stat().st_size),
        )
    assert seen == [(1, 0.0)]
    assert received.read_bytes().endswith(b'"tools/list"}\n')
