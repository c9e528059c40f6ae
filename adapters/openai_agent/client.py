"""A minimal OpenAI-compatible chat-completions client (standard library only).

``ChatClient.complete`` POSTs ``{base_url}/chat/completions`` and returns the parsed JSON.
Rate limits (429), server errors (5xx), timeouts and refused connections are retried up to
``retries`` times with exponential backoff (``Retry-After`` honoured up to the cap); when
they persist, :class:`EndpointUnavailable` is raised: an infrastructure failure, never a
score. Any other HTTP error or an unparseable body raises :class:`EndpointError`.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
BACKOFF_CAP_S = 20.0


class EndpointError(Exception):
    """The endpoint answered with a non-retryable error (bad request, auth, bad JSON)."""


class EndpointUnavailable(EndpointError):
    """Retryable failures (429, 5xx, timeout, connection) persisted past every retry."""


@dataclass(frozen=True)
class ClientConfig:
    """Where the endpoint is and how patiently to call it."""

    base_url: str
    api_key: str | None = None
    timeout_s: float = 60.0
    retries: int = 3
    backoff_s: float = 1.0


class ChatClient:
    """POSTs chat-completion requests; counts HTTP attempts in ``attempts``."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.attempts = 0

    def _post(self, payload: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        request = urllib.request.Request(
            self.config.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(payload).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
            body = response.read()
        try:
            return json.loads(body)
        except ValueError:
            raise EndpointError(f"endpoint returned a body that is not JSON: {body[:80]!r}") \
                from None

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(BACKOFF_CAP_S, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(BACKOFF_CAP_S, self.config.backoff_s * 2 ** (attempt - 1))

    def complete(self, payload: dict) -> dict:
        """One chat completion, retried on transient failures (see the module docstring)."""
        last = "no attempt made"
        for attempt in range(1, self.config.retries + 2):
            self.attempts += 1
            retry_after = None
            try:
                return self._post(payload)
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:200].decode("utf-8", "replace")
                if exc.code not in RETRY_STATUSES:
                    raise EndpointError(f"HTTP {exc.code} from the endpoint: {detail}") from None
                last, retry_after = f"HTTP {exc.code}: {detail}", exc.headers.get("Retry-After")
            except TimeoutError:
                last = f"timed out after {self.config.timeout_s:g}s"
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                    last = f"timed out after {self.config.timeout_s:g}s"
                else:
                    last = f"connection failed: {exc.reason}"
            except (ConnectionError, http.client.HTTPException) as exc:
                last = f"connection failed: {type(exc).__name__}: {exc}"
            if attempt <= self.config.retries:
                time.sleep(self._delay(attempt, retry_after))
        raise EndpointUnavailable(f"endpoint unavailable after {self.config.retries + 1} "
                                  f"attempts: {last}")

