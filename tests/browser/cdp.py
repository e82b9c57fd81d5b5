"""A small Chrome DevTools Protocol client for headless Chromium, standard library only.

Chromium started with --remote-debugging-pipe reads protocol commands from its file descriptor 3
and writes replies and events to 4, each a JSON message ended by a NUL byte (the transport
puppeteer's pipe mode uses). One page, commands sent one at a time, replies matched by id.
"""
import json
import os
import subprocess
import tempfile


class ProtocolError(RuntimeError):
    pass


class Page:
    """A headless Chromium with one page; `evaluate` runs JavaScript in it and awaits promises."""

    def __init__(self, chromium):
        self._profile = tempfile.TemporaryDirectory()
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def child_fds():
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self._proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe", "about:blank"],
            preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._last_id = 0
        self.console = []  # (type, text) of console messages and uncaught exceptions
        target = self._send("Target.createTarget", url="about:blank")["targetId"]
        self._session = self._send("Target.attachToTarget", targetId=target,
                                   flatten=True)["sessionId"]
        self._send("Runtime.enable", session=self._session)
        self._send("Page.enable", session=self._session)

    def _message(self):
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise ProtocolError("Chromium closed its debugging pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _note(self, event):
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console.append((params["type"], text))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.console.append(
                ("exception", details.get("exception", {}).get("description", details["text"])))

    def _send(self, method, session=None, **params):
        self._last_id += 1
        message = {"id": self._last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._last_id:
                if "error" in reply:
                    raise ProtocolError(f"{method}: {reply['error'].get('message')}")
                return reply["result"]
            self._note(reply)

    def goto(self, url):
        self._send("Page.navigate", session=self._session, url=url)

    def evaluate(self, expression, timeout_ms=300000):
        """The value of a JavaScript expression (a promise is awaited), as JSON would carry it."""
        result = self._send("Runtime.evaluate", session=self._session, expression=expression,
                            awaitPromise=True, returnByValue=True, timeout=timeout_ms)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ProtocolError(details.get("exception", {}).get("description", details["text"]))
        return result["result"].get("value")

    def close(self):
        try:
            self._send("Browser.close")
        except (ProtocolError, OSError):
            pass
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        self._profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
