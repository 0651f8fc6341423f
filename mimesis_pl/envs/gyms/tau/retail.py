"""A small own retail environment with tau-bench's retail tool names and result shapes (offline TauGym).

tau-bench (sierra-research/tau-bench) is not a dependency; offline, TauGym talks to this environment
instead (docs/decisions.md A54). Its tools keep tau-bench's names, arguments and result shapes:
lookups return a user id or a record as JSON text, writes return the updated order as JSON text,
mistakes return ``"Error: …"`` text (an observation, not a failure). The reward is tau-bench's rule:
1 when the database after the episode equals the database after replaying the task's reference
actions on a fresh copy, and every required output was said by the agent (case-insensitive, commas
removed); else 0. Its tasks (:data:`RETAIL_TASKS`) are our own, over our own database; their
numbers are not comparable with tau-bench's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Database = dict[str, dict[str, Any]]

RETAIL_DB: Database = {
    "users": {
        "ana_lima_1001": {
            "name": {"first_name": "Ana", "last_name": "Lima"},
            "email": "ana.lima@example.com",
            "address": {"city": "Springfield", "zip": "10001"},
            "payment_methods": {"credit_card_1001": {"source": "credit_card", "last_four": "4242"}},
            "orders": ["#W0000001", "#W0000002"],
        },
        "raj_iyer_2002": {
            "name": {"first_name": "Raj", "last_name": "Iyer"},
            "email": "raj.iyer@example.com",
            "address": {"city": "Riverton", "zip": "20002"},
            "payment_methods": {"gift_card_2002": {"source": "gift_card", "balance": 120.0}},
            "orders": ["#W0000003"],
        },
    },
    "products": {
        "1000000001": {
            "name": "Desk Lamp",
            "product_id": "1000000001",
            "variants": {
                "2000000001": {
                    "item_id": "2000000001",
                    "options": {"color": "black"},
                    "available": True,
                    "price": 35.5,
                },
                "2000000002": {
                    "item_id": "2000000002",
                    "options": {"color": "white"},
                    "available": True,
                    "price": 36.0,
                },
            },
        },
        "1000000002": {
            "name": "Kettle",
            "product_id": "1000000002",
            "variants": {
                "2000000003": {
                    "item_id": "2000000003",
                    "options": {"capacity": "1L"},
                    "available": True,
                    "price": 54.04,
                },
                "2000000004": {
                    "item_id": "2000000004",
                    "options": {"capacity": "2L"},
                    "available": False,
                    "price": 61.0,
                },
            },
        },
    },
    "orders": {
        "#W0000001": {
            "order_id": "#W0000001",
            "user_id": "ana_lima_1001",
            "status": "pending",
            "items": [{"name": "Kettle", "product_id": "1000000002", "item_id": "2000000003", "price": 54.04}],
            "payment_history": [
                {"transaction_type": "payment", "amount": 54.04, "payment_method_id": "credit_card_1001"}
            ],
        },
        "#W0000002": {
            "order_id": "#W0000002",
            "user_id": "ana_lima_1001",
            "status": "delivered",
            "items": [{"name": "Desk Lamp", "product_id": "1000000001", "item_id": "2000000001", "price": 35.5}],
            "payment_history": [
                {"transaction_type": "payment", "amount": 35.5, "payment_method_id": "credit_card_1001"}
            ],
        },
        "#W0000003": {
            "order_id": "#W0000003",
            "user_id": "raj_iyer_2002",
            "status": "delivered",
            "items": [{"name": "Desk Lamp", "product_id": "1000000001", "item_id": "2000000001", "price": 35.5}],
            "payment_history": [{"transaction_type": "payment", "amount": 35.5, "payment_method_id": "gift_card_2002"}],
        },
    },
}


def _err(text: str) -> str:
    return f"Error: {text}"


def _dump(record: Any) -> str:
    return json.dumps(record)


def find_user_id_by_email(db: Database, email: str) -> str:
    for user_id, user in db["users"].items():
        if user["email"].lower() == str(email).lower():
            return user_id
    return _err("user not found")


def find_user_id_by_name_zip(db: Database, first_name: str, last_name: str, zip: str) -> str:  # noqa: A002
    for user_id, user in db["users"].items():
        name = user["name"]
        if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (
            str(first_name).lower(),
            str(last_name).lower(),
            str(zip),
        ):
            return user_id
    return _err("user not found")


def get_user_details(db: Database, user_id: str) -> str:
    user = db["users"].get(user_id)
    return _dump(user) if user else _err("user not found")


def get_order_details(db: Database, order_id: str) -> str:
    order = db["orders"].get(order_id)
    return _dump(order) if order else _err("order not found")


def get_product_details(db: Database, product_id: str) -> str:
    product = db["products"].get(product_id)
    return _dump(product) if product else _err("product not found")


def list_all_product_types(db: Database) -> str:
    return json.dumps({p["name"]: pid for pid, p in db["products"].items()}, sort_keys=True)


def cancel_pending_order(db: Database, order_id: str, reason: str) -> str:
    order = db["orders"].get(order_id)
    if order is None:
        return _err("order not found")
    if order["status"] != "pending":
        return _err("non-pending order cannot be cancelled")
    if reason not in ("no longer needed", "ordered by mistake"):
        return _err("invalid reason")
    refund = sum(p["amount"] for p in order["payment_history"] if p["transaction_type"] == "payment")
    method = order["payment_history"][0]["payment_method_id"]
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].append({"transaction_type": "refund", "amount": refund, "payment_method_id": method})
    return _dump(order)


def _delivered_items(db: Database, order_id: str, item_ids: Sequence[str], payment_method_id: str) -> Any:
    order = db["orders"].get(order_id)
    if order is None:
        return _err("order not found")
    if order["status"] != "delivered":
        return _err("non-delivered order cannot be returned or exchanged")
    owned = [i["item_id"] for i in order["items"]]
    if not item_ids or any(owned.count(i) < list(item_ids).count(i) for i in item_ids):
        return _err("some item not found")
    if payment_method_id not in db["users"][order["user_id"]]["payment_methods"]:
        return _err("payment method not found")
    return order


def return_delivered_order_items(db: Database, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
    order = _delivered_items(db, order_id, item_ids, payment_method_id)
    if isinstance(order, str):
        return order
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return _dump(order)


def exchange_delivered_order_items(
    db: Database, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str
) -> str:
    order = _delivered_items(db, order_id, item_ids, payment_method_id)
    if isinstance(order, str):
        return order
    if len(item_ids) != len(new_item_ids):
        return _err("the number of items to be exchanged should match")
    difference = 0.0
    for old, new in zip(item_ids, new_item_ids, strict=True):
        item = next(i for i in order["items"] if i["item_id"] == old)
        variant = db["products"][item["product_id"]]["variants"].get(new)
        if variant is None or not variant["available"]:
            return _err(f"new item {new} not found or available")
        difference += variant["price"] - item["price"]
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = round(difference, 2)
    return _dump(order)


def transfer_to_human_agents(db: Database, summary: str) -> str:
    return "Transfer successful"


def think(db: Database, thought: str) -> str:
    return ""


TOOLS: dict[str, Callable[..., str]] = {
    f.__name__: f
    for f in (
        find_user_id_by_email,
        find_user_id_by_name_zip,
        get_user_details,
        get_order_details,
        get_product_details,
        list_all_product_types,
        cancel_pending_order,
        return_delivered_order_items,
        exchange_delivered_order_items,
        transfer_to_human_agents,
        think,
    )
}
_DESCRIPTIONS = {
    "find_user_id_by_email": "Find a user id by email.",
    "find_user_id_by_name_zip": "Find a user id by first name, last name and zip code.",
    "get_user_details": "Get the details of a user, including their orders and payment methods.",
    "get_order_details": "Get the status and details of an order.",
    "get_product_details": "Get the inventory details of a product (its variants, prices, availability).",
    "list_all_product_types": "List the name and product id of every product type.",
    "cancel_pending_order": "Cancel a pending order; reason is 'no longer needed' or 'ordered by mistake'.",
    "return_delivered_order_items": "Return some items of a delivered order, refunded to a payment method.",
    "exchange_delivered_order_items": "Exchange items of a delivered order for other variants of the same products.",
    "transfer_to_human_agents": "Transfer the user to a human agent, with a summary of the issue.",
    "think": "Think about something; changes nothing.",
}
_ARRAY = {"item_ids", "new_item_ids"}


def tool_specs() -> list[dict[str, Any]]:
    """OpenAI function schemas of the tools, as tau-bench's ``tools_info``."""
    import inspect

    specs = []
    for name, fn in TOOLS.items():
        params = [p for p in inspect.signature(fn).parameters if p != "db"]
        properties = {
            p: {"type": "array", "items": {"type": "string"}} if p in _ARRAY else {"type": "string"} for p in params
        }
        specs.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": _DESCRIPTIONS[name],
                    "parameters": {"type": "object", "properties": properties, "required": params},
                },
            }
        )
    return specs


