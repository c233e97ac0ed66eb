"""A page as headless Chromium shows it once its scripts have drawn what a test waits for.

``--dump-dom`` with a virtual-time budget dumps the page when the budget runs out, whatever its
scripts have drawn by then, and says nothing of why (on a new machine's CI the Allure report's
tree was missing from three dumps in a row: test_allure_report.py says why). Here Chromium is
driven over its DevTools pipe (``--remote-debugging-pipe``: JSON messages ended by a NUL byte,
commands on its fd 3, answers on its fd 4): the page's DOM is read twice a second, in real
time, until it holds what the test waits for or the time is up, and the console's errors come
back with it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

#: CI sets it: a checker that is not installed fails the test instead of skipping it.
REQUIRE = os.environ.get("PYTEST_STACKS_REQUIRE_CHECKERS") == "1"


def chromium() -> str:
    """The Chromium to drive; without one the test skips (fails where CI requires it)."""
    found = shutil.which("chromium")
    if found:
        return found
    message = "chromium is not installed: run scripts/install-chromium.sh"
    if REQUIRE:
        pytest.fail(message + " (PYTEST_STACKS_REQUIRE_CHECKERS=1)", pytrace=False)
    pytest.skip(message)


class DevToolsError(RuntimeError):
    """Chromium answered a command with an error, or went away."""


class _Browser:
    def __init__(self, chromium: str, profile: Path) -> None:
        commands_in, self._commands = os.pipe()
        self._answers, answers_out = os.pipe()
        profile.mkdir(parents=True, exist_ok=True)
        self._stderr = profile / "chromium.stderr"
        with open(self._stderr, "wb") as stderr:
            self._proc = subprocess.Popen(
                ["bash", "-c", f'exec "$0" "$@" 3<&{commands_in} 4>&{answers_out}', chromium,
                 "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
                pass_fds=(commands_in, answers_out), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        os.close(commands_in)
        os.close(answers_out)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []  # what arrived between answers (console, errors)

    def __enter__(self) -> _Browser:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        with contextlib.suppress(OSError):  # already gone
            os.write(self._commands, json.dumps({"id": -1, "method": "Browser.close"}).encode()
                     + b"\0")
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # its renderers too: they share its process group
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        os.close(self._commands)
        os.close(self._answers)

    def call(self, method: str, params: dict[str, Any], session: str | None = None,
             timeout: float = 60) -> dict[str, Any]:
        """Send one command, return its result; events that arrive first go to ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if "id" not in answer:
                self.events.append(answer)
            if answer.get("id") != self._next_id:
                continue
            if "error" in answer:
                raise DevToolsError(f"{method}: {answer['error']}")
            result: dict[str, Any] = answer["result"]
            return result

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DevToolsError(f"no answer from Chromium in time; {self._said()}")
            ready, _, _ = select.select([self._answers], [], [], left)
            if ready:
                chunk = os.read(self._answers, 1 << 16)
                if not chunk:
                    raise DevToolsError(f"Chromium closed its DevTools pipe; {self._said()}")
                self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(raw)
        return parsed

    def exited(self) -> bool:
        return self._proc.poll() is not None

    def _said(self) -> str:
        tail = self._stderr.read_text(errors="replace")[-2000:]
        return f"exit {self._proc.poll()}, stderr: {tail}"


@dataclass
class Rendered:
    """The page's DOM, and what its console said (errors first to read when a test fails)."""

    dom: str
    console: list[str] = field(default_factory=list)


def rendered_dom(chromium: str, url: str, profile: Path, drawn: Callable[[str], bool],
                 timeout: float = 120, at_document_start: str = "") -> Rendered:
    """The page's DOM the first time ``drawn`` says it is complete; after ``timeout`` seconds,
    the DOM as it is then (the caller's assertion says what is missing).
    ``at_document_start``: a script run before the page's own."""
    with _Browser(chromium, profile) as browser:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        browser.call("Log.enable", {}, session)
        browser.call("Runtime.enable", {}, session)
        if at_document_start:
            browser.call("Page.enable", {}, session)
            browser.call("Page.addScriptToEvaluateOnNewDocument", {"source": at_document_start},
                         session)
        browser.call("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + timeout
        html = ""
        while True:
            try:
                value = browser.call("Runtime.evaluate",
                                     {"expression": "document.documentElement.outerHTML",
                                      "returnByValue": True}, session)["result"].get("value")
                # no string: the new document has no element yet, or threw while navigating
                html = value if isinstance(value, str) else html
            except DevToolsError:  # the context is replaced while the page navigates
                if time.monotonic() > deadline or browser.exited():
                    raise
            if drawn(html) or time.monotonic() > deadline:
                return Rendered(html, _console(browser.events))
            time.sleep(0.5)


def _console(events: list[dict[str, Any]]) -> list[str]:
    said = []
    for event in events:
        params = event.get("params", {})
        if event.get("method") == "Log.entryAdded":
            said.append(f"{params['entry']['level']}: {params['entry']['text']}")
        elif event.get("method") == "Runtime.consoleAPICalled":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            said.append(f"console.{params['type']}: {args[:300]}")
        elif event.get("method") == "Runtime.exceptionThrown":
            said.append(f"exception: {params['exceptionDetails'].get('text', '')}")
    return said
