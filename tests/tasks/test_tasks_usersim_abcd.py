"""usersim-behavior on ABCD files in the real structure: maps, action table, named errors, B3/B10, the row builder."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path

import pytest
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.runner import run_row
from mimesis_pl.tasks.usersim_behavior.abcd import (
    ACTION_REQUIRED_FIELDS,
    FLOW_MAP,
    SUBFLOW_MAP,
    AbcdData,
    AbcdError,
)
from mimesis_pl.tasks.usersim_behavior.behaviors import BEHAVIORS, Scene, get_behavior
from mimesis_pl.tasks.usersim_behavior.builder import BuildSettings, build_rows, load_conversations

REAL = Path(__file__).parent / "abcd_real_format"

#: The reference's covered subflows and guideline titles, per flow, typed from its table (46 entries).
TITLES = {
    "Product Defect": {
        "refund_initiate": "Initiate Refund",
        "refund_update": "Update Refund",
        "refund_status": "Refund Status",
        "return_stain": "Return Due to Stain",
        "return_color": "Return Due to Color",
        "return_size": "Return Due to Size",
    },
    "Order Issue": {
        "status_mystery_fee": "Status Mystery Fee",
        "status_delivery_time": "Status Delivery Time",
        "status_payment_method": "Status Payment Method",
        "status_quantity": "Status Quantity",
        "manage_upgrade": "Manage Upgrade",
        "manage_downgrade": "Manage Downgrade",
        "manage_create": "Manage Create",
        "manage_cancel": "Manage Cancel",
    },
    "Account Access": {
        "recover_username": "Recover Username",
        "recover_password": "Recover Password",
        "reset_2fa": "Reset Two-Factor Auth",
    },
    "Troubleshoot Site": {
        "credit_card": "Invalid Credit Card",
        "shopping_cart": "Cart Not Updating",
        "search_results": "Search Not Working",
        "slow_speed": "Website Too Slow",
    },
    "Manage Account": {
        "status_service_added": "Status Service Added",
        "status_service_removed": "Status Service Removed",
        "status_shipping_question": "Status Shipping Question",
        "status_credit_missing": "Status Credit Missing",
        "manage_change_address": "Manage Change Address",
        "manage_change_name": "Manage Change Name",
        "manage_change_phone": "Manage Change Phone",
        "manage_payment_method": "Manage Payment Method",
    },
    "Purchase Dispute": {
        "bad_price_competitor": "Bad Price Competitor",
        "bad_price_yesterday": "Bad Price Yesterday",
        "out_of_stock_general": "Out-of-Stock General",
        "out_of_stock_one_item": "Out-of-Stock One Item",
        "promo_code_invalid": "Promo Code Invalid",
        "promo_code_out_of_date": "Promo Code Out of Date",
        "mistimed_billing_already_returned": "Mistimed Billing Already Returned",
        "mistimed_billing_never_bought": "Mistimed Billing Never Bought",
    },
    "Shipping Issue": {
        "status": "Shipping Status",
        "manage": "Manage Shipping",
        "missing": "Missing Item",
        "cost": "Shipping Cost",
    },
    "Subscription Inquiry": {
        "status_due_amount": "Status Due Amount",
        "status_due_date": "Status Due Date",
        "manage_pay_bill": "Manage Pay Bill",
        "manage_extension": "Manage Extension",
        "manage_dispute_bill": "Manage Dispute Bill",
    },
}
FLOWS = {v: k for k, v in FLOW_MAP.items()}


def test_the_real_format_files_load_and_every_subflow_title_resolves_under_its_flow():
    data = AbcdData.load(REAL)
    assert len(data.kb) == 55 and sum(len(f["subflows"]) for f in data.guidelines.values()) == 55
    assert sum(len(t) for t in TITLES.values()) == len(SUBFLOW_MAP) == 46
    for flow_title, subflows in TITLES.items():
        for subflow, title in subflows.items():
            assert SUBFLOW_MAP[subflow] == title, subflow
            assert data.spec(FLOWS[flow_title], subflow) is data.guidelines[flow_title]["subflows"][title]
            assert data.covered(FLOWS[flow_title], subflow) and data.render_policy(FLOWS[flow_title], subflow)
    assert FLOW_MAP["single_item_query"] == "Single-Item Query" and len(FLOW_MAP) == 10
    goal = data.goal("product_defect", "refund_initiate")
    assert goal == "initiate refund (this store handles that under refunds and returns)"


def test_the_action_table_is_the_reference_s_full_table():
    # the spec's heading says 32 keys; its table and the reference's code list 31, which is what we hold
    assert len(ACTION_REQUIRED_FIELDS) == 31
    kb_actions = {a for actions in AbcdData.load(REAL).kb.values() for a in actions}
    assert kb_actions == set(ACTION_REQUIRED_FIELDS)  # the fixture's kb uses every one of them
    for action in ("promo-code", "update-question", "ask-the-oracle", "select-faq", "search-faq"):
        assert ACTION_REQUIRED_FIELDS[action] == []
    for topic in ("boots", "shirt", "jeans", "jacket", "pricing", "membership", "timing", "policy"):
        assert ACTION_REQUIRED_FIELDS[f"search-{topic}"] == []
    assert ACTION_REQUIRED_FIELDS["verify-identity"] == ["customer_name", "account_id", "zip_code"]
    assert ACTION_REQUIRED_FIELDS["send-link"] == ["email"]


def test_required_fields_and_prefix_checks_on_the_real_structure():
    data = AbcdData.load(REAL)
    assert data.required_fields("return_size")[:4] == ["customer_name", "username", "email", "order_id"]
    assert data.required_fields("status")[:6] == [
        "customer_name",
        "account_id",
        "zip_code",
        "username",
        "email",
        "order_id",
    ]
    scenario = load_conversations(REAL / "abcd_v1.1.json", "train")[0]["scenario"]
    prefix = data.verification_prefix(scenario, "shipping_issue", "status")
    assert prefix[0] == ("user", "hi, i need help with shipping status") and prefix[2] == ("user", "crystal minh")
    assert prefix[4][1] == "AB12CD34, 10950, cminh730, cminh@email.com, 3348917502"
    assert data.verification_prefix(scenario, "troubleshoot_site", "credit_card") == []
    assert data.has_hard_limit("product_defect", "return_size") and not data.has_hard_limit(
        "account_access", "reset_2fa"
    )


def test_an_unmapped_or_missing_subflow_is_a_named_error(tmp_path, tiny_tokenizer):
    data = AbcdData.load(REAL)
    with pytest.raises(AbcdError, match="subflow 'jeans_how_1' is not one of the 46 policy-bearing"):
        data.spec("single_item_query", "jeans_how_1")
    with pytest.raises(AbcdError, match="subflow 'status_active' is not one of the 46"):
        data.spec("subscription_inquiry", "status_active")
    with pytest.raises(AbcdError, match="no subflow 'Initiate Refund' .*under flow 'Order Issue'"):
        data.spec("order_issue", "refund_initiate")  # looked up under the row's flow
    with pytest.raises(AbcdError, match="flow 'returns' is not an ABCD flow"):
        data.spec("returns", "return_size")
    broken = tmp_path / "abcd"
    shutil.copytree(REAL, broken)
    kb = json.loads((broken / "kb.json").read_text())
    kb["return_size"].append("teleport")
    (broken / "kb.json").write_text(json.dumps(kb))
    with pytest.raises(AbcdError, match=r"kb.json: subflow 'return_size' has unknown action\(s\) \['teleport'\]"):
        AbcdData.load(broken)
    (broken / "kb.json").unlink()
    with pytest.raises(AbcdError, match="kb.json is missing"):
        AbcdData.load(broken)
    # a row naming an unmapped subflow is a task_error that names it
    ctx = make_context(tiny_tokenizer, lambda p, k: "hi")
    ctx.options["usersim-behavior"] = {"abcd_dir": str(REAL)}
    row = {
        "data_source": "usersim-behavior",
        "extra_info": {
            "index": 1,
            "flow": "single_item_query",
            "subflow": "jeans_how_1",
            "scenario": "{}",
            "behavior_ids": "[]",
            "kwargs": "[]",
        },
    }
    result = asyncio.run(run_row(row, ctx, "g", "g-0", None))
    assert result.status == "task_error" and "jeans_how_1" in result.error


def scene(subflow="return_size", flow="product_defect", index=0):
    data = AbcdData.load(REAL)
    return Scene(data, flow, subflow, load_conversations(REAL / "abcd_v1.1.json", "train")[index]["scenario"])


def test_b3_clarification_noncooperation_needs_two_askable_fields_and_its_rule_hand_worked():
    b3 = get_behavior("clarification_noncooperation")
    assert b3.applicable(scene())  # name, username, email, order ID, membership, address: all askable
    p2 = load_conversations(REAL / "abcd_v1.1.json", "train")[4]["scenario"]  # only a name on file
    assert not b3.applicable(Scene(AbcdData.load(REAL), "purchase_dispute", "out_of_stock_general", p2))
    assert not b3.applicable(Scene(AbcdData.load(REAL), "troubleshoot_site", "credit_card", p2))  # nothing to ask
    kwargs = b3.derive_kwargs(scene(), random.Random(0))
    assert 1 <= len(kwargs["withheld_fields"]) <= 2 and set(kwargs["withheld_fields"]) <= set(scene().askable())
    public = [
        ("agent", "Could I have your username?"),
        ("user", "why do you need that"),  # withheld
        ("agent", "I need the username to continue. What is it?"),
        ("user", "fine, cminh730"),  # given
        ("agent", "And your email address?"),  # asks for a field not withheld: not counted
        ("user", "cminh@email.com"),
    ]
    assert b3.check_rule(public, scene(), {"withheld_fields": ["username"]}) == 0.5
    assert b3.check_rule(public, scene(), {"withheld_fields": ["order_id"]}) is None  # never asked


def test_b10_thread_abandonment_rule_hand_worked():
    b10 = get_behavior("unresolved_thread_abandonment")
    s = scene()
    assert b10.check_rule([("user", "my jeans are too small"), ("agent", "Your name?")], s, {}) == 0.0
    assert b10.check_rule([("user", "ugh forget it")], s, {}) == 1.0  # leaves with required values untold
    everything = "crystal minh cminh730 cminh@email.com 3348917502 bronze 6821 lincoln ave  brighton, mi 10950"
    assert b10.check_rule([("user", everything), ("user", "never mind, i'm done")], s, {}) == 0.5
    assert b10.check_rule([], s, {}) is None


def test_the_row_builder_makes_reference_shaped_rows_that_run(tiny_tokenizer):
    data = AbcdData.load(REAL)
    rows, report = build_rows(data, load_conversations(REAL / "abcd_v1.1.json", "train"), BuildSettings(seed=3))
    assert report.skipped == {"uncovered:jeans_how_1": 1}
    assert report.rows["control"] == 4 and report.rows["clarification_noncooperation"] == 2  # return_size, status
    assert report.rows["infeasibility_persistence"] == 1  # only return_size has a hard limit among the four
    again, _ = build_rows(data, load_conversations(REAL / "abcd_v1.1.json", "train"), BuildSettings(seed=3))
    assert again == rows
    info = rows[0]["extra_info"]
    assert isinstance(info["scenario"], str) and isinstance(info["behavior_ids"], str)
    assert json.loads(info["scenario"])["subflow"] == info["subflow"] and info["turn_budget"] == 8
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))
    b4 = next(r for r in rows if json.loads(r["extra_info"]["behavior_ids"]) == ["infeasibility_persistence"])
    assert json.loads(b4["extra_info"]["kwargs"]) == [{"blocked_action": "return due to size"}]
    ctx = make_context(tiny_tokenizer, lambda p, k: "hi, my jeans are too small", enable_think=False)
    ctx.options["usersim-behavior"] = {"abcd_dir": str(REAL)}
    for r in [rows[0], b4, next(r for r in rows if r["extra_info"]["behavior_ids"] == "[]")]:
        r["extra_info"]["turn_budget"] = 1
        result = asyncio.run(get_task("usersim-behavior").run(r, ctx, group_id="g", gen_uid="0"))
        assert result.status == "ok", result


def test_data_usersim_rows_command_writes_the_rows(tmp_path, capsys):
    from mimesis_pl.data.commands import main

    out = tmp_path / "rows.jsonl"
    argv = ["usersim-rows", "--abcd-dir", str(REAL), "--conversations", str(REAL / "abcd_v1.1.json"), "--out", str(out)]
    assert main(argv + ["--split", "dev"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and {r["extra_info"]["subflow"] for r in rows} == {"status_delivery_time"}
    assert "skipped scenarios: 0" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(argv + ["--split", "dev"])  # exists: refuse without --overwrite
    with pytest.raises(SystemExit):
        main(argv + ["--split", "validation", "--overwrite"])  # no such split
    assert "no list of conversations under 'validation'" in capsys.readouterr().err
    assert len(BEHAVIORS) == 13
