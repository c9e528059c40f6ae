"""Generate the fixed retail data: ``python -m capevolve_adapters.retail.generate`` rewrites data/.

Everything comes from ``random.Random(GEN_SEED)``, so the output is byte-identical on every
run. Each task record holds the customer (``user_id``), the request text, the customer's
answer when asked to confirm (``decision``), the gold actions, the facts the agent must tell
and the sha256 of the database after replaying the gold actions with ``reference_tools``.
"""

from __future__ import annotations

import json
import random
from typing import Any

from . import reference_tools as ref
from .store import DB_FILE, TASKS_FILE, fresh_db, state_hash

GEN_SEED = 20240611
N_USERS = 60
PRODUCTS = {
    "T-Shirt": ("S", "M", "L", "XL"), "Water Bottle": ("500ml", "750ml", "1000ml"),
    "Desk Lamp": ("small", "medium", "large"), "Backpack": ("18L", "24L", "30L"),
    "Running Shoes": ("8", "9", "10", "11"), "Wireless Earbuds": ("standard", "pro"),
    "Coffee Maker": ("4-cup", "8-cup", "12-cup"), "Yoga Mat": ("4mm", "6mm", "8mm"),
    "Office Chair": ("standard", "tall"), "Sunglasses": ("narrow", "wide"),
    "Hiking Boots": ("8", "9", "10", "11"), "Jigsaw Puzzle": ("500pc", "1000pc"),
}
COLORS = ("black", "white", "blue", "red", "green", "grey")
FIRST = ("Ava", "Noah", "Mia", "Liam", "Zoe", "Omar", "Yuki", "Ines", "Ravi", "Lena", "Tom",
         "Sara", "Ivan", "Nora", "Kai", "Eva")
LAST = ("Garcia", "Khan", "Silva", "Novak", "Okafor", "Berg", "Rossi", "Tanaka", "Moreau",
        "Ito", "Meyer", "Lopez")
STREETS = ("Oak St", "Maple Ave", "Pine Rd", "Cedar Ln", "Elm Dr", "Lake View", "Hill Rd")
CITIES = (("Springfield", "IL"), ("Portland", "OR"), ("Austin", "TX"), ("Denver", "CO"),
          ("Madison", "WI"), ("Salem", "MA"))
REASONS = {"no longer needed": "I no longer need it", "ordered by mistake":
           "I ordered it by mistake"}
# kind -> number of tasks; the mix sets how hard the benchmark is (see PROJECT.md)
MIX = (("info", 14), ("cancel", 16), ("cancel_giftcard", 8), ("cancel_refuse", 10),
       ("cancel_decline", 6), ("return", 16), ("exchange", 12), ("modify_address", 10),
       ("modify_payment", 10), ("escalate", 8), ("wrong_owner", 10))


def _address(rng: random.Random) -> dict:
    city, state = rng.choice(CITIES)
    return {"address1": f"{rng.randint(10, 999)} {rng.choice(STREETS)}",
            "address2": f"{rng.choice(('Apt', 'Suite', 'Unit'))} {rng.randint(1, 40)}",
            "city": city, "state": state, "zip": f"{rng.randint(10000, 99999)}"}


