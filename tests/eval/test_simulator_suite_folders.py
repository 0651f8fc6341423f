"""One folder per simulator suite (``eval/simulator/<suite>/{suite,scoring,data}.py``). The suite packages re-export
what their old single modules held (issue #27); the old flat module paths are gone and fail naming the new homes,
in Python and as a YAML ``class_path`` (issue #38, :mod:`mimesis_pl.moved`)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from mimesis_pl.eval.simulator.base import FidelitySuite, ItemDataModule

from ..conftest import REPO
from ..test_configs import ParseOnlyCLI

SIMULATOR = REPO / "mimesis_pl" / "eval" / "simulator"
SUITES = ("soul", "realusersim", "tau_usi", "turing")

# Every public name of the old modules (as at e15fda2), by the module that now holds it.
OLD_PATHS: dict[str, dict[str, str]] = {
    "soul": {
        "soul.suite": "TaskErrorFailure NoTurnsFailure STATUS_FAILURE FAILURE_STATUS task_row endpoint_identity "
        "roles_identity SoulSimulatorSettings SoulSuite"
    },
    "realusersim": {"realusersim.suite": "RealUserSimSuite"},
    "tau_usi": {"tau_usi.suite": "GREETING SIM_RULES RuntimeSettings TauUSISuite"},
    "turing": {
        "turing.suite": "JUDGE_SYSTEM judge_messages TuringSuite",
        "turing.scoring": "PENALTIES clean_generation penalties",
    },
    "soul_scoring": {
        "soul.scoring": "ALIGNX_SPLITS dataset_scores axis_scores soul_index row_weighted_overall "
        "seed_summary degenerate_seeds mean_std across_seeds"
    },
    "soul_report": {"soul.report": "HEADLINE ROW_WEIGHTED sets_without_score describe_unscored soul_markdown"},
    "realusersim_prompt": {
        "realusersim.prompt": "DEMOGRAPHIC_LABELS SECTIONS FIELDS NOT_COMPARABLE PromptTemplate load_prompt_template "
        "demographic_block render_prompt prompt_source prompt_note"
    },
    "realusersim_protocol": {
        "realusersim.protocol": "Condition CONDITIONS CLOSE PRIMER build_user_prompt RealUserSimConversation converse "
        "judged_turns judge_fidelity"
    },
    "tau_usi_scoring": {
        "tau_usi.scoring": "EVAL_SEED RunTask success mean_pstd survey_task_score model_eval dimension_scores "
        "score_batch"
    },
    "tau_features": {
        "tau_usi.features": "STOP Source DIMENSIONS FEATURES RAW_FEATURES row_column is_meta strip_markup user_turns "
        "question_class conversation_features summary_row report_row"
    },
    "tau_data": {
        "tau_usi.data": "TauTask load_tau_tasks HumanEntry load_human_batches load_difficulty SURVEY_SCALES "
        "survey_value survey_answers"
    },
    "scripted_tau": {"tau_usi.scripted": "Messages SURVEY_MARKER scripted_tau_agent scripted_tau_user STOP_LINE"},
    "loaders": {
        "rows": "DataFormatError expand iter_rows read_json field_of messages_of",
        "realusersim.data": "realusersim_case_id RealUserSimCase load_realusersim_cases JudgePrompts "
        "load_judge_prompts",
        "turing.data": "TuringRow load_turing_rows",
        "soul.data": "soul_sets SoulRow load_soul_validation",
    },
    "datamodules": {
        "turing.data": "TuringRowDataModule",
        "realusersim.data": "RealUserSimItem sattolo_derangement RealUserSimDataModule",
        "tau_usi.data": "TauTaskDataModule",
        "soul.data": "SoulDataModule",
    },
    "published": {
        "realusersim.data": "REALUSERSIM REALUSERSIM_CARD",
        "tau_usi.data": "TAU_USI TAU_USI_HUMAN",
        "soul.data": "SOUL",
    },
}
OLD_DATA_CLASS_PATHS = {
    "eval_soul.yaml": "mimesis_pl.eval.simulator.datamodules.SoulDataModule",
    "eval_realusersim.yaml": "mimesis_pl.eval.simulator.datamodules.RealUserSimDataModule",
    "eval_tau_usi.yaml": "mimesis_pl.eval.simulator.datamodules.TauTaskDataModule",
    "eval_turing.yaml": "mimesis_pl.eval.simulator.datamodules.TuringRowDataModule",
}


def _module(name: str):
    return importlib.import_module(f"mimesis_pl.eval.simulator.{name}")


@pytest.mark.parametrize("old", sorted(OLD_PATHS))
def test_every_old_module_path_re_exports_or_names_the_new_home_of_each_object(old):
    if old in SUITES:  # a suite's package: its old names are still there
        module = _module(old)
        for home, names in OLD_PATHS[old].items():
            for name in names.split():
                assert getattr(module, name) is getattr(_module(home), name), f"{old}.{name} is not {home}.{name}"
        return
    with pytest.raises(ModuleNotFoundError, match="was removed") as error:
        _module(old)
    for home, names in OLD_PATHS[old].items():
        assert f"from mimesis_pl.eval.simulator.{home}" in str(error.value)
        assert all(name in str(error.value) for name in names.split())


@pytest.mark.parametrize("suite", SUITES)
def test_each_suite_has_its_own_folder_with_suite_scoring_and_data(suite):
    folder = SIMULATOR / suite
    assert {"suite.py", "scoring.py", "data.py"} <= {p.name for p in folder.glob("*.py")}
    runners = [v for v in vars(_module(f"{suite}.suite")).values() if _defined_subclass(v, FidelitySuite, suite)]
    modules = [v for v in vars(_module(f"{suite}.data")).values() if _defined_subclass(v, ItemDataModule, suite)]
    assert len(runners) == 1 and len(modules) == 1, (runners, modules)


def _defined_subclass(value: object, base: type, suite: str) -> bool:
    return (
        isinstance(value, type)
        and issubclass(value, base)
        and value is not base
        and value.__module__.startswith(f"mimesis_pl.eval.simulator.{suite}.")
    )


def test_no_suite_class_is_defined_at_the_top_of_the_simulator_package():
    """Beside ``base`` (the interfaces), a top-level module of ``eval/simulator/`` is shared or an old path's
    re-export: every suite and suite DataModule is defined in its suite's folder."""
    for path in sorted(SIMULATOR.glob("*.py")):
        if path.stem in ("__init__", "base"):
            continue
        module = _module(path.stem)
        defined = [
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and issubclass(v, (FidelitySuite, ItemDataModule))
            and v.__module__ == module.__name__
        ]
        assert defined == [], f"{path.name} defines {defined}"


@pytest.mark.parametrize("config", sorted(OLD_DATA_CLASS_PATHS))
def test_a_config_naming_the_old_datamodule_class_path_fails_naming_the_new_one(
    config, tmp_path: Path, monkeypatch, capsys
):
    monkeypatch.chdir(REPO)
    text = (REPO / "configs" / "tiny" / config).read_text()
    new = OLD_DATA_CLASS_PATHS[config].rsplit(".", 1)[1]
    lines = [line for line in text.splitlines() if line.strip().startswith("class_path:") and line.endswith(new)]
    assert len(lines) == 1, lines
    home = lines[0].split("class_path:")[1].strip().rsplit(".", 1)[0]
    old = text.replace(lines[0], lines[0].split("class_path:")[0] + "class_path: " + OLD_DATA_CLASS_PATHS[config])
    path = tmp_path / config
    path.write_text(old)
    with pytest.raises(SystemExit):
        ParseOnlyCLI(args=["--config", str(path)], run=False)
    err = " ".join(capsys.readouterr().err.split())
    assert "was removed" in err and home in err and new in err, err[-1500:]
