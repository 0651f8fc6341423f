"""CSD teacher rows on real scripted episodes: note placement, exact gathers, the null probe, the loss gate."""

from __future__ import annotations

import asyncio

import pytest
import torch
from rollout_fixtures import ScriptedEngine, say, telepathy_row
from transformers import AutoModelForCausalLM

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.envs import EnvironmentManager
from mimesis_pl.modules.settings import CSDSettings
from mimesis_pl.rl.losses import csd_loss
from mimesis_pl.rl.placebo import PlaceboPool
from mimesis_pl.rl.teacher import build_teacher_rows, pack_teacher_rows
from mimesis_pl.rl.teacher_forward import check_no_dropout, teacher_logprobs
from mimesis_pl.rl.token_ops import model_token_logprobs
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.users.scripted import ScriptedUser

NOTE = "Ask about what the thing is made of before guessing."


def episodes(tok, n=2):
    manager = EnvironmentManager(users=ScriptedUser())
    out = []
    for k in range(n):
        texts = [say("action", "Is it a fruit?"), say("action", "Is it green inside?")] + [say("answer", "Kiwi")] * (
            k + 1
        )
        loop = MultiTurnRollout(ScriptedEngine(tok, texts[: 2 + 1]), tok, manager, SamplingParams(max_new_tokens=64))
        out.append(asyncio.run(loop.run_episode(telepathy_row(), group_id=f"g{k}", gen_uid=f"g{k}-0")))
    return out


@pytest.fixture(scope="module")
def model(tiny_model_path):
    return AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()


def note_ids(tok):
    return ChatRenderer(tok).message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": NOTE})


def test_note_is_spliced_at_the_header_and_the_turn_is_copied(tiny_tokenizer):
    tok = tiny_tokenizer
    traj = episodes(tok, 1)[0]
    rows = build_teacher_rows(traj.input_ids, traj.turn_spans, {1: NOTE}, lambda n: note_ids(tok), 10_000, prompt_len=0)
    span = traj.turn_spans[1]
    row = rows.rows[0].tolist()
    ids = traj.input_ids
    assert row[: span.header_start] == ids[: span.header_start]  # the student's exact prefix (tool calls included)
    n = len(note_ids(tok))
    assert tok.decode(row[span.header_start : span.header_start + n]) == f"<|im_start|>user\n{NOTE}<|im_end|>\n"
    assert row[span.header_start + n :] == ids[span.header_start : span.end]  # header + sampled ids, unchanged
    assert rows.teacher_mask.nonzero().squeeze(-1).tolist() == list(range(span.start, span.end))
    assert "Is it a fruit?" in tok.decode(row[: span.header_start])  # turn 0's tool call stays (A1)


def test_teacher_logprobs_are_gathered_at_the_right_positions(tiny_tokenizer, model):
    tok = tiny_tokenizer
    trajs = episodes(tok, 2)
    notes = [{1: NOTE}, {0: NOTE, 2: "Commit to the answer."}]
    renderer = ChatRenderer(tok)
    render = lambda n: renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": n})  # noqa: E731
    rows = [
        build_teacher_rows(t.input_ids, t.turn_spans, nb, render, 10_000, prompt_len=0) for t, nb in zip(trajs, notes)
    ]
    length = max(len(t.input_ids) for t in trajs)
    packed = pack_teacher_rows(rows, response_length=length, pad_id=tok.pad_token_id)
    got = teacher_logprobs(model, packed, chunk_rows=2)
    for b, (traj, nb) in enumerate(zip(trajs, notes)):
        for t, note in nb.items():
            span = traj.turn_spans[t]
            row = traj.input_ids[: span.header_start] + render(note) + traj.input_ids[span.header_start : span.end]
            with torch.no_grad():
                lp = model_token_logprobs(model, torch.tensor([row])).logprobs[0]  # lp[j] scores row[j + 1]
            shift = len(render(note))
            want = torch.stack([lp[j + shift - 1] for j in range(span.start, span.end)])
            assert torch.allclose(got[b, span.start : span.end], want, atol=1e-4)
    assert (got[~packed.teacher_mask] == 0).all()


def test_null_probe_teacher_equals_student(tiny_tokenizer, model):
    tok = tiny_tokenizer
    traj = episodes(tok, 1)[0]
    rows = build_teacher_rows(
        traj.input_ids, traj.turn_spans, {0: "x", 1: "x", 2: "x"}, lambda n: [], 10_000, prompt_len=0
    )
    packed = pack_teacher_rows([rows], response_length=len(traj.input_ids), pad_id=tok.pad_token_id)
    teacher = teacher_logprobs(model, packed)[0, 1:]
    with torch.no_grad():
        student = model_token_logprobs(model, torch.tensor([traj.input_ids])).logprobs[0]
    mask = packed.teacher_mask[0, 1:]
    assert mask.sum() > 0
    assert torch.allclose(teacher[mask], student[mask], atol=1e-5)
    _, metrics = csd_loss(student[None], teacher[None], mask[None].float())
    assert abs(float(metrics["teacher_gap_mean"])) < 1e-4  # zero gap: CSD adds nothing under the null probe


def test_dropout_is_refused(tiny_model_path):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_model_path)
    check_no_dropout(config)
    config.attention_dropout = 0.1
    with pytest.raises(ValueError, match="attention_dropout = 0.1"):
        check_no_dropout(config)


