"""The canonical retail tools: the scorer replays gold actions with these.

Every tool is ``fn(db, **arguments)``. Read tools return JSON-serialisable values and never
change ``db``; write tools change ``db`` in place and return a short result. A request the
store refuses raises ``ValueError`` with a message the agent is shown (a tool error, as a
real environment would answer). A candidate's ``tools/tools.py`` follows the same contract
(see ``capability.load_tools``); this module is the reference it is scored against.
"""

from __future__ import annotations

import ast
import copy
import operator
from collections.abc import Callable

READ_TOOLS = ("get_user", "get_order", "list_orders", "get_product", "calculate")
WRITE_TOOLS = ("cancel_order", "return_items", "exchange_items", "modify_address",
               "modify_payment", "transfer_to_human")
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
_OPS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos}


def _user(db: dict, user_id: str) -> dict:
    if user_id not in db["users"]:
        raise ValueError(f"user {user_id} not found")
    return db["users"][user_id]


def _order(db: dict, order_id: str) -> dict:
    order_id = order_id.lstrip("#")
    if order_id not in db["orders"]:
        raise ValueError(f"order #{order_id} not found")
    return db["orders"][order_id]


def _total(order: dict) -> float:
    return round(sum(item["price"] for item in order["items"]), 2)


def _original_method(order: dict) -> str:
    return order["payment_history"][0]["payment_method_id"]


def get_user(db: dict, user_id: str) -> dict:
    """Profile of a user: name, email, address, payment methods and order ids."""
    return copy.deepcopy(_user(db, user_id))


def get_order(db: dict, order_id: str) -> dict:
    """An order: owner, status, address, items with prices, payment history."""
    return copy.deepcopy(_order(db, order_id))


def list_orders(db: dict, user_id: str) -> list:
    """The user's orders as ``{order_id, status}`` pairs."""
    return [{"order_id": o, "status": db["orders"][o]["status"]}
            for o in _user(db, user_id)["orders"]]


def get_product(db: dict, product_id: str) -> dict:
    """A product with every variant (item id, options, price, availability)."""
    if product_id not in db["products"]:
        raise ValueError(f"product {product_id} not found")
    return copy.deepcopy(db["products"][product_id])


def calculate(db: dict, expression: str) -> float:
    """Evaluate an arithmetic expression (+ - * / and parentheses), rounded to cents."""
    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        raise ValueError("only numbers, + - * / and parentheses are allowed")
    try:
        return round(walk(ast.parse(expression, mode="eval").body), 2)
    except SyntaxError:
        raise ValueError("the expression is not valid arithmetic") from None


def cancel_order(db: dict, order_id: str, reason: str) -> dict:
    """Cancel a pending order and refund its total to the original payment method."""
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError(f"order #{order['order_id']} is {order['status']} and cannot be "
                         "cancelled; only pending orders can be cancelled")
    if reason not in CANCEL_REASONS:
        raise ValueError(f"reason must be one of {', '.join(CANCEL_REASONS)}")
    total, method = _total(order), _original_method(order)
    order["status"], order["cancel_reason"] = "cancelled", reason
    order["payment_history"].append(
        {"transaction_type": "refund", "amount": total, "payment_method_id": method})
    card = db["users"][order["user_id"]]["payment_methods"][method]
    if card["source"] == "gift_card":
        card["balance"] = round(card["balance"] + total, 2)
    return {"status": "cancelled", "refund_amount": total, "payment_method_id": method}


def _check_method(db: dict, order: dict, method: str, allow_gift: bool = True) -> dict:
    methods = db["users"][order["user_id"]]["payment_methods"]
    if method not in methods:
        raise ValueError(f"payment method {method} is not on the customer's account")
    card = methods[method]
    if method != _original_method(order) and not (allow_gift and card["source"] == "gift_card"):
        raise ValueError("refunds go to the original payment method or a gift card")
    return card


