"""One headless Chromium for all the report tests (tests/test_report.py, tests/test_precision.py): started once,
driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4),
each page opened in a fresh tab of its own browser context. Starting Chromium costs about a second; a page, once
it runs, a few."""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--remote-debugging-pipe"]
# As --virtual-time-budget=8000 with --dump-dom: the DOM is read once the page has loaded and 8 s more of its
# virtual time have passed with no fetch pending, so timers and animation frames plotly schedules have run.
VIRTUAL_TIME_BUDGET_MS = 8000
TIMEOUT_S = 120


class Chromium:
    def __init__(self, profile: Path):
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        assert binary, "chromium is needed (apt-get install chromium; .ci/run installs it)"
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def pipes_on_3_and_4():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(3, 4),
                                        preexec_fn=pipes_on_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (AssertionError, OSError):  # already gone, or hanging: killed below
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._from_browser], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"Chromium did not answer in {TIMEOUT_S} s"
            chunk = os.read(self._from_browser, 1 << 20)
            assert chunk, f"Chromium exited (status {self.process.poll()})"
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                assert "error" not in reply, f"{method}: {reply['error']}"
                return reply.get("result", {})
            self._events.append(reply)

    def wait_for(self, method: str, session: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == method and e.get("sessionId") == session for e in self._events):
            self._events.append(self._read_message(deadline))

    def browse(self, page: Path, window: tuple[int, int] = (800, 600), screenshot: Path | None = None):
        """The page's DOM after its scripts ran (inline scripts' text left out: plotly's alone is 4.6 MB), and its
        console messages (console calls, uncaught exceptions,
        and what the browser logs about the page, such as a resource it could not load)."""
        context = self.call("Target.createBrowserContext")["browserContextId"]
        target = self.call("Target.createTarget", url="about:blank", browserContextId=context)["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable", session)
            width, height = window
            self.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1,
                      mobile=False)
            self._events.clear()
            self.call("Page.navigate", session, url=page.resolve().as_uri())
            self.wait_for("Page.loadEventFired", session)
            self.call("Emulation.setVirtualTimePolicy", session, policy="pauseIfNetworkFetchesPending",
                      budget=VIRTUAL_TIME_BUDGET_MS)
            self.wait_for("Emulation.virtualTimeBudgetExpired", session)
            dom = self.call("Runtime.evaluate", session, expression=DOM_WITHOUT_SCRIPT_TEXT,
                            returnByValue=True)["result"]["value"]
            if screenshot is not None:
                png = self.call("Page.captureScreenshot", session, format="png")["data"]
                screenshot.write_bytes(base64.b64decode(png))
            console = [_console_line(e) for e in self._events
                       if e.get("sessionId") == session and e.get("method") in CONSOLE_EVENTS]
        finally:
            self.call("Target.closeTarget", targetId=target)
            self.call("Target.disposeBrowserContext", browserContextId=context)
        return dom, console


DOM_WITHOUT_SCRIPT_TEXT = """(() => {
    const copy = document.documentElement.cloneNode(true);
    for (const script of copy.querySelectorAll("script")) script.textContent = "";
    return copy.outerHTML;
})()"""
CONSOLE_EVENTS = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")


def _console_line(event: dict) -> str:
    params = event["params"]
    if event["method"] == "Runtime.consoleAPICalled":
        values = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
        return f"console.{params['type']}: {' '.join(values)}"
    if event["method"] == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return f"exception: {details.get('exception', {}).get('description', details.get('text', ''))}"
    entry = params["entry"]
    return f"log {entry['level']} ({entry['source']}): {entry['text']} {entry.get('url', '')}".rstrip()
