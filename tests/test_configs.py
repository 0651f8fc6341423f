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