def _delivered_items(order: dict, item_ids: list) -> list:
    if order["status"] != "delivered":
        raise ValueError(f"order #{order['order_id']} is {order['status']}; only delivered "
                         "orders can be returned or exchanged")
    owned = [item["item_id"] for item in order["items"]]
    missing = [i for i in item_ids if i not in owned]
    if missing or not item_ids:
        raise ValueError(f"items {missing or item_ids} are not in order #{order['order_id']}")
    return [next(item for item in order["items"] if item["item_id"] == i) for i in item_ids]


def return_items(db: dict, order_id: str, item_ids: list, payment_method_id: str) -> dict:
    """Request a return of delivered items; the refund goes to ``payment_method_id``."""
    order = _order(db, order_id)
    items = _delivered_items(order, item_ids)
    _check_method(db, order, payment_method_id)
    amount = round(sum(item["price"] for item in items), 2)
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return {"status": "return requested", "refund_amount": amount}


def exchange_items(db: dict, order_id: str, item_ids: list, new_item_ids: list,
                   payment_method_id: str) -> dict:
    """Exchange delivered items for other variants of the same products."""
    order = _order(db, order_id)
    items = _delivered_items(order, item_ids)
    if len(new_item_ids) != len(items):
        raise ValueError("give one new item per exchanged item")
    new_prices = []
    for item, new_id in zip(items, new_item_ids, strict=True):
        variant = db["products"][item["product_id"]]["variants"].get(new_id)
        if variant is None or not variant["available"]:
            raise ValueError(f"item {new_id} is not an available variant of {item['name']}")
        new_prices.append(variant["price"])
    card = _check_method(db, order, payment_method_id)
    diff = round(sum(new_prices) - sum(item["price"] for item in items), 2)
    if card["source"] == "gift_card" and diff > card["balance"]:
        raise ValueError("the gift card balance does not cover the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"], order["exchange_new_items"] = sorted(item_ids), sorted(new_item_ids)
    order["exchange_payment_method_id"], order["exchange_price_difference"] = (
        payment_method_id, diff)
    return {"status": "exchange requested", "price_difference": diff}


def modify_address(db: dict, order_id: str, address1: str, address2: str, city: str,
                   state: str, zip: str) -> dict:
    """Change the shipping address of a pending order."""
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError(f"order #{order['order_id']} is {order['status']}; only pending "
                         "orders can be modified")
    order["address"] = {"address1": address1, "address2": address2, "city": city,
                        "state": state, "zip": zip}
    return {"status": "pending", "address": order["address"]}


def modify_payment(db: dict, order_id: str, payment_method_id: str) -> dict:
    """Pay a pending order with another method; the old one is refunded."""
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError(f"order #{order['order_id']} is {order['status']}; only pending "
                         "orders can be modified")
    methods = db["users"][order["user_id"]]["payment_methods"]
    old = order["payment_history"][-1]["payment_method_id"]
    if payment_method_id not in methods or payment_method_id == old:
        raise ValueError("choose another payment method on the customer's account")
    total, new = _total(order), methods[payment_method_id]
    if new["source"] == "gift_card" and new["balance"] < total:
        raise ValueError("the gift card balance is lower than the order total")
    order["payment_history"] += [
        {"transaction_type": "payment", "amount": total, "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": total, "payment_method_id": old}]
    if new["source"] == "gift_card":
        new["balance"] = round(new["balance"] - total, 2)
    if methods[old]["source"] == "gift_card":
        methods[old]["balance"] = round(methods[old]["balance"] + total, 2)
    return {"status": "pending", "payment_method_id": payment_method_id}


def transfer_to_human(db: dict, user_id: str, summary: str) -> str:
    """Hand the conversation to a human agent (the summary is for them, not stored)."""
    _user(db, user_id)
    db["transfers"].append({"user_id": user_id})
    return "Transfer successful: a human agent will continue this conversation."
