"""``capevolve view``: a local, read-only web viewer of one run (standard library HTTP)."""

from __future__ import annotations

import ipaddress
import json
import threading
from collections import deque
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from capevolve._loop.frozen_config import run_config
from capevolve._store.rundir import RunDir
from capevolve.errors import CapevolveError
from capevolve.kinds import Split
from capevolve.view import data
from capevolve.view.compare import compare
from capevolve.view.diff import diff

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC = {"/": ("page.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"),
          "/style.css": ("style.css", "text/css; charset=utf-8")}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (name or address) is loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The host part of a Host header (``[::1]:8000`` -> ``::1``)."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class ViewerHandler(BaseHTTPRequestHandler):
    """One GET or HEAD against the server's run dir; on a loopback server a non-loopback Host
    is refused (DNS rebinding)."""

    server: ViewerServer
    server_version = "capevolve-view"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        """Nothing: the viewer writes no access log."""

    def do_HEAD(self) -> None:  # noqa: N802 - stdlib name
        self._serve(head=True)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self._serve(head=False)

    def _refuse_method(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "the viewer is read-only"},
                   extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

    def _serve(self, head: bool) -> None:
        if self.server.loopback and not is_loopback(_host_name(self.headers.get("Host", ""))):
            self._send(HTTPStatus.FORBIDDEN, {"error": "Host is not a loopback name"}, head)
            return
        self.server.recent_requests.append(f"{self.command} {self.path}")
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if url.path in STATIC:
                name, kind = STATIC[url.path]
                body = resources.files("capevolve.view").joinpath(name).read_bytes()
                self._send_bytes(HTTPStatus.OK, body, kind, head)
            elif url.path.startswith("/files/"):
                path = data.run_file(self._run(), unquote(url.path[len("/files/"):]))
                self._send_bytes(HTTPStatus.OK, path.read_bytes(),
                                 "text/plain; charset=utf-8", head)
            elif url.path.startswith("/api/"):
                self._send(HTTPStatus.OK, self._api(url.path[len("/api/"):], query), head)
            else:
                self._send(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path}"}, head)
        except CapevolveError as exc:
            status = (HTTPStatus.FORBIDDEN if "outside the run dir" in str(exc)
                      else HTTPStatus.NOT_FOUND)
            self._send(status, {"error": str(exc).splitlines()[0]}, head)
        except (ValueError, KeyError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": f"bad request: {exc}"}, head)

    def _run(self) -> RunDir:
        return RunDir.open(self.server.run_dir)

    def _api(self, name: str, q: dict[str, str]) -> Any:
        run = self._run()
        if name == "overview":
            return data.overview(run)
        if name == "trials":
            return data.trials(run, split=q.get("split"), candidate=q.get("candidate"),
                               eval_id=q.get("eval"), task=q.get("task"),
                               outcome=q.get("outcome"), cluster=q.get("cluster"),
                               pass_threshold=run_config(run).gate.pass_threshold)
        if name == "trial":
            return data.trial(run, q["eval"], q["task"], int(q["trial"]))
        if name == "clusters":
            return data.clusters(run, q["split"], q["candidate"])
        if name == "compare":
            return compare(run, q["a"], q["b"], Split(q.get("split", "val")))
        if name == "diff":
            return diff(run, q["a"], q["b"])
        raise KeyError(f"no endpoint /api/{name}")

    def _send(self, status: HTTPStatus, payload: Any, head: bool = False,
              extra: dict[str, str] | None = None) -> None:
        body = json.dumps(payload, default=str, allow_nan=False).encode()
        self._send_bytes(status, body, "application/json", head, extra)

    def _send_bytes(self, status: HTTPStatus, body: bytes, kind: str, head: bool = False,
                    extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        headers = {"Content-Type": kind, "Content-Length": str(len(body)),
                   "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                   "Content-Security-Policy": CSP, "Referrer-Policy": "no-referrer",
                   **(extra or {})}
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)


class ViewerServer(ThreadingHTTPServer):
    """The viewer's HTTP server for one run dir."""

    daemon_threads = True

    def __init__(self, run_dir: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        RunDir.open(run_dir)  # RunDirError now, not on the first request
        self.run_dir = Path(run_dir)
        self.loopback = is_loopback(host)
        self.recent_requests: deque[str] = deque(maxlen=500)
        """The latest requests (method and path), for diagnostics."""
        super().__init__((host, port), ViewerHandler)

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def start_background(self) -> threading.Thread:
        """Serve on a daemon thread; ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="capevolve-view",
                                  daemon=True)
        thread.start()
        return thread
