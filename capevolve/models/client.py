"""The one model client (agent, judge, proposer), on the ``openai`` SDK.

Retryable failures (408, 409, 429, 5xx, timeouts, dropped connections) retry with jittered backoff
within the deadline, then raise :class:`ModelUnavailable`; others raise :class:`ModelError` at once.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from typing import Any

from capevolve.config_models import TokenParam
from capevolve.errors import ModelError, ModelUnavailable, RolloutLimitReached
from capevolve.kinds import ModelFailure
from capevolve.models.meter import Meter
from capevolve.models.settings import ModelSettings

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
BACKOFF_CAP_S = 30.0
_CONTEXT_WORDS = ("context length", "context_length", "context size", "context window",
                  "maximum context", "too many tokens", "prompt is too long")
_untokenized: set[str] = set()
"""Endpoints with no tokenizer route."""
_unstructured: set[tuple[str, str]] = set()
"""Endpoints that refused a response_format."""
_switched: dict[tuple[str, str], str] = {}
"""Endpoints that refused max_tokens: later clients send max_completion_tokens."""


def _header(exc: Any, name: str) -> str | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    return headers.get(name) if headers is not None else None


class ModelClient:
    """Calls one endpoint with pinned settings, counting on ``meter``."""

    def __init__(self, settings: ModelSettings, meter: Meter | None = None,
                 api_key: str | None = None) -> None:
        self.settings = settings
        self._api_key = api_key  # else read from the variable settings.api_key_env names
        self.meter = meter if meter is not None else Meter()
        self._start = self.meter.snapshot()
        self.calls = 0
        self._token_key = self._first_token_key()
        self._client: Any = None
        self._formatted = False  # the last attempt carried a response_format

    def _sdk(self) -> Any:
        """The ``openai`` client, made on first use."""
        if self._client is None:
            import openai

            s, key = self.settings, self._api_key
            key = key or (os.environ.get(s.api_key_env) if s.api_key_env else None)
            self._client = openai.OpenAI(api_key=key or "not-needed", base_url=s.base_url,
                                         max_retries=0)
        return self._client

    def _first_token_key(self) -> str:
        if self.settings.token_param != TokenParam.AUTO:
            return str(self.settings.token_param)
        return _switched.get((self.settings.base_url, self.settings.model), "max_tokens")

    def body(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``payload`` with the pinned settings in place."""
        s = self.settings
        body = {k: v for k, v in payload.items()
                if k not in ("max_tokens", "max_completion_tokens", "temperature", "top_p")}
        if not s.structured or (s.base_url, s.model) in _unstructured:
            body.pop("response_format", None)
        body["model"] = s.model
        body[self._token_key] = s.max_tokens
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.top_p is not None:
            body["top_p"] = s.top_p
        return body

    def _check_spent(self) -> None:
        limits, now = self.settings.limits, self.meter.snapshot()
        spent = {k: now[k] - self._start[k] for k in ("prompt_tokens", "completion_tokens")}
        tokens = spent["prompt_tokens"] + spent["completion_tokens"]
        if limits.max_tokens is not None and tokens >= limits.max_tokens:
            raise RolloutLimitReached(f"bound reached: {tokens} tokens of "
                                      f"{limits.max_tokens} (models.rollout.max_tokens)",
                                      "tokens")
        if limits.max_usd is not None and self.settings.price is not None:
            usd = self.settings.price.cost(spent["prompt_tokens"], spent["completion_tokens"])
            if usd >= limits.max_usd:
                raise RolloutLimitReached(f"bound reached: ${usd:.4f} of ${limits.max_usd:g} "
                                          "(models.rollout.max_usd)", "cost")

    def complete(self, payload: dict[str, Any], *,
                 deadline_s: float | None = None) -> dict[str, Any]:
        """One chat completion (``deadline_s`` only lowers the deadline); a tool call cut at the
        bound is dropped."""
        s = self.settings
        if s.limits.max_turns is not None and self.calls >= s.limits.max_turns:
            raise RolloutLimitReached(f"bound reached: {s.limits.max_turns} model calls "
                                      "(models.rollout.max_turns)", "turns")
        self._check_spent()
        if s.context_tokens is not None:
            self._check_context(payload, s.context_tokens)
        self.calls += 1
        bound = s.deadline_s if deadline_s is None else min(deadline_s, s.deadline_s)
        end, last, failure = time.monotonic() + bound, "no attempt made", ModelFailure.UNREACHABLE
        attempt = 0
        while attempt <= s.retries:
            left = end - time.monotonic()
            if left <= 0:
                break
            attempt += 1
            try:
                answer = self._attempt(payload, left)
                self._check_spent()  # an answer that reached a bound ends the rollout too
                return answer
            except _Retry as exc:
                last, failure, wait = exc.reason, exc.failure, exc.wait
            except _Resend:
                attempt -= 1  # the field switched: the same attempt again, not a retry
                continue
            if attempt <= s.retries:
                time.sleep(max(0.0, min(wait, end - time.monotonic())))
        self.meter.failure = str(failure)
        raise ModelUnavailable(f"model endpoint {s.base_url} unavailable after {attempt} "
                               f"attempts within {bound:g}s: {last}", str(failure))

    def _check_context(self, payload: dict[str, Any], window: int) -> None:
        measured = self.prompt_tokens(payload.get("messages") or [], payload.get("tools"))
        if measured is not None and measured + self.settings.max_tokens > window:
            self.meter.failure = str(ModelFailure.CONTEXT_LENGTH)
            raise ModelError(f"not sent: the prompt is {measured} tokens (measured by the "
                             f"endpoint) and max_tokens is {self.settings.max_tokens}, more "
                             f"than context_tokens {window} of {self.settings.model}",
                             str(ModelFailure.CONTEXT_LENGTH))

    def prompt_tokens(self, messages: list[Any], tools: Any = None,
                      timeout_s: float = 10.0) -> int | None:
        """The prompt's tokens by the endpoint's tokenizer (None: none offered)."""
        import openai

        root = self.settings.base_url.rstrip("/").removesuffix("/v1")
        if root in _untokenized:
            return None

        def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
            found = self._sdk().post(f"{root}{path}", cast_to=object, body=body,
                                     options={"timeout": timeout_s})
            return found if isinstance(found, dict) else {}

        chat: dict[str, Any] = {"messages": messages, **({"tools": tools} if tools else {})}
        try:
            with contextlib.suppress(openai.APIStatusError):
                counted = post("/tokenize", {"model": self.settings.model, **chat}).get("count")
                if isinstance(counted, int):
                    return counted  # vLLM
            prompt = post("/apply-template", chat).get("prompt")
            if isinstance(prompt, str):  # llama.cpp
                tokens = post("/tokenize", {"content": prompt, "add_special": True})
                if isinstance(tokens.get("tokens"), list):
                    return len(tokens["tokens"])
        except openai.APIStatusError:
            pass
        except (openai.OpenAIError, ValueError):
            return None  # not measured this time; the provider's own 400 still counts
        _untokenized.add(root)
        return None

    def probe(self, timeout_s: float = 5.0) -> str | None:
        """Why the endpoint cannot be used (None: usable)."""
        import openai

        try:
            self._sdk().models.list(timeout=timeout_s)
        except openai.APIStatusError as exc:
            return f"HTTP {exc.status_code}: the endpoint refused the API key" \
                if exc.status_code in (401, 403) else None
        except openai.APITimeoutError:
            return f"no answer within {timeout_s:g}s"
        except openai.APIConnectionError as exc:
            return f"unreachable ({exc.__cause__ or exc})"
        except (openai.OpenAIError, ValueError):
            return None  # it answered; /models is optional for OpenAI-compatible servers
        return None

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(BACKOFF_CAP_S, max(0.0, float(retry_after)))
            except ValueError:
                pass
        base = min(BACKOFF_CAP_S, self.settings.backoff_s * 2 ** (attempt - 1))
        return base * random.uniform(0.5, 1.5)  # jitter; no result depends on it

    def _attempt(self, payload: dict[str, Any], left: float) -> dict[str, Any]:
        import openai

        sdk, body = self._sdk(), self.body(payload)
        self._formatted = "response_format" in body
        messages = body.pop("messages")
        model = body.pop("model")
        timeout = openai.Timeout(left, connect=min(self.settings.connect_timeout_s, left))
        n = self.meter.counts["attempts"] + 1
        t0 = time.monotonic()
        try:
            response = sdk.chat.completions.create(
                model=model, messages=messages, extra_body=body, timeout=timeout)
        except openai.APIStatusError as exc:
            self._refused(exc, n)
            raise AssertionError("unreachable") from None
        except openai.APIConnectionError as exc:  # a timeout among them
            slow = isinstance(exc, openai.APITimeoutError)
            refused = not slow and (isinstance(exc.__cause__, ConnectionRefusedError)
                                       or "refused" in str(exc.__cause__ or "").lower())
            self.meter.failed(unknown=not refused, failure=ModelFailure.UNREACHABLE)
            raise _Retry(f"no answer within {left:g}s" if slow else
                         f"connection failed: {exc.__cause__ or exc}",
                         ModelFailure.UNREACHABLE, self._backoff(n, None)) from None
        except (ValueError, openai.APIResponseValidationError) as exc:  # a body not JSON
            self.meter.failed(unknown=True, failure=ModelFailure.SERVER)
            raise ModelError(f"the endpoint returned a body that is not JSON ({exc})",
                             str(ModelFailure.SERVER)) from None
        if not hasattr(response, "model_dump"):  # JSON that is not an object
            self.meter.failed(unknown=True, failure=ModelFailure.SERVER)
            raise ModelError(f"the endpoint returned JSON that is not an object: "
                             f"{str(response)[:80]}", str(ModelFailure.SERVER))
        data = response.model_dump(mode="json")
        choices = data.get("choices") or [{}]
        choice = choices[0]
        cut = choice.get("finish_reason") == "length"
        message = choice.get("message") or {}
        tools = _tool_answer(body["tools"], message) if body.get("tools") else None
        if cut and message.get("tool_calls"):
            message["tool_calls"] = None
            choice["cut"] = True
        self.meter.answered(data.get("usage"), data.get("model"), self.settings.price,
                            truncated=cut, seconds=time.monotonic() - t0, tools=tools)
        return data

    def _refused(self, exc: Any, n: int) -> None:
        body = getattr(exc, "body", None)
        text = str(body if body is not None else getattr(exc, "message", exc))
        status, detail = exc.status_code, " ".join(text.split())[:300]
        lowered = detail.lower()
        should = (_header(exc, "x-should-retry") or "").lower()
        if status == 400 and self._token_key == "max_tokens" \
                and self.settings.token_param == TokenParam.AUTO \
                and "max_tokens" in lowered and "max_completion_tokens" in lowered:
            self.meter.failed(unknown=False)
            self._token_key = "max_completion_tokens"
            _switched[(self.settings.base_url, self.settings.model)] = self._token_key
            raise _Resend
        if status == 400 and self._formatted \
                and any(w in lowered for w in ("response_format", "json_schema", "schema")):
            self.meter.failed(unknown=False)
            _unstructured.add((self.settings.base_url, self.settings.model))
            raise _Resend
        retry = status in RETRY_STATUSES if should not in ("true", "false") else should == "true"
        failure = (ModelFailure.QUOTA if status == 429 else ModelFailure.AUTH
                   if status in (401, 403) else ModelFailure.SERVER if status >= 500
                   else ModelFailure.CONTEXT_LENGTH
                   if status in (400, 413) and any(w in lowered for w in _CONTEXT_WORDS)
                   else ModelFailure.BAD_REQUEST)
        self.meter.failed(unknown=status >= 500, failure=failure)
        if retry and failure not in (ModelFailure.AUTH, ModelFailure.CONTEXT_LENGTH):
            raise _Retry(f"HTTP {status}: {detail}", failure,
                         self._backoff(n, _header(exc, "retry-after")))
        raise ModelError(f"HTTP {status} from {self.settings.base_url}: {detail}", str(failure))


_CALL_TEXT = re.compile(r'<tool_call>|"(?:name|function)"\s*:\s*"[\w.-]+"\s*,\s*'
                        r'"(?:arguments|parameters|args)"\s*:')


def _tool_answer(tools: Any, message: dict[str, Any]) -> str:
    """``call``, ``text`` (text like a call) or ``none``."""
    if message.get("tool_calls"):
        return "call"
    text = message.get("content")
    if not isinstance(text, str):
        return "none"
    names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)] \
        if isinstance(tools, list) else []
    if _CALL_TEXT.search(text) or any(isinstance(n, str) and n and re.search(
            rf"\b{re.escape(n)}\s*\(", text) for n in names):
        return "text"
    return "none"


class _Retry(Exception):
    def __init__(self, reason: str, failure: ModelFailure, wait: float) -> None:
        super().__init__(reason)
        self.reason, self.failure, self.wait = reason, failure, wait


class _Resend(Exception):
    pass
