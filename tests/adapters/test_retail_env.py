"""The retail environment: shipped data, reference tools, the tool box, the scorer's rules."""

from __future__ import annotations

import json

import pytest

from capevolve_adapters.retail import reference_tools as ref
from capevolve_adapters.retail import store
from capevolve_adapters.retail.generate import GEN_SEED, build_db, build_tasks
from capevolve_adapters.retail.toolbox import ToolBox, tool_schemas


def _order(db, status, source=None):
    for oid, order in sorted(db["orders"].items()):
        method = db["users"][order["user_id"]]["payment_methods"][
            order["payment_history"][0]["payment_method_id"]]
        if order["status"] == status and (source is None or method["source"] == source):
            return oid
    raise AssertionError(f"no {status} order paid by {source}")


def test_shipped_data_is_what_the_generator_writes():
    """Regenerating from GEN_SEED gives exactly the shipped db.json and tasks.json."""
    import random

    rng = random.Random(GEN_SEED)
    db = build_db(rng)
    assert db == json.loads(store.DB_FILE.read_text())
    shipped = json.loads(store.TASKS_FILE.read_text())["tasks"]
    assert build_tasks(db, rng) == shipped


def test_tasks_are_many_unique_and_mixed(retail_tasks):
    """~120 tasks with unique ids, every kind present, gold data only in target."""
    assert 100 <= len(retail_tasks) <= 150
    kinds = {t.metadata["kind"] for t in retail_tasks.values()}
    assert {"info", "cancel", "cancel_refuse", "return", "exchange", "escalate",
            "wrong_owner", "modify_payment", "modify_address"} <= kinds
    task = next(iter(retail_tasks.values()))
    assert set(task.input) == {"user_id", "request"}
    assert set(task.target) == {"actions", "facts", "expected_hash"}


def test_gold_actions_replay_to_the_expected_hash(retail_tasks):
    """Replaying each task's gold actions with the reference tools gives its stored hash."""
    for task in retail_tasks.values():
        db = store.fresh_db()
        for action in task.target["actions"]:
            getattr(ref, action["name"])(db, **action["arguments"])
        assert store.state_hash(db) == task.target["expected_hash"], task.id


def test_cancel_refunds_a_gift_card_and_refuses_delivered_orders():
    """cancel_order credits a gift card back and refuses a non-pending order."""
    db = store.fresh_db()
    oid = _order(db, "pending", "gift_card")
    order = db["orders"][oid]
    method = order["payment_history"][0]["payment_method_id"]
    before = db["users"][order["user_id"]]["payment_methods"][method]["balance"]
    result = ref.cancel_order(db, oid, "no longer needed")
    after = db["users"][order["user_id"]]["payment_methods"][method]["balance"]
    assert after == pytest.approx(before + result["refund_amount"])
    with pytest.raises(ValueError, match="cannot be cancelled"):
        ref.cancel_order(db, _order(db, "delivered"), "no longer needed")


def test_state_hash_tracks_only_changes():
    """Two fresh copies hash equal; a write changes the hash and shows in changed_records."""
    a, b = store.fresh_db(), store.fresh_db()
    assert store.state_hash(a) == store.state_hash(b)
    ref.transfer_to_human(a, "U001", "help")
    assert store.state_hash(a) != store.state_hash(b)
    assert list(store.changed_records(a, b)) == ["transfers"]


def test_toolbox_turns_unknown_tools_and_bad_arguments_into_errors():
    """An unknown tool, bad arguments or a refusal is an error the agent reads, not a raise."""
    box = ToolBox(ref, store.fresh_db())
    unknown = box.call("delete_everything", {})
    assert not unknown.ok and "unknown tool 'delete_everything'" in unknown.text()
    bad = box.call("get_user", {"user": "U001"})
    assert not bad.ok and bad.error.startswith("bad arguments for get_user")
    refused = box.call("calculate", {"expression": "__import__('os')"})
    assert not refused.ok
    assert [c.name for c in box.calls] == ["delete_everything", "get_user", "calculate"]
    assert box.calls[0].mutates is None and box.calls[2].mutates is False
    assert all(m["role"] == "tool" for m in box.messages)


def test_tool_schemas_describe_every_tool():
    """Schemas cover read and write tools with their required parameters (db excluded)."""
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas(ref)}
    assert set(schemas) == set(ref.READ_TOOLS) | set(ref.WRITE_TOOLS)
    params = schemas["return_items"]["parameters"]
    assert params["required"] == ["order_id", "item_ids", "payment_method_id"]
    assert params["properties"]["item_ids"] == {"type": "array", "items": {"type": "string"}}
    assert "db" not in params["properties"]
