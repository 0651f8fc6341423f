"""Gym settings are checked when the job is built: one line naming the YAML key, exit 2, nothing started
(issue 35, items 7, 8 and 13; decision E28)."""

from __future__ import annotations

import pytest

from mimesis_pl.cli import main

from ..conftest import REPO

JUDGE = 'url: "http://127.0.0.1:9/v1", model: j'
CASES = {
    "missing Search corpus": (
        "{SearchGym: {search: {class_path: BM25SearchSettings, init_args: {corpus_path: nowhere/corpus.jsonl}}}}",
        "episode.gym_options.SearchGym.search.init_args.corpus_path: nowhere/corpus.jsonl does not exist",
    ),
    "old Search kind": (
        "{SearchGym: {search: {kind: bm25, corpus_path: assets/data/gyms/offline/search_corpus.jsonl}}}",
        "SearchGym.search: 'kind: bm25' was replaced by a class_path; write ",
    ),
    "old Tau runtime kind": (
        "{TauGym: {runtime: {kind: http, url: http://127.0.0.1:8300}}}",
        "TauGym.runtime: 'kind: http' was replaced by a class_path; write ",
    ),
    "non-http Tau runtime address": (
        "{TauGym: {runtime: {class_path: TauHttpRuntimeSettings, init_args: {url: 127.0.0.1:8300}}}}",
        "episode.gym_options.TauGym: gym_options.TauGym.runtime: TauHttpRuntimeSettings needs url: http(s)://",
    ),
    "bad Travel scenario file": (
        "{TravelGym: {scenarios_path: BAD}}",
        "episode.gym_options.TravelGym: BAD: scenario 'x': 'dimensions' must list aspects",
    ),
    "non-http judge address": (
        '{TurtleGym: {judge: {class_path: ServedChatSettings, init_args: {url: "127.0.0.1:8001/v1", model: j}}}}',
        "episode.gym_options.TurtleGym.judge: ServedChatSettings needs url: http(s)://HOST/v1",
    ),
    "misspelt judge key": (
        f"{{TurtleGym: {{judge: {{class_path: ServedChatSettings, init_args: {{{JUDGE}, temprature: 0}}}}}}}}",
        "episode.gym_options.TurtleGym.judge: unknown keys ['temprature'] for ServedChatSettings",
    ),
    "unset judge key variable": (  # item 8: trained anyway, every judged episode a judge_error
        f"{{PersuadeGym: {{judge: {{class_path: ServedChatSettings, "
        f"init_args: {{{JUDGE}, api_key_env: W35_UNSET_KEY}}}}}}}}",
        "episode.gym_options.PersuadeGym.judge.api_key_env names environment variable 'W35_UNSET_KEY', but",
    ),
    "judge without a deadline": (  # item 13: timeout_s 0 meant no timeout
        f"{{TurtleGym: {{judge: {{class_path: ServedChatSettings, init_args: {{{JUDGE}, timeout_s: 0}}}}}}}}",
        "episode.gym_options.TurtleGym.judge.timeout_s must be > 0 seconds, got 0",
    ),
    "negative judge retries": (
        f"{{TurtleGym: {{judge: {{class_path: ServedChatSettings, init_args: {{{JUDGE}, max_retries: -1}}}}}}}}",
        "episode.gym_options.TurtleGym.judge: max_retries and retry_backoff_s must be >= 0, got -1 and 1.0",
    ),
    "unknown gym": ("{NoGym: {}}", "episode.gym_options: unknown gym 'NoGym'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_gym_setting_is_one_line_and_exit_2_before_anything_starts(case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("W35_UNSET_KEY", raising=False)
    bad = tmp_path / "travel.json"
    bad.write_text('{"x": {"best_ids": 3}}')
    options, message = CASES[case]
    options, message = options.replace("BAD", str(bad)), message.replace("BAD", str(bad))
    loaded = []
    monkeypatch.setattr("mimesis_pl.modules.base.HFCausalLMModule.configure_model", lambda self: loaded.append(1))
    args = [
        "fit",
        "--config",
        str(REPO / "configs" / "tiny" / "agent_grpo.yaml"),
        f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
        f"--model.init_args.rollout.episode.gym_options={options}",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert loaded == [] and not (tmp_path / "runs").exists()  # no weights, no run folder


def test_a_data_row_naming_an_unknown_gym_is_refused_at_set_up(tmp_path):
    """Item 7: an unknown gym in a data row failed at the first rollout (after set-up, a traceback)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mimesis_pl.data.prompts import read_prompt_rows

    (row,) = read_prompt_rows([str(REPO / "assets/data/gyms/val/FunctionGym.parquet")], max_samples=1)
    row.pop("_source")
    row["reward_model"]["env_name"] = "FunctoinGym"
    row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"]["env_name"] = "FunctoinGym"
    path = tmp_path / "typo.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    with pytest.raises(ValueError, match=rf"^{path}:row0: unknown gym 'FunctoinGym'; known: \['CueGym', 'FunctionGym'"):
        read_prompt_rows([str(path)])
