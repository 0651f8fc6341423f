"""One chat-model protocol (``llm.ChatModel``) for every caller: the tasks' partners and the suites' models, served or
scripted, and a failed call raises instead of returning ``None`` (issue #38)."""

from __future__ import annotations

import asyncio

import pytest

from mimesis_pl.eval.simulator.models import ScriptedChatModel, ServedChatModel, SuiteModel, build_chat_model
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import ChatModel, RoleCallFailed, ScriptedChatSettings, ServedChatSettings
from mimesis_pl.tasks.base import PartnerUnavailable
from mimesis_pl.tasks.clients import OpenAIChatModel, ScriptedPartner
from mimesis_pl.tasks.dialogue import partner_reply


def test_every_chat_model_of_the_package_is_the_one_protocol():
    served = ServedChatSettings(url="http://127.0.0.1:9/v1", max_tokens=8)
    models = [
        OpenAIChatModel(served, "partner"),
        ScriptedPartner(),
        ServedChatModel(served, JudgeFailure),
        build_chat_model(ScriptedChatSettings(max_tokens=8), "judge", JudgeFailure, lambda *a: "ok"),
    ]
    assert all(isinstance(m, ChatModel) for m in models)
    assert all(isinstance(m, SuiteModel) for m in models[2:])


def test_a_sampling_field_left_out_is_the_models_own():
    scripted = ScriptedChatModel("m", lambda messages, seed, temperature: f"t={temperature}", temperature=0.3)
    assert asyncio.run(scripted.complete([{"role": "user", "content": "x"}])) == "t=0.3"
    assert asyncio.run(scripted.complete([{"role": "user", "content": "x"}], temperature=1.0)) == "t=1.0"
    client = OpenAIChatModel(ServedChatSettings(url="http://h/v1", temperature=0.2, max_tokens=5), "partner")
    assert client.body([], temperature=None)["temperature"] == 0.2
    assert client.body([], temperature=0.9, max_tokens=7, seed=3) | {"messages": []} == {
        "model": "scripted",
        "messages": [],
        "temperature": 0.9,
        "max_completion_tokens": 7,
        "seed": 3,
    }


def test_a_partner_that_is_down_raises_and_the_task_reads_it_as_unavailable():
    class Down:
        async def complete(self, messages, **sampling):
            raise RoleCallFailed("partner (m) failed after 3 attempts: connection refused")

    class Ctx:
        partner = Down()

    with pytest.raises(PartnerUnavailable, match=r"partner call failed after retries \(partner \(m\) failed after 3"):
        asyncio.run(partner_reply(Ctx(), [{"role": "user", "content": "hi"}]))
