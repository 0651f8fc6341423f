"""Shared by the outside-package tests: every test starts from the package's own registries."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fresh_registries(monkeypatch):
    """Registrations a test makes (gyms, tasks, estimators) end with it: each registry is a copy for the test."""
    from mimesis_pl.envs import registry as gyms
    from mimesis_pl.rl import advantage_estimators, losses
    from mimesis_pl.tasks import registry as tasks

    monkeypatch.setattr(gyms, "_EXTRA", dict(gyms._EXTRA))
    monkeypatch.setattr(tasks, "_EXTRA", dict(tasks._EXTRA))
    monkeypatch.setattr(losses, "_CSD_ESTIMATORS", dict(losses._CSD_ESTIMATORS))
    monkeypatch.setattr(advantage_estimators, "_ESTIMATORS", dict(advantage_estimators._ESTIMATORS))
