"""SOUL as the reference samples (seeded temperature-1 sampling; greedy an option), a served chat simulator on
loopback, counterpart outages never stored as scored, the cache keyed by row content and counterpart identity,
the headline refused for a set without a scored row, empty selections refused, and the sample counts."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from aiohttp import web
from simulator_helpers import cache_lines

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.simulator.base import SuiteContext
from mimesis_pl.eval.simulator.chat_engine import ChatCompletionsEngineSettings, chatml_messages
from mimesis_pl.eval.simulator.soul import suite as soul
from mimesis_pl.eval.simulator.soul.data import SoulDataModule, SoulRow, soul_sets
from mimesis_pl.eval.simulator.soul.scoring import SOTOPIA_DIMENSIONS
from mimesis_pl.eval.trials import TrialCache
from mimesis_pl.llm import ServedChatSettings, reference_role
from mimesis_pl.tasks.base import TaskResult
from mimesis_pl.tasks.clients import RoleSettings

TINY = "assets/tiny-qwen3"
SOUL_DIR = Path("assets/data/eval/soul")


def _ctx(tmp_path: Path, attempts: int = 1) -> SuiteContext:
    return SuiteContext(
        TrialCache(tmp_path / "items.jsonl"), RetryPolicy(max_attempts=attempts, backoff_s=0.0), 4, tmp_path
    )


def _rows(*sets: str) -> list[SoulRow]:
    dm = SoulDataModule([str(SOUL_DIR)], sets=list(sets))
    dm.setup()
    return dm.items


def _run(suite: soul.SoulSuite, rows: list[SoulRow], ctx: SuiteContext):
    async def go():
        try:
            await suite.run_batch(rows, ctx)
            return suite.report(ctx)
        finally:
            await suite.aclose()

    suite.start()
    return asyncio.run(go())


def _texts(out: Path, seed: int) -> list[str]:
    files = sorted((out / "conversations" / f"seed{seed}").glob("*.json"))
    return [m["content"] for f in files for m in json.loads(f.read_text())["messages"] if m["role"] == "assistant"]


def test_seeds_differ_in_sampled_text_on_the_tiny_model_and_greedy_stays_an_option(tmp_path):
    rows = _rows("fantom")
    sampled = soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=16)
    assert sampled.temperature == 1.0  # the reference's evaluation sampling, not greedy
    suite = soul.SoulSuite(sampled, seeds=[0, 1], allow_unscored_sets=True)
    _run(suite, rows, _ctx(tmp_path / "a"))
    seed0, seed1 = _texts(tmp_path / "a", 0), _texts(tmp_path / "a", 1)
    assert seed0 and seed0 != seed1  # the seeds measure the simulator's own sampling
    # Every request of a seed's run carries that seed: the same seed gives the same sample.
    again = soul.SoulSuite(soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=16), seeds=[0])
    again.allow_unscored_sets = True
    _run(again, rows, _ctx(tmp_path / "b"))
    assert _texts(tmp_path / "b", 0) == seed0
    greedy = soul.SoulSuite(
        soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=16, temperature=0.0),
        seeds=[0, 1],
        allow_unscored_sets=True,
    )
    _run(greedy, rows, _ctx(tmp_path / "c"))
    assert _texts(tmp_path / "c", 0) == _texts(tmp_path / "c", 1)


async def _chat_server(bodies: list[dict], action):
    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        bodies.append(body)
        return web.json_response(
            {
                "choices": [
                    {
                        "message": {
                            "content": "<think>Cara joined after Ann said it, so no.</think>\n\n<answer>no</answer>"
                        },
                        "finish_reason": "stop",
                    }
                ]
            }
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        return await action(f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1")
    finally:
        await runner.cleanup()


def test_soul_runs_a_served_chat_simulator_with_per_request_seeds(tmp_path):
    bodies: list[dict] = []
    rows = _rows("fantom")

    async def action(url: str):
        engine = ChatCompletionsEngineSettings(base_url=url, model="api-sim")
        settings = soul.SoulSimulatorSettings(model_path=TINY, engine=engine, revision="v1", max_new_tokens=64)
        suite = soul.SoulSuite(settings, seeds=[0, 2], allow_unscored_sets=True)
        suite.start()
        ctx = _ctx(tmp_path)
        try:
            await suite.run_batch(rows, ctx)
            return suite.report(ctx)
        finally:
            await suite.aclose()

    report = asyncio.run(_chat_server(bodies, action))
    assert len(bodies) == 4 and sorted(b["seed"] for b in bodies) == [0, 0, 2, 2]
    first = bodies[0]
    assert first["model"] == "api-sim" and "temperature" not in first  # provider defaults, as the reference
    assert first["chat_template_kwargs"] == {"enable_thinking": False}
    assert first["max_completion_tokens"] == 64 and "max_tokens" not in first
    assert first["messages"][-1]["role"] == "user" and "Cara" in first["messages"][-1]["content"]
    assert report.results["simulator"] == "api-sim" and report.results["simulator_revision"] == "v1"
    assert report.results["unscored"] == {}
    # The binary row's gold is "no": the served simulator's answer scored 1 on both seeds.
    assert report.results["per_seed"][0]["datasets"]["fantom"] == 50.0


def test_chatml_parsing_and_the_served_simulator_must_name_its_revision():
    text = "<|im_start|>system\nbe a user<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert chatml_messages(text) == [{"role": "system", "content": "be a user"}, {"role": "user", "content": "hi"}]
    assert chatml_messages(text + "<think>\n\n</think>\n\n")[-1]["content"] == "hi"
    with pytest.raises(ValueError, match="ChatML prompt ending"):
        chatml_messages("User: hi\nAssistant:")
    engine = ChatCompletionsEngineSettings(base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ValueError, match=r"^simulator\.revision is required for a served simulator"):
        soul.SoulSimulatorSettings(model_path=TINY, engine=engine)


def _fake(metrics_for, status="ok", error=None):
    async def fake_run_row(row, ctx, group_id, gen_uid, timeout_s):
        metrics = metrics_for(row)
        return TaskResult(row["data_source"], gen_uid, status, 0.9, 0.9, metrics, None, error=error or "")

    return fake_run_row


def test_partner_outage_rows_are_unscored_and_rerun_once_the_partner_is_fixed(tmp_path, monkeypatch):
    rows = _rows("sotopia")
    settings = soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=4)
    # a partner outage is a task_error (PartnerUnavailable, decision S40), as the runner reports it
    outage = _fake(lambda row: {}, status="task_error", error="PartnerUnavailable: partner: HTTP 500")
    monkeypatch.setattr(soul, "run_row", outage)
    suite = soul.SoulSuite(settings, seeds=[0], allow_unscored_sets=True)
    with pytest.raises(RuntimeError, match="no row could be scored"):
        _run(suite, rows, _ctx(tmp_path))
    lines = cache_lines(tmp_path / "items.jsonl")
    assert [r["status"] for r in lines] == ["unscored", "unscored"] and lines[0]["failure"] == "environment"
    raw = {f"sotopia/{d}": 5.0 for d in SOTOPIA_DIMENSIONS}  # a scored Sotopia row logs its raw dimensions
    monkeypatch.setattr(soul, "run_row", _fake(lambda row: raw))
    ctx = _ctx(tmp_path)
    report = _run(soul.SoulSuite(settings, seeds=[0]), rows, ctx)
    assert (ctx.ran, ctx.reused) == (2, 0)  # the outage rows are run again, never reused as scored
    assert report.results["per_seed"][0]["datasets"]["sotopia"] == pytest.approx(90.0)
    assert report.results["per_seed"][0]["overall"] == pytest.approx(50.0)  # 0.1 x mean raw 5.0, x 100 (S82)


def test_cache_is_keyed_by_row_content_and_counterpart_endpoint(tmp_path, monkeypatch):
    monkeypatch.setattr(soul, "run_row", _fake(lambda row: {}))
    settings = soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=4)
    rows = _rows("hitom")
    first = _ctx(tmp_path)
    _run(soul.SoulSuite(settings, seeds=[0]), rows, first)
    assert (first.ran, first.reused) == (2, 0)
    same = _ctx(tmp_path)
    _run(soul.SoulSuite(settings, seeds=[0]), rows, same)
    assert (same.ran, same.reused) == (0, 2)
    edited = [rows[0], SoulRow(**{**vars(rows[1]), "extra_info": {**rows[1].extra_info, "question": "edited?"}})]
    after_edit = _ctx(tmp_path)
    _run(soul.SoulSuite(settings, seeds=[0]), edited, after_edit)
    assert (after_edit.ran, after_edit.reused) == (1, 1)  # same set and index, new content: run again

    def judge_at(url: str) -> RoleSettings:
        return RoleSettings(judge=reference_role(ServedChatSettings, url=url, model="j"))

    a = soul.SoulSuite(settings, roles=judge_at("http://a:1/v1"), seeds=[0])
    b = soul.SoulSuite(settings, roles=judge_at("http://b:1/v1"), seeds=[0])
    c = soul.SoulSuite(settings, roles=judge_at("http://a:1/v1"), role_revisions={"judge": "2025-01"}, seeds=[0])
    ids = {soul.roles_identity(s.roles, s.role_revisions)["judge"] for s in (a, b, c)}
    assert ids == {"openai:j@http://a:1/v1", "openai:j@http://b:1/v1", "openai:j@http://a:1/v1#2025-01"}
    with pytest.raises(ValueError, match=r"role_revisions: unknown role\(s\) \['jduge'\]"):
        soul.SoulSuite(settings, role_revisions={"jduge": "x"})


def test_a_set_without_a_scored_row_stops_the_headline_unless_allowed(tmp_path, monkeypatch):
    async def verdicts(row, ctx, group_id, gen_uid, timeout_s):
        failed = row["data_source"] == "hitom"
        status = "judge_failed" if failed else "ok"
        return TaskResult(row["data_source"], gen_uid, status, 0.0, 0.0 if failed else 1.0, {}, None)

    monkeypatch.setattr(soul, "run_row", verdicts)
    rows = _rows("fantom", "hitom")
    settings = soul.SoulSimulatorSettings(model_path=TINY, max_new_tokens=4)
    with pytest.raises(RuntimeError, match=r"set\(s\) with no scored row: seed 0: hitom \(\{'judge_failed': 2\}\)"):
        _run(soul.SoulSuite(settings, seeds=[0]), rows, _ctx(tmp_path))
    report = _run(soul.SoulSuite(settings, seeds=[0], allow_unscored_sets=True), rows, _ctx(tmp_path))
    assert report.results["sets_without_score"] == {"0": ["hitom"]}
    assert "Sets with no scored row" in report.markdown and "not comparable" in report.markdown


def test_an_empty_set_selection_is_refused_and_the_older_report_stays(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"SOUL sets: \[\] selects no set"):
        SoulDataModule([str(SOUL_DIR)], sets=[])
    from mimesis_pl.cli import main

    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('{"old": true}')
    args = ["test", "--config", "configs/tiny/eval_soul.yaml", "--data.init_args.sets", "[]"]
    # a value the constructor rejects is one line on stderr and exit status 2 (A72)
    assert (
        main([*args, "--model.init_args.out_dir", str(out), "--trainer.logger.init_args.save_dir", str(tmp_path)]) == 2
    )
    assert re.search(r"SOUL sets: \[\] selects no set", capsys.readouterr().err)
    assert (out / "results.json").read_text() == '{"old": true}'


def test_the_tiny_sample_set_has_what_its_readme_says():
    counts = {p.name.removesuffix("_val.jsonl"): len(p.read_text().splitlines()) for p in SOUL_DIR.glob("*_val.jsonl")}
    every = soul_sets()
    assert sorted(counts) == sorted(every) and len(every) == 27
    # "27 sets × 2 made-up rows, one failing on purpose" (README, configs/tiny/eval_soul.yaml, the data README)
    assert {s: n for s, n in counts.items() if n != 2} == {"mistakes": 3}
    readme = Path("assets/data/eval/README.md").read_text()
    assert "two rows for each of the 27 SOUL sets" in readme


def test_a_plain_text_served_simulator_scores_the_same_with_thinking_on_and_off(tmp_path):
    """Issue 33 item 1: an API simulator never writes a think tag; with thinking on its turns are read whole (S78),
    so the four judged sets the old rule zeroed score as with thinking off (same scripted judge and partner)."""
    reply = "<response>Message: hmm ok, so what would you suggest for the rent then?</response>"
    sets = ("mirrorbench", "humanual-chat", "sotopia", "sim_arena_math")
    rows = _rows(*sets)

    async def serve(request: web.Request) -> web.Response:
        await request.json()
        return web.json_response({"choices": [{"message": {"content": reply}, "finish_reason": "stop"}]})

    async def run(thinking: bool) -> dict:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", serve)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/v1"
        engine = ChatCompletionsEngineSettings(base_url=url, model="api-sim")
        settings = soul.SoulSimulatorSettings(model_path=TINY, engine=engine, revision="v1", max_new_tokens=64)
        suite = soul.SoulSuite(settings, seeds=[0], enable_thinking=thinking, allow_unscored_sets=True)
        suite.start()
        ctx = _ctx(tmp_path / f"think{int(thinking)}")
        try:
            await suite.run_batch(rows, ctx)
            return suite.report(ctx).results["per_seed"][0]["datasets"]
        finally:
            await suite.aclose()
            await runner.cleanup()

    on, off = asyncio.run(run(True)), asyncio.run(run(False))
    assert set(on) == set(sets)
    for name in sets:
        assert on[name] == pytest.approx(off[name]) and on[name] > 0, (name, on, off)
