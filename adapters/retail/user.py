"""The scripted customer: opens with the task's request and answers confirmation questions.

Shared by the policy agent and the OpenAI-compatible agent so both meet the same customer.
The customer says yes or no (the task's ``decision``) to a question that asks for
confirmation, and otherwise ends the conversation.
"""

from __future__ import annotations

import re

_ASKS_CONFIRMATION = re.compile(
    r"\b(?:confirm|proceed|go ahead|shall i|should i|do you want me to|would you like me to)\b",
    re.IGNORECASE)
YES = "Yes, please go ahead."
NO = "No, please leave it as it is."
DONE = "Thanks, that's all."


def opening(record: dict) -> dict:
    """The first customer message: who they are and what they want."""
    return {"role": "user", "content": f"{record['request']} (My user id is "
                                       f"{record['user_id']}.)"}


def asks_confirmation(text: str) -> bool:
    """Whether an assistant message asks the customer to confirm an action."""
    return "?" in text and bool(_ASKS_CONFIRMATION.search(text))


def reply(record: dict, assistant_text: str) -> dict | None:
    """The customer's answer to an assistant message, or None when the customer is done.

    An answer to a confirmation question carries ``confirms`` (True for yes), which the
    scorer reads to check that every write was confirmed first.
    """
    if asks_confirmation(assistant_text):
        yes = record["decision"] == "yes"
        return {"role": "user", "content": YES if yes else NO, "confirms": yes}
    return None
