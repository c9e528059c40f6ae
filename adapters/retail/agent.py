"""The deterministic policy agent: the offline stand-in for an LLM support agent.

It reads the customer's request, plans, and acts only through the candidate's tools. The
candidate's policy switches behaviours on (``behaviours.Behaviour``); a missing or
unreliable rule produces the failure a real model shows: a write never confirmed, an
amount never told, a wrong payment method, a refusal it should not make, or an action
narrated in the final message without the tool ever being called. Given the same
capability, task and seed, it produces the same conversation.
"""

from __future__ import annotations

from typing import Any, NoReturn

from . import user
from .behaviours import Behaviour as B
from .behaviours import Conduct
from .requests import Request, parse
from .toolbox import ToolBox

NO_CONFIRM_WRITES = ("transfer_to_human",)


class _Stop(Exception):
    """The conversation is over (the final message has been said)."""


class PolicyAgent:
    """One conversation with one customer; call :meth:`run` once."""

    def __init__(self, record: dict, box: ToolBox, conduct: Conduct) -> None:
        self.record, self.box, self.conduct = record, box, conduct
        self.messages = box.messages  # tool messages and turns interleave in one list
        self.messages.append(user.opening(record))
        self.writes = 0
        self.narrated: list[str] = []  # writes claimed without the tool being called
        self.profile: dict[str, Any] | None = None

    # -- conversation ------------------------------------------------------------------
    def say(self, text: str) -> dict | None:
        """An assistant message; returns the customer's reply (None: they are done)."""
        self.messages.append({"role": "assistant", "content": text})
        answer = user.reply(self.record, text)
        if answer is not None:
            self.messages.append(answer)
        return answer

    def finish(self, text: str) -> NoReturn:
        """Say the final message and end the conversation."""
        self.say(text)
        raise _Stop

    def amount(self) -> bool:
        """Whether the agent states amounts on this trial."""
        return B.REPORT_AMOUNT in self.conduct and B.QUIET_AMOUNTS not in self.conduct

    def read(self, name: str, **arguments: Any) -> Any:
        result = self.box.call(name, arguments)
        if not result.ok:
            self.finish(f"I'm sorry, I couldn't look that up: {result.error}.")
        return result.value

    def add(self, *values: float) -> float:
        """A sum through the calculate tool; the agent's own arithmetic if the tool fails."""
        result = self.box.call("calculate", {"expression": " + ".join(f"{v:.2f}" for v in values)})
        return float(result.value) if result.ok else round(sum(values), 2)

    def write(self, name: str, arguments: dict, summary: str) -> object:
        """Confirm (if the policy says so), then call the write tool, or narrate it."""
        if B.CONFIRM in self.conduct and name not in NO_CONFIRM_WRITES:
            answer = self.say(f"To confirm: I will {summary}. Shall I proceed (yes/no)?")
            if answer is None or not answer.get("confirms"):
                self.finish("Understood, I have not made any change.")
        self.writes += 1
        if self.conduct.narrates(self.writes):
            self.narrated.append(name)
            return {}
        result = self.box.call(name, arguments)
        if not result.ok:
            self.finish(f"I'm sorry, I couldn't complete that: {result.error}.")
        return result.value

    # -- planning ------------------------------------------------------------------------
    def run(self) -> list[dict]:
        """Serve the request; returns the whole conversation (tool messages interleaved)."""
        try:
            self._serve(parse(self.record["request"]))
        except _Stop:
            pass
        return self.messages

    def _serve(self, req: Request) -> None:
        if req.intent == "unknown" or req.order_id is None:
            self.finish("I'm sorry, I can't help with that request.")
        if B.VERIFY in self.conduct:
            self.profile = self.read("get_user", user_id=self.record["user_id"])
            if req.order_id not in self.profile.get("orders", []):
                self.finish(f"I'm sorry, order #{req.order_id} is not on your account, so I "
                            "cannot make changes to it.")
        if req.intent == "escalate":
            return self._escalate(req)
        order = self.read("get_order", order_id=req.order_id)
        getattr(self, f"_{req.intent}")(req, order)

    def _refuse_unless_pending(self, order: dict, action: str) -> None:
        if B.PENDING_ONLY in self.conduct and order["status"] != "pending":
            self.finish(f"I'm sorry, order #{order['order_id']} is {order['status']} and "
                        f"cannot be {action}; only pending orders can be.")

    def _refund_method(self, order: dict) -> str:
        if B.ORIGINAL_PAYMENT in self.conduct:
            return order["payment_history"][0]["payment_method_id"]
        if self.profile is None:
            self.profile = self.read("get_user", user_id=self.record["user_id"])
        return min(self.profile["payment_methods"])

    def _info(self, req: Request, order: dict) -> None:
        text = f"Order #{order['order_id']} is {order['status']}"
        if B.QUIET_AMOUNTS not in self.conduct:
            text += f" and its total is ${self.add(*(i['price'] for i in order['items'])):.2f}"
        self.finish(text + ".")

    def _cancel(self, req: Request, order: dict) -> None:
        self._refuse_unless_pending(order, "cancelled")
        self.write("cancel_order", {"order_id": req.order_id, "reason": req.reason},
                   f"cancel order #{req.order_id} ({req.reason})")
        text = f"Your order #{req.order_id} has been cancelled."
        if self.amount():
            total = self.add(*(i["price"] for i in order["items"]))
            text += f" A refund of ${total:.2f} goes back to your original payment method."
        self.finish(text)

    def _return(self, req: Request, order: dict) -> None:
        items = [i for i in order["items"] if req.mentions(i["name"])]
        method = self._refund_method(order)
        self.write("return_items", {"order_id": req.order_id, "payment_method_id": method,
                                    "item_ids": sorted(i["item_id"] for i in items)},
                   f"return {len(items)} item(s) from order #{req.order_id}")
        text = "Your return has been requested; please ship the items back."
        if self.amount():
            text += f" You will be refunded ${self.add(*(i['price'] for i in items)):.2f}."
        self.finish(text)

    def _exchange(self, req: Request, order: dict) -> None:
        item = next((i for i in order["items"] if req.mentions(i["name"])), None)
        if item is None or req.variant is None:
            self.finish("I'm sorry, I couldn't tell which item you want to exchange.")
        product = self.read("get_product", product_id=item["product_id"])
        new = next((v for v in product["variants"].values() if v["options"] == req.variant),
                   None)
        if new is None:
            self.finish("I'm sorry, that variant does not exist.")
        method = self._refund_method(order)
        self.write("exchange_items", {"order_id": req.order_id, "item_ids": [item["item_id"]],
                                      "new_item_ids": [new["item_id"]],
                                      "payment_method_id": method},
                   f"exchange the {item['name']} for the {req.variant['color']} one")
        text = "Your exchange has been requested."
        if B.PRICE_DIFFERENCE in self.conduct and B.QUIET_AMOUNTS not in self.conduct:
            diff = self.add(new["price"], -item["price"])
            text += f" The price difference is ${abs(diff):.2f}."
        elif self.amount():
            text += f" The new item costs ${new['price']:.2f}."
        self.finish(text)

    def _modify_address(self, req: Request, order: dict) -> None:
        self._refuse_unless_pending(order, "modified")
        if req.address is None:
            self.finish("I'm sorry, I couldn't read the new address.")
        self.write("modify_address", {"order_id": req.order_id, **req.address},
                   f"ship order #{req.order_id} to {req.address['address1']}")
        self.finish(f"Order #{req.order_id} will now ship to {req.address['address1']}.")

    def _modify_payment(self, req: Request, order: dict) -> None:
        self._refuse_unless_pending(order, "modified")
        if self.profile is None:
            self.profile = self.read("get_user", user_id=self.record["user_id"])
        gift = next((m for m in sorted(self.profile["payment_methods"])
                     if self.profile["payment_methods"][m]["source"] == "gift_card"), None)
        if gift is None:
            self.finish("I'm sorry, there is no gift card on your account.")
        balance = self.profile["payment_methods"][gift]["balance"]
        total = self.add(*(i["price"] for i in order["items"]))
        if B.GIFT_BALANCE in self.conduct and balance < total:
            self.finish("I'm sorry, your gift card balance cannot cover the order total, so "
                        "I can't switch the payment.")
        self.write("modify_payment", {"order_id": req.order_id, "payment_method_id": gift},
                   f"pay order #{req.order_id} with your gift card")
        text = f"Order #{req.order_id} is now paid with your gift card."
        if self.amount():
            text += f" Your remaining gift card balance is ${self.add(balance, -total):.2f}."
        self.finish(text)

    def _escalate(self, req: Request) -> None:
        if B.ESCALATE not in self.conduct:
            self.finish("I'm sorry, I can't transfer you, but I can help with your order "
                        "here.")
        self.write("transfer_to_human", {"user_id": self.record["user_id"],
                                         "summary": req.text[:200]}, "transfer you")
        self.finish("I've transferred you to a human agent; they will be with you shortly.")