def build_db(rng: random.Random) -> dict:
    """Products with variants, users with payment methods, orders in every status."""
    products: dict[str, dict[str, Any]] = {}
    for p, (name, sizes) in enumerate(PRODUCTS.items(), start=1):
        pid, base = f"P{p:02d}", rng.randint(15, 180)
        variants: dict[str, dict[str, Any]] = {}
        for v, (color, size) in enumerate(sorted(
                rng.sample([(c, s) for c in COLORS for s in sizes], 5))):
            iid = f"I{p:02d}{v:02d}"
            variants[iid] = {"item_id": iid, "options": {"color": color, "size": size},
                             "price": round(base + rng.uniform(-10, 25), 2),
                             "available": v != 4}
        products[pid] = {"product_id": pid, "name": name, "variants": variants}
    users: dict[str, dict[str, Any]] = {}
    orders: dict[str, dict[str, Any]] = {}
    n_order = 1000001
    for u in range(1, N_USERS + 1):
        uid = f"U{u:03d}"
        methods: dict[str, dict[str, Any]] = {}
        for source in rng.sample(("credit_card", "gift_card", "paypal"), rng.randint(2, 3)):
            mid = f"{source}_{rng.randint(1000000, 9999999)}"
            methods[mid] = {"id": mid, "source": source}
            if source == "credit_card":
                methods[mid]["last_four"] = f"{rng.randint(0, 9999):04d}"
            if source == "gift_card":
                methods[mid]["balance"] = float(rng.choice((20, 60, 150, 400)))
        first, last = rng.choice(FIRST), rng.choice(LAST)
        users[uid] = {"user_id": uid, "name": f"{first} {last}",
                      "email": f"{first}.{last}{u}@example.com".lower(),
                      "address": _address(rng), "payment_methods": methods, "orders": []}
        for _ in range(rng.randint(3, 5)):
            oid = f"W{n_order}"
            n_order += 1
            items = []
            for pid in rng.sample(sorted(products), rng.randint(1, 3)):
                iid = rng.choice(sorted(products[pid]["variants"])[:4])
                var = products[pid]["variants"][iid]
                items.append({"item_id": iid, "product_id": pid,
                              "name": products[pid]["name"], "options": var["options"],
                              "price": var["price"]})
            method = rng.choice(sorted(methods))
            orders[oid] = {
                "order_id": oid, "user_id": uid, "address": users[uid]["address"],
                "status": rng.choice(("pending", "pending", "processed", "delivered",
                                      "delivered", "cancelled")),
                "items": items, "payment_history": [{
                    "transaction_type": "payment", "payment_method_id": method,
                    "amount": round(sum(i["price"] for i in items), 2)}]}
            users[uid]["orders"].append(oid)
    return {"users": users, "orders": orders, "products": products, "transfers": []}


def _total(order: dict) -> float:
    return round(sum(i["price"] for i in order["items"]), 2)


def _method(db: dict, order: dict) -> dict:
    return db["users"][order["user_id"]]["payment_methods"][
        order["payment_history"][0]["payment_method_id"]]


def _gift_card(db: dict, uid: str) -> str | None:
    return next((m for m, v in db["users"][uid]["payment_methods"].items()
                 if v["source"] == "gift_card"), None)


def _fits(db: dict, kind: str, o: dict) -> bool:
    status, source = o["status"], _method(db, o)["source"]
    if kind in ("cancel", "cancel_decline"):
        return status == "pending" and source != "gift_card"
    if kind == "cancel_giftcard":
        return status == "pending" and source == "gift_card"
    if kind == "cancel_refuse":
        return status in ("delivered", "processed")
    if kind == "return":
        return status == "delivered"
    if kind == "exchange":
        return status == "delivered" and source != "gift_card"
    if kind in ("modify_address",):
        return status == "pending"
    if kind == "modify_payment":
        gift = _gift_card(db, o["user_id"])
        return status == "pending" and gift is not None and source != "gift_card"
    return True


def _fact(kind: str, label: str, value: object = None) -> dict:
    return {"kind": kind, "label": label, "value": value}


