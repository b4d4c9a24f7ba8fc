"""A headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium started with --remote-debugging-pipe reads protocol messages on file descriptor 3 and
writes them on 4, each a JSON object ended by a NUL byte. `Browser` opens a page from disk,
records what a person would see go wrong (console errors, uncaught exceptions, failed requests),
evaluates JavaScript in it and takes screenshots. Debian's `chromium` package is the browser: no
downloaded browser, no selenium or playwright.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser")
FLAGS = ("--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
         "--allow-file-access-from-files")


def find_chromium() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


class BrowserError(RuntimeError):
    pass


@dataclass
class PageProblems:
    """What went wrong while a page loaded and ran."""

    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    @property
    def all(self) -> list[str]:
        return self.console_errors + self.exceptions + self.failed_requests


def _child_fds(read_end: int, write_end: int) -> None:
    """In the child, before exec: the browser's end of each pipe onto fd 3 (it reads) and fd 4 (it writes).
    Both are first moved above 9, so that neither dup2 can overwrite the other's source."""
    high_read = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10)
    high_write = fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
    os.dup2(high_read, 3)
    os.dup2(high_write, 4)


class Browser:
    """One headless Chromium with one page (a tab); `with Browser() as b: b.open(url)`."""

    def __init__(self, executable: str, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        self.profile = tempfile.TemporaryDirectory(prefix="gpuplan-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile.name}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=lambda: _child_fds(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._next_id, self._events = b"", 0, []
        self.problems = PageProblems()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self._send("Browser.close", {}, session=False)
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.profile.cleanup()

    # -- protocol ------------------------------------------------------------------------------

    def _send(self, method: str, params: dict, session: bool) -> int:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed its pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        """Send one command and return its result; events that arrive meanwhile are recorded."""
        wanted = self._send(method, params or {}, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self._record(message)

    def _record(self, event: dict) -> None:
        self._events.append(event["method"])
        params = event.get("params", {})
        method = event["method"]
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.problems.console_errors.append(text)
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.problems.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.problems.console_errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.loadingFailed":
            self.problems.failed_requests.append(f"{params.get('errorText')} ({params.get('type')})")
        elif method == "Network.responseReceived" and params.get("response", {}).get("status", 0) >= 400:
            response = params["response"]
            self.problems.failed_requests.append(f"{response.get('status')} {response.get('url')}")

    # -- pages ---------------------------------------------------------------------------------

    def set_viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}, session=True)

    def open(self, url: str) -> PageProblems:
        """Load `url` and wait for its load event; the page's problems are recorded from here on."""
        self.problems = PageProblems()
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        deadline = time.monotonic() + self.timeout_s
        while "Page.loadEventFired" not in self._events:
            message = self._receive(deadline)
            if "method" in message:
                self._record(message)
        return self.problems

    def evaluate(self, expression: str, await_promise: bool = False) -> object:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}…: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> bool:
        """Poll a JavaScript condition until it is true (or the time is up)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(0.1)
        return False

    def screenshot(self, path: Path, max_height: int = 16000) -> Path:
        """The whole page (up to `max_height` CSS pixels) as a PNG."""
        metrics = self.call("Page.getLayoutMetrics", session=True)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip},
                         session=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
