"""Headless Chromium for the browser tests, the benchmark and the README screenshots.

Finds Debian's `chromium` and `chromium-driver`, installing them with apt-get
where they are missing and this process may (root, apt-get present, not
disabled by TRACEGUARD_NO_APT=1), and drives the browser over the W3C WebDriver
protocol with the standard library: no Python dependency to install.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

PACKAGES = ("chromium", "chromium-driver")
# Without the background-networking flags Chromium keeps trying to reach Google's hosts, which a
# closed network refuses; --no-sandbox because CI runs as root.
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1")


class BrowserUnavailable(RuntimeError):
    """Chromium or ChromeDriver is missing and could not be installed; the message says why."""


def _binaries() -> tuple[str | None, str | None]:
    return shutil.which("chromium"), shutil.which("chromedriver")


def find_or_install(log=print) -> tuple[str, str]:
    """Paths of chromium and chromedriver, installing Debian's packages where missing."""
    chromium, driver = _binaries()
    if chromium and driver:
        return chromium, driver
    missing = "Debian packages chromium and chromium-driver are not installed"
    if os.environ.get("TRACEGUARD_NO_APT") == "1":
        raise BrowserUnavailable(f"{missing}, and TRACEGUARD_NO_APT=1 forbids installing them.")
    if not shutil.which("apt-get") or os.geteuid() != 0:
        raise BrowserUnavailable(f"{missing}; installing them needs root and apt-get: "
                                 "`apt-get install chromium chromium-driver`.")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log("installing Debian packages chromium and chromium-driver with apt-get ...")
    for command, timeout in ((["apt-get", "update", "-qq"], 600),
                             (["apt-get", "install", "-y", "-qq", *PACKAGES], 1200)):
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise BrowserUnavailable(f"{missing}; `{' '.join(command)}` took over {timeout} s.") from None
        if result.returncode != 0:
            raise BrowserUnavailable(f"{missing}; `{' '.join(command)}` failed: "
                                     f"{(result.stderr or result.stdout).strip()[-500:]}")
    chromium, driver = _binaries()
    if not (chromium and driver):
        raise BrowserUnavailable(f"{missing}; apt-get installed them but they are not on PATH.")
    return chromium, driver


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Browser:
    """One headless Chromium window, driven through ChromeDriver on a loopback port."""

    def __init__(self, chromium: str, chromedriver: str, width: int = 1300, height: int = 900,
                 profile_dir: str | os.PathLike | None = None) -> None:
        port = _free_port()
        self._base = f"http://127.0.0.1:{port}"
        self._driver = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self._session = None
        try:
            self._wait_for_driver()
            arguments = [*FLAGS, f"--window-size={width},{height}"]
            if profile_dir is not None:
                arguments.append(f"--user-data-dir={profile_dir}")
            options = {"binary": chromium, "args": arguments}
            capabilities = {"browserName": "chrome", "goog:chromeOptions": options,
                            "goog:loggingPrefs": {"browser": "ALL"}}
            self._session = self._request("POST", "/session",
                                          {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]
        except BaseException:
            self.close()
            raise

    def _wait_for_driver(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                self._request("GET", "/status")
                return
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline or self._driver.poll() is not None:
                    raise BrowserUnavailable("chromedriver did not start within 30 s.") from None
                time.sleep(0.05)

    def _request(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self._base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"WebDriver {method} {path} failed: {error.read()[:1000]!r}") from None

    def _command(self, method: str, path: str, body: dict | None = None):
        return self._request(method, f"/session/{self._session}{path}", body)

    def open(self, path: str | os.PathLike) -> None:
        """Loads a local file and waits until it finished loading."""
        self._command("POST", "/url", {"url": Path(path).resolve().as_uri()})

    def run(self, script: str, *arguments):
        """Runs JavaScript in the page (`return ...` gives a value back)."""
        return self._command("POST", "/execute/sync", {"script": script, "args": list(arguments)})

    def console_errors(self) -> list[str]:
        """The page's console errors and failed loads since the last call (Chrome level SEVERE)."""
        entries = self._command("POST", "/se/log", {"type": "browser"})
        return [entry["message"] for entry in entries if entry["level"] == "SEVERE"]

    def screenshot(self, path: str | os.PathLike, selector: str | None = None, margin: int = 0) -> Path:
        """Saves a PNG of the whole page, or of the box around the elements matching `selector`."""
        box = self.run("""
            const page = document.documentElement;
            const elements = arguments[0] ? [...document.querySelectorAll(arguments[0])] : [page];
            const rects = elements.map(element => element.getBoundingClientRect());
            const left = Math.min(...rects.map(r => r.left)) + scrollX;
            const top = Math.min(...rects.map(r => r.top)) + scrollY;
            const whole = !arguments[0];
            const right = Math.max(...rects.map(r => r.right), whole ? page.scrollWidth : 0) + scrollX;
            const bottom = Math.max(...rects.map(r => r.bottom), whole ? page.scrollHeight : 0) + scrollY;
            return [left, top, right - left, bottom - top];""", selector)
        if box[0] is None:  # Math.min() of nothing is Infinity, which JSON sends as null.
            raise ValueError(f"No element matches selector={selector!r}.")
        left, top, width, height = box
        clip = {"x": max(left - margin, 0), "y": max(top - margin, 0), "width": width + 2 * margin,
                "height": height + 2 * margin, "scale": 1}
        # Chrome's own capture (through ChromeDriver's CDP bridge) can go beyond the window;
        # WebDriver's screenshot is the viewport only.
        result = self._command("POST", "/goog/cdp/execute", {
            "cmd": "Page.captureScreenshot",
            "params": {"format": "png", "clip": clip, "captureBeyondViewport": True}})
        target = Path(path)
        target.write_bytes(base64.b64decode(result["data"]))
        return target

    def close(self) -> None:
        if self._session is not None:
            try:
                self._command("DELETE", "")
            except (RuntimeError, OSError):
                pass
            self._session = None
        if self._driver.poll() is None:
            self._driver.terminate()
            try:
                self._driver.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._driver.kill()
                self._driver.wait()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
