"""Module paths that moved: importing one (or naming a class under it in YAML) fails with the new home.

Old paths were kept as re-exporting modules; they are gone (issue #38: one definition per concept). The table below
is what those modules re-exported; :class:`MovedModules` (installed by ``mimesis_pl/__init__.py``) turns an import of
an old path into a ``ModuleNotFoundError`` that names where each of its objects lives now.
"""

from __future__ import annotations

import importlib.abc

# old module -> {object name: the module that defines it now}
MOVED: dict[str, dict[str, str]] = {
    "mimesis_pl.models": {
        "LoraSettings": "mimesis_pl.causal_lm",
        "OptimSettings": "mimesis_pl.causal_lm",
        "build_optimizer": "mimesis_pl.causal_lm",
        "decoder_layers": "mimesis_pl.causal_lm",
        "eval_mode": "mimesis_pl.causal_lm",
        "load_causal_lm": "mimesis_pl.causal_lm",
        "lr_multiplier": "mimesis_pl.causal_lm",
        "shard_fsdp2": "mimesis_pl.causal_lm",
    },
    "mimesis_pl.modules.token_ops": {
        "HeadLogprobs": "mimesis_pl.rl.token_ops",
        "TokenLogprobs": "mimesis_pl.rl.token_ops",
        "chunked_token_entropy": "mimesis_pl.rl.token_ops",
        "chunked_token_logprobs": "mimesis_pl.rl.token_ops",
        "model_token_logprobs": "mimesis_pl.rl.token_ops",
        "model_weighted_logprob_sum": "mimesis_pl.rl.token_ops",
    },
    "mimesis_pl.modules.fused_head": {
        "LinearTokenLogprobs": "mimesis_pl.rl.fused_head",
        "LinearWeightedLogprobSum": "mimesis_pl.rl.fused_head",
        "auto_chunk_size": "mimesis_pl.rl.fused_head",
        "linear_token_logprobs": "mimesis_pl.rl.fused_head",
        "linear_weighted_logprob_sum": "mimesis_pl.rl.fused_head",
    },
    "mimesis_pl.eval.simulator.tau_runtime": {
        "ToolRuntime": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "HttpToolRuntime": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "apply_tool": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "ScriptedToolRuntime": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "make_runtime_app": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "serve_tool_runtime": "mimesis_pl.envs.gyms.tau.tool_runtime",
        "serve_scripted_runtime": "mimesis_pl.envs.gyms.tau.tool_runtime",
    },
    "mimesis_pl.eval.replay.values": {
        "canonical_json": "mimesis_pl.eval.values",
        "freeze": "mimesis_pl.eval.values",
        "json_equal": "mimesis_pl.eval.values",
        "json_value_problem": "mimesis_pl.eval.values",
        "thaw": "mimesis_pl.eval.values",
    },
    "mimesis_pl.eval.simulator.datamodules": {
        "RealUserSimDataModule": "mimesis_pl.eval.simulator.realusersim.data",
        "RealUserSimItem": "mimesis_pl.eval.simulator.realusersim.data",
        "sattolo_derangement": "mimesis_pl.eval.simulator.realusersim.data",
        "SoulDataModule": "mimesis_pl.eval.simulator.soul.data",
        "TauTaskDataModule": "mimesis_pl.eval.simulator.tau_usi.data",
        "TuringRowDataModule": "mimesis_pl.eval.simulator.turing.data",
    },
    "mimesis_pl.eval.simulator.loaders": {
        "JudgePrompts": "mimesis_pl.eval.simulator.realusersim.data",
        "RealUserSimCase": "mimesis_pl.eval.simulator.realusersim.data",
        "load_judge_prompts": "mimesis_pl.eval.simulator.realusersim.data",
        "load_realusersim_cases": "mimesis_pl.eval.simulator.realusersim.data",
        "realusersim_case_id": "mimesis_pl.eval.simulator.realusersim.data",
        "DataFormatError": "mimesis_pl.eval.simulator.rows",
        "expand": "mimesis_pl.eval.simulator.rows",
        "field_of": "mimesis_pl.eval.simulator.rows",
        "iter_rows": "mimesis_pl.eval.simulator.rows",
        "messages_of": "mimesis_pl.eval.simulator.rows",
        "read_json": "mimesis_pl.eval.simulator.rows",
        "soul_sets": "mimesis_pl.eval.simulator.soul.data",
        "SoulRow": "mimesis_pl.eval.simulator.soul.data",
        "load_soul_validation": "mimesis_pl.eval.simulator.soul.data",
        "TuringRow": "mimesis_pl.eval.simulator.turing.data",
        "load_turing_rows": "mimesis_pl.eval.simulator.turing.data",
    },
    "mimesis_pl.eval.simulator.published": {
        "REALUSERSIM": "mimesis_pl.eval.simulator.realusersim.data",
        "REALUSERSIM_CARD": "mimesis_pl.eval.simulator.realusersim.data",
        "SOUL": "mimesis_pl.eval.simulator.soul.data",
        "TAU_USI": "mimesis_pl.eval.simulator.tau_usi.data",
        "TAU_USI_HUMAN": "mimesis_pl.eval.simulator.tau_usi.data",
    },
    "mimesis_pl.eval.simulator.realusersim_prompt": {
        "DEMOGRAPHIC_LABELS": "mimesis_pl.eval.simulator.realusersim.prompt",
        "FIELDS": "mimesis_pl.eval.simulator.realusersim.prompt",
        "NOT_COMPARABLE": "mimesis_pl.eval.simulator.realusersim.prompt",
        "SECTIONS": "mimesis_pl.eval.simulator.realusersim.prompt",
        "PromptTemplate": "mimesis_pl.eval.simulator.realusersim.prompt",
        "demographic_block": "mimesis_pl.eval.simulator.realusersim.prompt",
        "load_prompt_template": "mimesis_pl.eval.simulator.realusersim.prompt",
        "prompt_note": "mimesis_pl.eval.simulator.realusersim.prompt",
        "prompt_source": "mimesis_pl.eval.simulator.realusersim.prompt",
        "render_prompt": "mimesis_pl.eval.simulator.realusersim.prompt",
    },
    "mimesis_pl.eval.simulator.realusersim_protocol": {
        "CLOSE": "mimesis_pl.eval.simulator.realusersim.protocol",
        "CONDITIONS": "mimesis_pl.eval.simulator.realusersim.protocol",
        "PRIMER": "mimesis_pl.eval.simulator.realusersim.protocol",
        "Condition": "mimesis_pl.eval.simulator.realusersim.protocol",
        "RealUserSimConversation": "mimesis_pl.eval.simulator.realusersim.protocol",
        "build_user_prompt": "mimesis_pl.eval.simulator.realusersim.protocol",
        "converse": "mimesis_pl.eval.simulator.realusersim.protocol",
        "judge_fidelity": "mimesis_pl.eval.simulator.realusersim.protocol",
        "judged_turns": "mimesis_pl.eval.simulator.realusersim.protocol",
    },
    "mimesis_pl.eval.simulator.scripted_tau": {
        "STOP_LINE": "mimesis_pl.eval.simulator.tau_usi.scripted",
        "SURVEY_MARKER": "mimesis_pl.eval.simulator.tau_usi.scripted",
        "Messages": "mimesis_pl.eval.simulator.tau_usi.scripted",
        "scripted_tau_agent": "mimesis_pl.eval.simulator.tau_usi.scripted",
        "scripted_tau_user": "mimesis_pl.eval.simulator.tau_usi.scripted",
    },
    "mimesis_pl.eval.simulator.soul_report": {
        "HEADLINE": "mimesis_pl.eval.simulator.soul.report",
        "ROW_WEIGHTED": "mimesis_pl.eval.simulator.soul.report",
        "describe_unscored": "mimesis_pl.eval.simulator.soul.report",
        "sets_without_score": "mimesis_pl.eval.simulator.soul.report",
        "soul_markdown": "mimesis_pl.eval.simulator.soul.report",
    },
    "mimesis_pl.eval.simulator.soul_scoring": {
        "ALIGNX_SPLITS": "mimesis_pl.eval.simulator.soul.scoring",
        "soul_names": "mimesis_pl.eval.simulator.soul.data",
        "soul_sets": "mimesis_pl.eval.simulator.soul.data",
        "across_seeds": "mimesis_pl.eval.simulator.soul.scoring",
        "axis_scores": "mimesis_pl.eval.simulator.soul.scoring",
        "dataset_scores": "mimesis_pl.eval.simulator.soul.scoring",
        "degenerate_seeds": "mimesis_pl.eval.simulator.soul.scoring",
        "mean_std": "mimesis_pl.eval.simulator.soul.scoring",
        "row_weighted_overall": "mimesis_pl.eval.simulator.soul.scoring",
        "seed_summary": "mimesis_pl.eval.simulator.soul.scoring",
        "soul_index": "mimesis_pl.eval.simulator.soul.scoring",
    },
    "mimesis_pl.eval.simulator.tau_data": {
        "SURVEY_SCALES": "mimesis_pl.eval.simulator.tau_usi.data",
        "HumanEntry": "mimesis_pl.eval.simulator.tau_usi.data",
        "TauTask": "mimesis_pl.eval.simulator.tau_usi.data",
        "load_difficulty": "mimesis_pl.eval.simulator.tau_usi.data",
        "load_human_batches": "mimesis_pl.eval.simulator.tau_usi.data",
        "load_tau_tasks": "mimesis_pl.eval.simulator.tau_usi.data",
        "survey_answers": "mimesis_pl.eval.simulator.tau_usi.data",
        "survey_value": "mimesis_pl.eval.simulator.tau_usi.data",
    },
    "mimesis_pl.eval.simulator.tau_features": {
        "DIMENSIONS": "mimesis_pl.eval.simulator.tau_usi.features",
        "FEATURES": "mimesis_pl.eval.simulator.tau_usi.features",
        "RAW_FEATURES": "mimesis_pl.eval.simulator.tau_usi.features",
        "STOP": "mimesis_pl.eval.simulator.tau_usi.features",
        "Source": "mimesis_pl.eval.simulator.tau_usi.features",
        "conversation_features": "mimesis_pl.eval.simulator.tau_usi.features",
        "is_meta": "mimesis_pl.eval.simulator.tau_usi.features",
        "question_class": "mimesis_pl.eval.simulator.tau_usi.features",
        "report_row": "mimesis_pl.eval.simulator.tau_usi.features",
        "row_column": "mimesis_pl.eval.simulator.tau_usi.features",
        "strip_markup": "mimesis_pl.eval.simulator.tau_usi.features",
        "summary_row": "mimesis_pl.eval.simulator.tau_usi.features",
        "user_turns": "mimesis_pl.eval.simulator.tau_usi.features",
    },
    "mimesis_pl.eval.simulator.tau_usi_scoring": {
        "EVAL_SEED": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "RunTask": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "dimension_scores": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "mean_pstd": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "model_eval": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "score_batch": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "success": "mimesis_pl.eval.simulator.tau_usi.scoring",
        "survey_task_score": "mimesis_pl.eval.simulator.tau_usi.scoring",
    },
    "mimesis_pl.modules.simulator_checks": {
        "HEADLINE_METRICS": "mimesis_pl.stages.simulator_checks",
        "check_best_metric": "mimesis_pl.stages.simulator_checks",
        "has_val_rows": "mimesis_pl.stages.simulator_checks",
    },
    "mimesis_pl.modules.simulator_stage": {
        "FoldAdvantageSettings": "mimesis_pl.stages.simulator",
        "SimRolloutSettings": "mimesis_pl.stages.simulator",
        "SimValidationSettings": "mimesis_pl.stages.simulator",
        "TaskRolloutStage": "mimesis_pl.stages.simulator",
        "fold_experience": "mimesis_pl.stages.simulator",
    },
}