def test_estimator_choice_is_checked():
    with pytest.raises(
        ValueError, match=r"unknown CSD estimator 'surrogate'; registered: \['sdar', 'ref', 'k3', 'distill'"
    ):
        CSDSettings(estimator="surrogate")
    assert CSDSettings().estimator == "sdar"  # the default is unchanged
    assert CSDSettings(estimator="distill").distill_top_k == 20  # the reference's SDPO_TOPK
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="distill_top_k must be an integer >= 1"):
            CSDSettings(estimator="distill", distill_top_k=bad)


@pytest.mark.parametrize("mode", ["packed", "prefix_cache"])
def test_teacher_topk_is_the_full_rows_topk_at_each_coached_token(tiny_tokenizer, model, mode):
    """Both teacher modes return, at each coached token, the teacher row's K most likely ids and their log-probs
    (normalised over the whole vocabulary), read from the logit before the token, as the full row's forward gives."""
    from mimesis_pl.rl.teacher_forward import teacher_scores, teacher_scores_prefix_cached

    tok, k = tiny_tokenizer, 3
    traj = episodes(tok, 1)[0]
    renderer = ChatRenderer(tok)
    render = lambda n: renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": n})  # noqa: E731
    notes = {0: NOTE, 2: "Commit to the answer."}
    rows = build_teacher_rows(traj.input_ids, traj.turn_spans, notes, render, 10_000, prompt_len=0)
    length = len(traj.input_ids)
    if mode == "packed":
        scores = teacher_scores(model, pack_teacher_rows([rows], length, tok.pad_token_id), chunk_rows=1, top_k=k)
        got = [t[0] for t in scores]
    else:
        (got,) = teacher_scores_prefix_cached(model, torch.tensor(traj.input_ids), traj.turn_spans, [rows], top_k=(k,))
    logprobs, ids, topk = got
    assert ids.shape == (length, k) and topk.shape == (length, k)
    for t, note in notes.items():
        span = traj.turn_spans[t]
        row = traj.input_ids[: span.header_start] + render(note) + traj.input_ids[span.header_start : span.end]
        with torch.no_grad():
            full = model(input_ids=torch.tensor([row])).logits[0].float().log_softmax(-1)
        shift = len(render(note))
        for j in range(span.start, span.end):  # token j sits at row position j + shift; its logit at j + shift − 1
            want_lp, want_ids = full[j + shift - 1].topk(k)
            assert ids[j].tolist() == want_ids.tolist()
            assert torch.allclose(topk[j], want_lp, atol=1e-4)
            assert torch.allclose(logprobs[j], full[j + shift - 1, row[j + shift]], atol=1e-4)
    assert (ids[~rows.teacher_mask] == 0).all() and (topk[~rows.teacher_mask] == 0).all()  # no row: 0


def test_placebo_pool_draws_from_other_groups_and_tasks_and_round_trips():
    pool = PlaceboPool(capacity=4, min_size=2, seed=1)
    pool.add("same group", "g1", "taskA")
    assert pool.draw("n", "g9", "taskZ") is None  # below min_size: no placebo
    pool.add("same task", "g2", "taskB")
    pool.add("independent", "g3", "taskC")
    for _ in range(20):
        assert pool.draw("n", "g1", "taskB") == "independent"
    state = pool.state_dict()
    again = PlaceboPool(capacity=4, min_size=2)
    again.load_state_dict(state)
    assert [again.draw("n", "g0", "t0") for _ in range(5)] == [pool.draw("n", "g0", "t0") for _ in range(5)]
    for i in range(5):
        pool.add(f"n{i}", f"h{i}", f"k{i}")
    assert len(pool) == 4  # bounded


def test_prefix_cached_teacher_equals_the_packed_rows(tiny_tokenizer, model):
    from mimesis_pl.rl.teacher_forward import teacher_logprobs_prefix_cached

    tok = tiny_tokenizer
    trajs = episodes(tok, 2)
    renderer = ChatRenderer(tok)
    render = lambda n: renderer.message_delta_ids([{"role": "user", "content": "."}], {"role": "user", "content": n})  # noqa: E731
    real_notes = [{0: NOTE, 2: "Commit."}, {1: NOTE}]
    placebo_notes = [{0: "Be brief."}, {1: "Think about colours."}]
    for traj, rn, pn in zip(trajs, real_notes, placebo_notes):
        real = build_teacher_rows(traj.input_ids, traj.turn_spans, rn, render, 10_000, prompt_len=0)
        plac = build_teacher_rows(traj.input_ids, traj.turn_spans, pn, render, 10_000, prompt_len=0)
        got_real, got_plac = teacher_logprobs_prefix_cached(
            model, torch.tensor(traj.input_ids), traj.turn_spans, [real, plac], fill=(0.0, float("nan"))
        )
        L = len(traj.input_ids)
        want_real = teacher_logprobs(model, pack_teacher_rows([real], L, tok.pad_token_id))[0]
        want_plac = teacher_logprobs(model, pack_teacher_rows([plac], L, tok.pad_token_id), fill=float("nan"))[0]
        assert torch.allclose(got_real, want_real, atol=1e-4)
        assert torch.allclose(got_plac, want_plac, atol=1e-4, equal_nan=True)
