"""An OpenAI-compatible chat-completions client (standard library only), bounded and retried.

:meth:`ChatClient.complete` POSTs ``{base_url}/chat/completions`` and returns the parsed JSON.
Every call is bounded: ``timeout_s`` per HTTP attempt (socket timeout) and ``deadline_s`` for
the whole call including retries and backoff. 429, 408, 409 and 5xx answers, timeouts and
refused or dropped connections are retried at most ``retries`` times with exponential
backoff (``Retry-After`` honoured, every wait capped at ``BACKOFF_CAP_S`` and by the
deadline); when they persist :class:`EndpointUnavailable` is raised. Any other HTTP status,
or a body that is not a JSON object, raises :class:`EndpointError` at once.
:meth:`ChatClient.probe` asks ``{base_url}/models`` once, to refuse an unreachable endpoint
before anything is spent.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from capevolve.errors import CapevolveError

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
BACKOFF_CAP_S = 20.0


class EndpointError(CapevolveError):
    """The endpoint answered with a non-retryable error (bad request, auth, not JSON)."""


class EndpointUnavailable(EndpointError):
    """Retryable failures (429, 5xx, timeouts, connections) persisted past every retry,
    or the call's deadline passed."""


@dataclass(frozen=True)
class ClientConfig:
    """Where the endpoint is and how patiently to call it."""

    base_url: str
    api_key: str | None = None
    timeout_s: float = 60.0
    """Socket timeout of one HTTP attempt."""
    retries: int = 3
    """Extra attempts after the first, for retryable failures only."""
    backoff_s: float = 1.0
    """First backoff wait; doubles per retry (capped at BACKOFF_CAP_S)."""
    deadline_s: float = 300.0
    """Wall-time bound of one call, retries and waits included."""


class ChatClient:
    """POSTs chat-completion requests; counts HTTP attempts in ``attempts``."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.attempts = 0

    def _request(self, path: str, payload: dict[str, Any] | None,
                 timeout_s: float) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.config.base_url.rstrip("/") + path, data=data,
                                         headers=headers,
                                         method="GET" if payload is None else "POST")
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
        try:
            value = json.loads(body)
        except ValueError:
            raise EndpointError("the endpoint returned a body that is not JSON: "
                                f"{body[:80]!r}") from None
        if not isinstance(value, dict):
            raise EndpointError(f"the endpoint returned JSON that is not an object: "
                                f"{body[:80]!r}")
        return value

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(BACKOFF_CAP_S, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(BACKOFF_CAP_S, self.config.backoff_s * 2 ** (attempt - 1))

    def complete(self, payload: dict[str, Any], *,
                 deadline_s: float | None = None) -> dict[str, Any]:
        """One chat completion, bounded and retried (see the module docstring);
        ``deadline_s`` lowers this call's deadline (never raises it above the config's)."""
        bound = self.config.deadline_s if deadline_s is None \
            else min(deadline_s, self.config.deadline_s)
        end = time.monotonic() + bound
        last = "no attempt made"
        for attempt in range(1, self.config.retries + 2):
            left = end - time.monotonic()
            if left <= 0:
                raise EndpointUnavailable(f"call deadline of {bound:g}s "
                                          f"passed after {attempt - 1} attempts: {last}")
            self.attempts += 1
            retry_after = None
            try:
                return self._request("/chat/completions", payload,
                                     min(self.config.timeout_s, left))
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:200].decode("utf-8", "replace")
                if exc.code not in RETRY_STATUSES:
                    raise EndpointError(f"HTTP {exc.code} from the endpoint: {detail}") from None
                last, retry_after = f"HTTP {exc.code}: {detail}", exc.headers.get("Retry-After")
            except TimeoutError:
                last = f"timed out after {min(self.config.timeout_s, left):g}s"
            except urllib.error.URLError as exc:
                last = (f"timed out after {min(self.config.timeout_s, left):g}s"
                        if isinstance(exc.reason, TimeoutError)
                        else f"connection failed: {exc.reason}")
            except (ConnectionError, http.client.HTTPException) as exc:
                last = f"connection failed: {type(exc).__name__}: {exc}"
            if attempt <= self.config.retries:
                time.sleep(max(0.0, min(self._delay(attempt, retry_after),
                                        end - time.monotonic())))
        raise EndpointUnavailable(f"endpoint unavailable after {self.config.retries + 1} "
                                  f"attempts: {last}")

    def probe(self, timeout_s: float = 5.0) -> str | None:
        """None when the endpoint answers at all (any HTTP status but 401 / 403), else the
        reason it cannot be used: unreachable, or the API key refused."""
        try:
            self._request("/models", None, timeout_s)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                return f"HTTP {exc.code}: the endpoint refused the API key"
            return None
        except EndpointError:
            return None  # it answered; /models is optional for OpenAI-compatible servers
        except TimeoutError:
            return f"no answer within {timeout_s:g}s"
        except urllib.error.URLError as exc:
            return f"unreachable ({exc.reason})"
        except (ConnectionError, http.client.HTTPException, ValueError) as exc:
            return f"unreachable ({type(exc).__name__}: {exc})"
        return None
