"""The chat-completions client the agent uses: capevolve's bounded, retried client.

:class:`ChatClient` POSTs ``{base_url}/chat/completions``; 429 / 5xx / timeouts / refused
connections are retried with exponential backoff (Retry-After honoured) within the call's
deadline, then :class:`EndpointUnavailable` (an infrastructure failure, never a score); any
other HTTP error or a body that is not a JSON object raises :class:`EndpointError`. The one
implementation is :mod:`capevolve.optimize.proposers.chat` (the ``llm`` proposer uses it too).
"""

from capevolve.optimize.proposers.chat import (
    BACKOFF_CAP_S,
    RETRY_STATUSES,
    ChatClient,
    ClientConfig,
    EndpointError,
    EndpointUnavailable,
)

__all__ = ["BACKOFF_CAP_S", "RETRY_STATUSES", "ChatClient", "ClientConfig", "EndpointError",
           "EndpointUnavailable"]
