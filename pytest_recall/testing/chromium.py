"""Headless Chromium over the DevTools protocol on a pipe, with the standard library alone.

``--remote-debugging-pipe`` speaks JSON messages ended by NUL on file
descriptors 3 and 4, so this needs no websocket, no port and no third-party
client. The HTML page's browser tests and ``bench/html_scale.py`` drive the
system's ``chromium`` (Debian's package) with it; nothing is downloaded.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)
BROWSER_TIMEOUT_S = 60.0
# A promise that settles once the page has painted (or after 10 s), so its paint entries exist; chain
# ``.then(...)`` to read the page. The paint entry is queued once the frame is presented, which may be
# after the load event.
AFTER_FIRST_PAINT = """new Promise(done => {
    const painted = () => performance.getEntriesByName('first-contentful-paint').length > 0;
    if (painted()) return done();
    new PerformanceObserver(() => painted() && done()).observe({type: 'paint', buffered: true});
    setTimeout(done, 10000);
})"""


class BrowserError(Exception):
    pass


@dataclass
class Chromium:
    """One headless Chromium and one page in it, spoken to over the DevTools pipe."""

    process: subprocess.Popen[bytes]
    to_browser: int
    from_browser: int
    session: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    _next_id: int = 0
    _buffer: bytes = b""

    def send(self, method: str, params: Mapping[str, Any] | None = None, *, session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": dict(params or {})}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        reply = self._read_until(lambda m: m.get("id") == self._next_id)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_for_event(self, method: str, *, after: int) -> dict[str, Any]:
        """The first ``method`` event among those that arrived after the first ``after`` events."""
        for event in self.events[after:]:
            if event.get("method") == method:
                return event
        return self._read_until(lambda m: m.get("method") == method)

    def _read_until(self, wanted: Any) -> dict[str, Any]:
        deadline = time.monotonic() + BROWSER_TIMEOUT_S
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if wanted(message):
                    return dict(message)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.from_browser], [], [], remaining)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the DevTools pipe")
            self._buffer += chunk

    def event_params(self, method: str) -> list[dict[str, Any]]:
        return [e.get("params", {}) for e in self.events if e.get("method") == method]


def _high_fd(fd: int) -> int:
    """A copy above 10, so that wiring it to 3 or 4 in the child cannot clobber the other pipe."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


@contextmanager
def headless_chromium(profile: Path, width: int, height: int, executable: str | None = CHROMIUM) -> Iterator[Chromium]:
    """One headless Chromium with one blank page, attached, its window ``width`` by ``height``."""
    assert executable is not None, "chromium is not installed"
    commands_read, commands_write = map(_high_fd, os.pipe())
    replies_read, replies_write = map(_high_fd, os.pipe())
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--remote-debugging-pipe",
        "about:blank",
    ]
    # A tiny exec wrapper puts the pipes on descriptors 3 and 4, where --remote-debugging-pipe expects
    # them (dash cannot redirect descriptors above 9, and preexec_fn is unsafe with threads).
    wiring = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
    wiring += "os.execv(sys.argv[3], sys.argv[3:])"
    process = subprocess.Popen(
        [sys.executable, "-c", wiring, str(commands_read), str(replies_write), executable, *flags],
        pass_fds=(commands_read, replies_write),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(commands_read)
    os.close(replies_write)
    browser = Chromium(process, commands_write, replies_read)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable")
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        browser.send("Emulation.setDeviceMetricsOverride", metrics)
        yield browser
    finally:
        try:
            browser.send("Browser.close", session=False)
            process.wait(timeout=10)
        except (BrowserError, OSError, subprocess.TimeoutExpired):
            os.killpg(process.pid, 9)
            process.wait()
        os.close(commands_write)
        os.close(replies_read)


def evaluate(browser: Chromium, expression: str) -> Any:
    """The value of a page expression, a promise awaited; JSON strings come back decoded."""
    reply = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
    if "exceptionDetails" in reply:
        raise BrowserError(str(reply["exceptionDetails"]))
    value = reply["result"].get("value")
    return json.loads(value) if isinstance(value, str) else value
