"""Open a page in headless Chromium and report console errors (a tiny CDP client).

Used by the tests and the verification script to check that a report renders offline with no
console errors, no uncaught exceptions and no broken images.  The browser is driven over
``--remote-debugging-pipe`` (Chrome DevTools Protocol messages, NUL-terminated JSON, on file
descriptors 3 and 4), so no port is opened and nothing reaches the network.

Examples
--------
>>> find_browser() is None or isinstance(find_browser(), str)
True
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BROWSER_FLAGS", "PageCheck", "check_page", "check_pages", "find_browser"]

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
BROWSER_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--mute-audio",
)  # fmt: skip

_PROBE = (
    "JSON.stringify({ids: Array.from(document.querySelectorAll('section[id]')).map(s => s.id),"
    " images: Array.from(document.images).map(i => [i.complete, i.naturalWidth]).concat("
    "Array.from(document.querySelectorAll('figure > svg')).map("
    "s => [true, Math.round(s.getBoundingClientRect().width)])),"
    " title: document.title})"
)


def find_browser() -> str | None:
    """A Chromium-family executable: ``$FABRICSIM_BROWSER`` or the first on ``PATH``."""
    env = os.environ.get("FABRICSIM_BROWSER")
    if env:
        return env if shutil.which(env) else None
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageCheck:
    """What the browser saw: section ids in DOM order, errors, image sizes (``<img>`` and inline
    SVG figures: (loaded, rendered width)), the title."""

    section_ids: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    images: list[tuple[bool, int]] = field(default_factory=list)
    title: str = ""

    @property
    def broken_images(self) -> int:
        return sum(1 for complete, width in self.images if not complete or width == 0)


class _Pipe:
    """CDP over two pipes: we write commands, the browser writes responses and events."""

    def __init__(self, write_fd: int, read_fd: int, deadline: float) -> None:
        self.write_fd, self.read_fd, self.deadline = write_fd, read_fd, deadline
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.write_fd, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, seconds: float) -> None:
        until = min(self.deadline, time.monotonic() + seconds)
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read(until))

    def drain(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read(until))
        except TimeoutError:
            pass

    def _read(self, until: float | None = None) -> dict[str, Any]:
        until = until or self.deadline
        while b"\0" not in self.buf:
            left = until - time.monotonic()
            if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)


def _collect(events: list[dict[str, Any]], check: PageCheck) -> None:
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.exceptionThrown":
            det = p.get("exceptionDetails", {})
            check.errors.append(det.get("exception", {}).get("description") or det.get("text", ""))
        elif method == "Runtime.consoleAPICalled":
            text = " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
            )
            if p.get("type") in ("error", "assert"):
                check.errors.append(f"console.{p['type']}: {text}")
            elif p.get("type") == "warning":
                check.warnings.append(text)
        elif method == "Log.entryAdded":
            entry = p.get("entry", {})
            if entry.get("level") == "error":
                check.errors.append(
                    f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"
                )
            elif entry.get("level") == "warning":
                check.warnings.append(str(entry.get("text")))


def _drive(pipe: _Pipe, url: str) -> PageCheck:
    """Load ``url`` in a new tab and check it (only this tab's events are read)."""
    pipe.events = []
    target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Page"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send("Page.navigate", {"url": url}, session=session)
    pipe.wait_event("Page.loadEventFired", 60)
    pipe.drain(0.5)
    probe = pipe.send(
        "Runtime.evaluate", {"expression": _PROBE, "returnByValue": True}, session=session
    )
    data = json.loads(probe["result"]["value"])
    check = PageCheck(data["ids"], images=[tuple(i) for i in data["images"]], title=data["title"])
    _collect([e for e in pipe.events if e.get("sessionId") in (None, session)], check)
    with contextlib.suppress(RuntimeError, TimeoutError, OSError):
        pipe.send("Target.closeTarget", {"targetId": target})
    return check


def _high_fd(fd: int) -> int:
    """Move ``fd`` to a number >= 10 (non-inheritable as before)."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


def check_page(path: str | Path, browser: str | None = None, timeout_s: float = 90.0) -> PageCheck:
    """Load ``path`` in headless Chromium; return its section ids, console errors and images.

    Raises
    ------
    FileNotFoundError
        If no browser is found.
    TimeoutError
        If the browser does not load the page within ``timeout_s``.
    """
    return check_pages([path], browser, timeout_s)[0]


def check_pages(
    paths: list[str | Path] | list[Path], browser: str | None = None, timeout_s: float = 90.0
) -> list[PageCheck]:
    """:func:`check_page` of each page, in one browser (one tab per page, in turn);
    ``timeout_s`` is for each page."""
    exe = browser or find_browser()
    if exe is None:
        raise FileNotFoundError("no Chromium-family browser on PATH (set FABRICSIM_BROWSER)")
    urls = [Path(path).resolve().as_uri() for path in paths]
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    cmd_r, out_w = _high_fd(cmd_r), _high_fd(out_w)  # never 3 or 4 themselves
    with tempfile.TemporaryDirectory(prefix="fabricsim-browser-") as profile:
        args = [*BROWSER_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe"]

        def wire() -> None:  # in the child: the pipes become fds 3 and 4, as Chromium expects
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        proc = subprocess.Popen(
            [exe, *args, "about:blank"], preexec_fn=wire, close_fds=False,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(out_w)
        pipe = _Pipe(cmd_w, out_r, time.monotonic() + timeout_s)
        try:
            checks = []
            for url in urls:
                pipe.deadline = time.monotonic() + timeout_s
                checks.append(_drive(pipe, url))
            with contextlib.suppress(RuntimeError, TimeoutError, OSError):
                pipe.send("Browser.close")
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(cmd_w)
            os.close(out_r)
    return checks