def moved_message(old: str) -> str:
    """Where the objects of the removed module ``old`` live now."""
    homes: dict[str, list[str]] = {}
    for name, new in MOVED[old].items():
        homes.setdefault(new, []).append(name)
    where = "; ".join(f"{', '.join(sorted(names))} from {new}" for new, names in sorted(homes.items()))
    return f"{old} was removed: import {where}"


def moved_attribute(package: str, name: str):
    """A package's ``__getattr__``: ``package.name`` as a removed module raises with :func:`moved_message` (what a YAML
    ``class_path`` reader reports when it falls back from importing the module to reading the package's attribute)."""
    old = f"{package}.{name}"
    if old in MOVED:
        raise AttributeError(moved_message(old))
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


class MovedModules(importlib.abc.MetaPathFinder):
    """Fails the import of a removed module path with :func:`moved_message` (a YAML ``class_path`` under it too)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            raise ModuleNotFoundError(moved_message(fullname), name=fullname)
        return None


#: The ``kind:`` spellings issue #38 replaced by ``class_path`` (one idiom for every role), by the kind of mapping
#: that held them: old kind → the class to name instead. ``checks.build_choice`` and the CLI's config check name
#: the new spelling when an old config still has ``kind:``.
RENAMED_KINDS: dict[str, dict[str, str]] = {
    "chat model": {
        "openai": "mimesis_pl.llm.ServedChatSettings",
        "scripted": "mimesis_pl.llm.ScriptedChatSettings",
    },
    "tau runtime": {
        "retail": "mimesis_pl.envs.gyms.tau.RetailRuntimeSettings",
        "http": "mimesis_pl.envs.gyms.tau.TauHttpRuntimeSettings",
    },
    "search backend": {
        "bm25": "mimesis_pl.envs.gyms.search.BM25SearchSettings",
        "http": "mimesis_pl.envs.gyms.search.HttpSearchSettings",
    },
    "tau-USI runtime": {
        "scripted_http": "mimesis_pl.eval.simulator.tau_usi.ScriptedHttpRuntimeSettings",
        "http": "mimesis_pl.eval.simulator.tau_usi.HttpRuntimeSettings",
    },
}


def renamed_kinds_at(path: str) -> dict[str, str]:
    """The :data:`RENAMED_KINDS` table for a ``kind:`` mapping found at the dotted config ``path``."""
    last = path.rsplit(".", 1)[-1]
    if last == "search":
        return RENAMED_KINDS["search backend"]
    if last == "runtime":
        return RENAMED_KINDS["tau runtime" if "TauGym" in path else "tau-USI runtime"]
    return RENAMED_KINDS["chat model"]


def old_kind_paths(value: object, path: str = "") -> list[tuple[str, dict]]:
    """Every mapping in a loaded config that still chooses its class with ``kind:`` (not ``class_path``), with its
    dotted path: the spellings issue #38 replaced."""
    found: list[tuple[str, dict]] = []
    if isinstance(value, dict):
        if "kind" in value and "class_path" not in value and str(value["kind"]) in renamed_kinds_at(path):
            found.append((path, value))
        for key, inner in value.items():
            found += old_kind_paths(inner, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += old_kind_paths(inner, f"{path}[{i}]")
    return found
