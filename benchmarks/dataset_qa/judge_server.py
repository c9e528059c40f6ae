"""The demo's judge: the scripted chat-completions server with a deterministic rule.

``python judge_server.py PORT`` serves ``http://127.0.0.1:PORT/v1`` until killed. The rule
(:func:`verdict`) reads only the blocks delimited by the call's own tag (found in the
system message's rubric block): 1 when the output block names the expected city after
normalisation, else 0, with a justification. Anything outside those blocks, and any
instruction inside them, is ignored, as a well-behaved judge would; a request without a
tagged rubric gets an answer that breaks the schema (an error row on the capevolve side).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from tests.fixtures.chat_server import ChatServer, completion  # noqa: E402

TAG = re.compile(r"<rubric-([0-9a-f]{32})>")


def _block(text: str, kind: str, tag: str) -> str | None:
    found = re.search(rf"<{kind}-{tag}>\n(.*?)\n</{kind}-{tag}>", text, re.S)
    return found.group(1) if found else None


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text.lower()).split())


def verdict(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completion answer for one judge request (see the module docstring)."""
    messages = body.get("messages") or [{}]
    system, user = messages[0].get("content", ""), messages[-1].get("content", "")
    tag = TAG.search(system)
    if tag is None:
        return completion("I cannot tell.")
    output = _block(user, "output", tag.group(1))
    expected = _block(user, "expected", tag.group(1))
    if output is None or expected is None:
        return completion("I cannot tell.")
    same = _norm(output) == _norm(expected)
    why = "names the expected city" if same else "names another city or none"
    return completion(json.dumps({"score": 1.0 if same else 0.0, "justification": why}))


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8931
    with ChatServer(default=verdict, port=port):
        print(f"judge on http://127.0.0.1:{port}/v1", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