def run_tool(db: Database, name: str, kwargs: Mapping[str, Any]) -> str:
    """One tool call on ``db`` (mutated); unknown tools and bad arguments are error observations."""
    fn = TOOLS.get(name)
    if fn is None:
        return _err(f"unknown tool {name}")
    try:
        return fn(db, **dict(kwargs))
    except TypeError as err:
        return _err(f"bad arguments for {name}: {err}")


# Our own tasks over RETAIL_DB: the user's instruction, what the agent first hears, the reference actions
# (replayed for the reward) and the outputs the agent must say.
RETAIL_TASKS: tuple[dict[str, Any], ...] = (
    {
        "instruction": "Your name is Ana Lima and your zip code is 10001. You want to cancel your pending order "
        "#W0000001 because you no longer need it. If asked, confirm with yes.",
        "opening": "Hi, I'd like to cancel an order I placed recently.",
        "actions": [
            {"name": "cancel_pending_order", "kwargs": {"order_id": "#W0000001", "reason": "no longer needed"}}
        ],
        "outputs": [],
    },
    {
        "instruction": "Your email is raj.iyer@example.com. You want to return the desk lamp of order #W0000003 "
        "and get the refund on your gift card gift_card_2002. If asked, confirm with yes.",
        "opening": "Hello, I want to return something I received.",
        "actions": [
            {
                "name": "return_delivered_order_items",
                "kwargs": {"order_id": "#W0000003", "item_ids": ["2000000001"], "payment_method_id": "gift_card_2002"},
            }
        ],
        "outputs": [],
    },
    {
        "instruction": "Your name is Ana Lima and your zip code is 10001. You only want to know how much the kettle "
        "in your order #W0000001 cost. Do not change anything.",
        "opening": "Hi, could you tell me how much I paid for an item?",
        "actions": [],
        "outputs": ["54.04"],
    },
)


def replayed_database(task: Mapping[str, Any]) -> Database:
    """A fresh database with the task's reference actions applied."""
    db = copy.deepcopy(RETAIL_DB)
    for action in task["actions"]:
        run_tool(db, action["name"], action["kwargs"])
    return db


def said_outputs(outputs: Sequence[str], agent_texts: Sequence[str]) -> bool:
    """tau-bench's output check: each output, lower-cased, appears in some agent message lower-cased with its
    commas removed (the output's own commas are kept, so an output with a comma never matches, as in tau-bench)."""
    said = [t.lower().replace(",", "") for t in agent_texts]
    return all(any(o.lower() in t for t in said) for o in outputs)


def retail_reward(db: Database, task: Mapping[str, Any], agent_texts: Sequence[str]) -> float:
    return float(db == replayed_database(task) and said_outputs(task["outputs"], agent_texts))
