"""Every YAML under configs/ parses against the classes it names (like litgpt's config-hub test)."""

from __future__ import annotations

import pytest

from mimesis_pl.cli import MimesisCLI

from .conftest import REPO

CONFIGS = sorted((REPO / "configs").rglob("*.yaml"))
TINY = [p for p in CONFIGS if p.parent.name == "tiny"]


class ParseOnlyCLI(MimesisCLI):
    def instantiate_classes(self) -> None:  # validate types and class paths, build nothing
        pass


def test_there_are_configs():
    assert TINY, "configs/tiny/ must hold CPU-sized variants"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_config_parses_and_documents_its_command(path, monkeypatch):
    monkeypatch.chdir(REPO)
    text = path.read_text()
    assert text.startswith("#"), f"{path} must start with a comment giving the command to run it"
    assert "mimesis-pl " in text.split("\n\n")[0] or "mimesis-pl " in "".join(text.splitlines(True)[:6])
    cli = ParseOnlyCLI(args=["--config", str(path)], run=False)
    assert cli.config["model"]["class_path"].startswith("mimesis_pl.")
    assert cli.config["data"]["class_path"].startswith("mimesis_pl.")


@pytest.mark.parametrize("path", TINY, ids=lambda p: p.name)
def test_tiny_config_instantiates(path, monkeypatch):
    monkeypatch.chdir(REPO)
    cli = MimesisCLI(args=["--config", str(path)], run=False)
    assert cli.model is not None and cli.datamodule is not None


def test_bad_choices_fail_at_parse_time_and_help_lists_them(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    csd = ["--config", "configs/tiny/agent_csd.yaml"]
    # the estimator is checked against the registry (users may register their own, docs/extending.md): at set-up
    with pytest.raises(ValueError, match=r"csd.estimator: unknown CSD estimator 'surrogate'; registered: \['sdar'"):
        MimesisCLI(args=[*csd, "--model.init_args.csd.estimator", "surrogate"], run=False)
    distill = ParseOnlyCLI(args=[*csd, "--model.init_args.csd.estimator", "distill"], run=False)
    assert distill.config["model"]["init_args"]["csd"]["estimator"] == "distill"
    with pytest.raises(SystemExit):
        ParseOnlyCLI(args=[*csd, "--model.help", "mimesis_pl.modules.AgentCSD"], run=False)
    help_text = capsys.readouterr().out
    for listed in (
        "{token-mean,seq-mean-token-sum,seq-mean-token-mean}",
        "{prefix_cache,packed}",
        "{prospective,corrective}",
        "mimesis_pl.rollout.engines.VLLMEngineSettings",
        "mimesis_pl.rollout.OpenAIUserSettings",
        "mimesis_pl.rollout.OpenAICoachSettings",
    ):
        assert listed in help_text, listed
    assert "gate sharpness of ``sdar``" in help_text  # each key's docstring is its help


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_a_config_names_the_policy_weights_once(path):
    import yaml

    init = yaml.safe_load(path.read_text())["model"].get("init_args", {})
    engine = init.get("rollout", {}).get("engine", {})
    if "policy" in init:  # engines that load weights take the policy's model path
        assert "model_path" not in engine.get("init_args", {}), path