def _make(db: dict, kind: str, o: dict, rng: random.Random) -> dict | None:
    """One task for order ``o``: request text, gold actions, facts (None if unsuitable)."""
    oid, uid, ref_ = o["order_id"], o["user_id"], f"#{o['order_id']}"
    t = {"user_id": uid, "decision": "yes", "actions": [], "facts": []}
    if kind == "info":
        t["request"] = f"Hi, what is the status and the total of my order {ref_}?"
        t["facts"] = [_fact("status", "the order status", o["status"]),
                      _fact("amount", "the order total", _total(o))]
    elif kind.startswith("cancel") or kind == "wrong_owner":
        reason = rng.choice(sorted(REASONS))
        t["request"] = f"Please cancel my order {ref_}, {REASONS[reason]}."
        if kind == "wrong_owner":
            t["user_id"] = rng.choice(sorted(u for u in db["users"] if u != uid))
            t["facts"] = [_fact("refusal", "that the order cannot be handled on this account")]
        elif kind == "cancel_refuse":
            t["facts"] = [_fact("refusal", "that the order cannot be cancelled")]
        elif kind == "cancel_decline":
            t["decision"] = "no"
        else:
            t["actions"] = [{"name": "cancel_order", "arguments": {"order_id": oid,
                                                                    "reason": reason}}]
            t["facts"] = [_fact("amount", "the refunded amount", _total(o))]
    elif kind == "return":
        items = rng.sample(o["items"], min(len(o["items"]), rng.randint(1, 2)))
        names = " and the ".join(i["name"] for i in items)
        t["request"] = f"I want to return the {names} from order {ref_}."
        t["actions"] = [{"name": "return_items", "arguments": {
            "order_id": oid, "item_ids": sorted(i["item_id"] for i in items),
            "payment_method_id": o["payment_history"][0]["payment_method_id"]}}]
        t["facts"] = [_fact("amount", "the refund amount",
                            round(sum(i["price"] for i in items), 2))]
    elif kind == "exchange":
        item = rng.choice(o["items"])
        variants = db["products"][item["product_id"]]["variants"].values()
        options = [v for v in variants if v["available"] and v["item_id"] != item["item_id"]
                   and v["price"] != item["price"]]
        if not options:
            return None
        new = rng.choice(sorted(options, key=lambda v: v["item_id"]))
        t["request"] = (f"I'd like to exchange the {item['name']} from order {ref_} for the "
                        f"{new['options']['color']} one in size {new['options']['size']}.")
        t["actions"] = [{"name": "exchange_items", "arguments": {
            "order_id": oid, "item_ids": [item["item_id"]], "new_item_ids": [new["item_id"]],
            "payment_method_id": o["payment_history"][0]["payment_method_id"]}}]
        t["facts"] = [_fact("amount", "the price difference",
                            abs(round(new["price"] - item["price"], 2)))]
    elif kind == "modify_address":
        a = _address(rng)
        t["request"] = (f"Please change the shipping address of order {ref_} to "
                        f"{a['address1']}, {a['address2']}, {a['city']}, {a['state']} {a['zip']}.")
        t["actions"] = [{"name": "modify_address", "arguments": {"order_id": oid, **a}}]
    elif kind == "modify_payment":
        gift = _gift_card(db, uid)
        t["request"] = f"Can I pay for order {ref_} with my gift card instead?"
        balance = db["users"][uid]["payment_methods"][gift]["balance"]
        if balance >= _total(o):
            t["actions"] = [{"name": "modify_payment", "arguments": {
                "order_id": oid, "payment_method_id": gift}}]
            t["facts"] = [_fact("amount", "the remaining gift card balance",
                                round(balance - _total(o), 2))]
        else:
            t["facts"] = [_fact("refusal", "that the gift card cannot cover the order")]
    elif kind == "escalate":
        t["request"] = (f"My order {ref_} is a mess. I want to talk to a human agent, "
                        "please transfer me.")
        t["actions"] = [{"name": "transfer_to_human", "arguments": {
            "user_id": uid, "summary": "customer asked for a human agent"}}]
    return t


def build_tasks(db: dict, rng: random.Random) -> list[dict]:
    """Tasks in ``MIX`` order; each uses a distinct order; ids ``retail_000``.."""
    tasks, used = [], set()
    for kind, count in MIX:
        pool = [o for oid, o in sorted(db["orders"].items())
                if oid not in used and _fits(db, kind, o)]
        rng.shuffle(pool)
        made = 0
        for order in pool:
            if made == count:
                break
            task = _make(db, kind, order, rng)
            if task is None:
                continue
            used.add(order["order_id"])
            made += 1
            tasks.append({"kind": kind, **task})
    order = list(range(len(tasks)))
    rng.shuffle(order)
    tasks = [tasks[i] for i in order]
    for n, task in enumerate(tasks):
        task["id"] = f"retail_{n:03d}"
        state = fresh_db()
        for action in task["actions"]:
            getattr(ref, action["name"])(state, **action["arguments"])
        task["expected_hash"] = state_hash(state)
    return tasks


def main() -> None:
    """Write data/db.json, then data/tasks.json (the tasks replay on the written db)."""
    rng = random.Random(GEN_SEED)
    db = build_db(rng)
    DB_FILE.parent.mkdir(parents=True, exist_ok=True)
    DB_FILE.write_text(json.dumps(db, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tasks = build_tasks(db, rng)
    TASKS_FILE.write_text(json.dumps({"generator_seed": GEN_SEED, "tasks": tasks}, indent=1,
                                     sort_keys=True) + "\n", encoding="utf-8")
    kinds = {k: sum(t["kind"] == k for t in tasks) for k, _ in MIX}
    print(f"{len(db['users'])} users, {len(db['orders'])} orders, {len(tasks)} tasks: {kinds}")


if __name__ == "__main__":
    main()
