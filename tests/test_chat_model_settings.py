"""One settings type for every chat-model role, chosen by class_path, with each family's defaults (docs/decisions.md
D16, D32); the old ``kind:`` spelling fails naming the new one."""

from __future__ import annotations

import pytest

from mimesis_pl.cli import MimesisCLI, main
from mimesis_pl.envs.gyms.judging import judge_settings
from mimesis_pl.eval.simulator import models as suite_models
from mimesis_pl.failures import JudgeFailure
from mimesis_pl.llm import (
    REFERENCE_ROLE,
    ChatModelSettings,
    ScriptedChatSettings,
    ServedChatSettings,
    reference_role,
)
from mimesis_pl.tasks.clients import OpenAIChatModel, RoleSettings

from .conftest import REPO


class ParseOnlyCLI(MimesisCLI):
    def instantiate_classes(self) -> None:
        pass


def test_both_families_use_the_one_type():
    assert suite_models.ChatModelSettings is ChatModelSettings
    roles = RoleSettings()
    assert {type(roles.judge), type(roles.partner), type(roles.support_agent)} == {ScriptedChatSettings}
    served = judge_settings({"class_path": "ServedChatSettings", "init_args": {"url": "http://j/v1"}}, where="gym")
    assert type(served) is ServedChatSettings and isinstance(served, ChatModelSettings)


def test_simulator_rl_roles_and_gym_judges_start_from_the_reference_judge_client():
    expected = {"model": "gpt-5-5", "temperature": 0.0, "max_tokens": None, "timeout_s": 300.0, "max_retries": 5}
    for settings in (
        RoleSettings().judge,
        reference_role(),
        judge_settings(
            {"class_path": "mimesis_pl.llm.ServedChatSettings", "init_args": {"url": "http://j/v1"}}, where="g"
        ),
    ):
        assert {k: getattr(settings, k) for k in expected} == expected
        assert settings.retry_backoff_s == 1.0
    assert reference_role(temperature=0.3).temperature == 0.3 and REFERENCE_ROLE["max_retries"] == 5


def test_the_suites_keep_their_defaults():
    s = ScriptedChatSettings()
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
        suite_models.build_chat_model(ScriptedChatSettings(max_tokens=None), "judge", JudgeFailure, lambda *a: "x")
    assert (
        suite_models.build_chat_model(ScriptedChatSettings(), "judge", JudgeFailure, lambda *a: "x").name
        == "scripted:scripted"
    )


def test_url_and_base_url_are_one_address():
    assert ServedChatSettings(url="http://h/v1").base_url == "http://h/v1"
    assert ServedChatSettings(base_url="http://h/v1").url == "http://h/v1"
    assert ServedChatSettings(base_url="http://h/v1/", url="http://h/v1").base_url == "http://h/v1/"
    with pytest.raises(ValueError, match="give base_url or url, not two addresses"):
        ServedChatSettings(base_url="http://a/v1", url="http://b/v1")
    with pytest.raises(ValueError, match=r"judge: ServedChatSettings needs url: http\(s\)://HOST/v1 \(as base_url"):
        ServedChatSettings(url="localhost:8000").check("judge")


def test_a_partial_yaml_role_keeps_the_family_defaults(monkeypatch):
    """A YAML ``judge:`` that sets only the address keeps the reference's judge defaults, not the class's."""
    monkeypatch.chdir(REPO)
    args = ["--config", "configs/tiny/simulator_rl.yaml"]
    args += [
        "--model.init_args.roles.judge",
        '{"class_path": "ServedChatSettings", "init_args": {"url": "http://j/v1"}}',
    ]
    cli = ParseOnlyCLI(args=args, run=False)
    judge = cli.config["model"]["init_args"]["roles"]["judge"]
    fields = judge["init_args"]
    assert (judge["class_path"], fields["url"], fields["max_retries"], fields["timeout_s"], fields["temperature"]) == (
        "mimesis_pl.llm.ServedChatSettings",
        "http://j/v1",
        5,
        300.0,
        0.0,
    )


def test_the_simulator_rl_client_sends_the_fields_both_families_share():
    settings = reference_role(
        ServedChatSettings, url="http://j/v1", max_tokens=64, enable_thinking=False, extra_body={"top_p": 0.9}
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


OLD_JUDGE = (
    "model.init_args.roles.judge: 'kind: openai' was replaced by a class_path; write model.init_args.roles.judge: "
)


def test_an_old_kind_spelling_fails_naming_the_class_path_to_write(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    old = (
        (REPO / "configs/tiny/simulator_rl.yaml")
        .read_text()
        .replace("judge:     # a share", "judge: {kind: openai, url: http://j/v1}\n      old_judge:     # a share")
    )
    config = tmp_path / "old.yaml"
    config.write_text(old)
    assert main(["fit", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{config}: {OLD_JUDGE}{{class_path: mimesis_pl.llm.ServedChatSettings, init_args: {{url: http://j/v1}}}}"
        in err
    )
    flag = ["fit", "--config", "configs/tiny/simulator_rl.yaml", "--model.init_args.roles.judge", "{kind: scripted}"]
    assert main(flag) == 2
    assert "'kind: scripted' was replaced by a class_path" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"TurtleGym.judge: 'kind: openai' was replaced .*ServedChatSettings"):
        judge_settings({"kind": "openai", "url": "http://j/v1"}, where="TurtleGym")
    with pytest.raises(TypeError):
        ServedChatSettings(kind="openai")  # type: ignore[call-arg]


def test_a_gym_judge_by_full_class_path_keeps_the_reference_defaults_and_its_options_as_written(monkeypatch):
    """jsonargparse filled ServedChatSettings' own defaults (model 'scripted', temperature 0.7, 2 retries) into a
    ``class_path`` mapping under an ``Any``-typed ``gym_options``; the field is ``dict[str, dict]`` so it does not."""
    monkeypatch.chdir(REPO)
    judge = "{class_path: mimesis_pl.llm.ServedChatSettings, init_args: {url: http://127.0.0.1:9/v1}}"
    args = ["--config", "configs/tiny/agent_grpo.yaml"]
    args += ["--model.init_args.rollout.episode.gym_options", f"{{TurtleGym: {{judge: {judge}}}}}"]
    cli = ParseOnlyCLI(args=args, run=False)
    options = cli.config["model"]["init_args"]["rollout"]["episode"]["gym_options"]
    written = options["TurtleGym"]["judge"]
    assert dict(written["init_args"]) == {"url": "http://127.0.0.1:9/v1"}
    settings = judge_settings(
        {"class_path": written["class_path"], "init_args": dict(written["init_args"])}, where="TurtleGym"
    )
    assert (settings.model, settings.temperature, settings.max_retries, settings.timeout_s) == (
        "gpt-5-5",
        0.0,
        5,
        300.0,
    )
