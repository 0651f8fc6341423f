"""One settings type for every served chat-model role, with each family's defaults (docs/decisions.md D16)."""

from __future__ import annotations

import pytest

from mimesis_pl.cli import MimesisCLI
from mimesis_pl.envs.gyms.judging import judge_settings
from mimesis_pl.eval.simulator import models as suite_models
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import REFERENCE_ROLE, ChatModelSettings, reference_role
from mimesis_pl.tasks import clients
from mimesis_pl.tasks.clients import OpenAIChatModel, RoleSettings

from .conftest import REPO


class ParseOnlyCLI(MimesisCLI):
    def instantiate_classes(self) -> None:
        pass


def test_both_families_use_the_one_type():
    assert suite_models.ChatModelSettings is ChatModelSettings
    roles = RoleSettings()
    assert {type(roles.judge), type(roles.partner), type(roles.support_agent)} == {ChatModelSettings}
    assert type(judge_settings({"kind": "openai", "url": "http://j/v1"}, where="gym")) is ChatModelSettings


def test_simulator_rl_roles_and_gym_judges_start_from_the_reference_judge_client():
    expected = {"model": "gpt-5-5", "temperature": 0.0, "max_tokens": None, "timeout_s": 300.0, "max_retries": 5}
    for settings in (
        RoleSettings().judge,
        clients.EndpointSettings(),
        judge_settings({"kind": "openai", "url": "http://j/v1"}, where="gym"),
    ):
        assert {k: getattr(settings, k) for k in expected} == expected
        assert settings.retry_backoff_s == 1.0
    assert reference_role(temperature=0.3).temperature == 0.3 and REFERENCE_ROLE["max_retries"] == 5


def test_the_suites_keep_their_defaults():
    s = ChatModelSettings()
    assert (s.kind, s.model, s.temperature, s.max_tokens, s.timeout_s, s.max_retries, s.retry_backoff_s) == (
        "scripted",
        "scripted",
        0.7,
        1024,
        120.0,
        2,
        0.5,
    )


def test_a_suite_role_needs_a_token_cap():
    with pytest.raises(ValueError, match="judge.max_tokens must be set"):
        suite_models.build_chat_model(ChatModelSettings(max_tokens=None), "judge", JudgeFailure, lambda *a: "x")
    assert (
        suite_models.build_chat_model(ChatModelSettings(), "judge", JudgeFailure, lambda *a: "x").name
        == "scripted:scripted"
    )


def test_url_and_base_url_are_one_address():
    assert ChatModelSettings(url="http://h/v1").base_url == "http://h/v1"
    assert ChatModelSettings(base_url="http://h/v1").url == "http://h/v1"
    assert ChatModelSettings(base_url="http://h/v1/", url="http://h/v1").base_url == "http://h/v1/"
    with pytest.raises(ValueError, match="give base_url or url, not two addresses"):
        ChatModelSettings(base_url="http://a/v1", url="http://b/v1")
    with pytest.raises(ValueError, match=r"judge: kind 'openai' needs url: http\(s\)://HOST/v1 \(as base_url or url\)"):
        ChatModelSettings(kind="openai", url="localhost:8000").check("judge")


def test_a_partial_yaml_role_keeps_the_family_defaults(monkeypatch):
    """A YAML ``judge:`` that sets only the address keeps the reference's judge defaults, not the class's."""
    monkeypatch.chdir(REPO)
    args = ["--config", "configs/tiny/simulator_rl.yaml"]
    args += ["--model.init_args.roles", '{"judge": {"kind": "openai", "url": "http://j/v1"}}']
    cli = ParseOnlyCLI(args=args, run=False)
    judge = cli.config["model"]["init_args"]["roles"]["judge"]
    assert (judge["kind"], judge["url"], judge["max_retries"], judge["timeout_s"], judge["temperature"]) == (
        "openai",
        "http://j/v1",
        5,
        300.0,
        0.0,
    )


def test_the_simulator_rl_client_sends_the_fields_both_families_share():
    settings = reference_role(
        kind="openai", url="http://j/v1", max_tokens=64, enable_thinking=False, extra_body={"top_p": 0.9}
    )
    body = OpenAIChatModel(settings, "judge").body([{"role": "user", "content": "hi"}], json_mode=True)
    assert body == {
        "model": "gpt-5-5",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "max_completion_tokens": 64,
        "top_p": 0.9,
        "chat_template_kwargs": {"enable_thinking": False},
        "response_format": {"type": "json_object"},
    }
