"""The multi-turn loop, checked token by token with a scripted engine."""

from __future__ import annotations

import asyncio

from rollout_fixtures import ScriptedEngine, say, telepathy_row

from mimesis_pl.chat import ChatRenderer
from mimesis_pl.envs import EnvironmentManager, interact_tool_schema
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.users.scripted import ScriptedUser

E = "<|im_end|>"


def make_rollout(tok, texts, cut=None, max_length=4096, max_turns=16, **template_kwargs):
    engine = ScriptedEngine(tok, texts, cut=cut)
    manager = EnvironmentManager(users=ScriptedUser(), max_turns=max_turns)
    loop = MultiTurnRollout(
        engine, tok, manager, SamplingParams(max_new_tokens=64), max_length=max_length, template_kwargs=template_kwargs
    )
    return loop, engine


def test_episode_ids_masks_spans_and_headers_are_exact(tiny_tokenizer):
    tok = tiny_tokenizer
    texts = [say("action", "Is it a fruit?"), say("answer", "Banana"), say("answer", "Kiwi")]
    loop, engine = make_rollout(tok, texts)
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g0", gen_uid="g0-0"))

    assert traj.status == "finished"
    assert traj.turn_rewards == [0.0, 0.0, 1.0]
    assert len(traj.turn_spans) == 3
    header = tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    for span, text, prompt in zip(traj.turn_spans, texts, engine.calls):
        # the engine saw exactly the ids before the turn, ending with the assistant header
        assert traj.input_ids[: span.start] == prompt
        assert traj.input_ids[span.header_start : span.start] == header
        # the turn's ids are the sampled ids, untouched, and only they are in the response mask
        assert tok.decode(traj.input_ids[span.start : span.end]) == text + E
        assert traj.response_mask[span.start : span.end] == [1] * (span.end - span.start)
    assert sum(traj.response_mask) == sum(s.end - s.start for s in traj.turn_spans)
    assert traj.rollout_logprobs[traj.turn_spans[0].start] == -0.5 and traj.rollout_logprobs[0] == 0.0
    assert traj.turn_index()[traj.turn_spans[1].start] == 1 and traj.turn_index()[0] == -1

    # the whole sequence is the full render of the public conversation (token-in/token-out is exact)
    renderer = ChatRenderer(tok, tools=[interact_tool_schema(("action", "answer"))])
    full = renderer.render(traj.messages)
    assert full.input_ids[: len(traj.input_ids)] == traj.input_ids
    assert tok.decode(full.input_ids[len(traj.input_ids) :]) == "\n"
    # and the SFT mask of that conversation trains exactly what the policy generated
    assert full.loss_mask[: len(traj.input_ids)] == traj.response_mask
    assert traj.prompt_length == len(renderer.prompt_ids(traj.messages[:2]))


def test_no_privileged_text_reaches_the_agent(tiny_tokenizer):
    texts = [say("action", "Is it fuzzy?"), say("action", "Is it green inside?"), say("answer", "Kiwi")]
    loop, _ = make_rollout(tiny_tokenizer, texts)
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))
    reasons = [p.reasoning for p in traj.privileged if p.reasoning]
    assert reasons, "the scripted user must have private reasoning for this test to mean anything"
    seen = tiny_tokenizer.decode(traj.input_ids)
    for reason in reasons:
        assert reason not in seen
    assert "fuzzy fruit with bright green flesh" not in seen  # the hidden description


def test_length_cut_turn_is_truncated_not_sent(tiny_tokenizer):
    loop, engine = make_rollout(tiny_tokenizer, [say("action", "Is it a fruit?"), say("answer", "Kiwi")], cut={1})
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))
    assert traj.status == "truncated"
    assert traj.finish_reasons == ["stop", "length"]
    assert traj.turn_rewards == [0.0, 0.0]
    assert len(engine.calls) == 2


def test_max_turns_and_max_length(tiny_tokenizer):
    loop, _ = make_rollout(tiny_tokenizer, [say("action", "Is it red?")], max_turns=3)
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))
    assert traj.status == "max_turns" and traj.num_turns == 3
    loop, _ = make_rollout(tiny_tokenizer, [say("action", "Is it red?")], max_length=420)
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))
    assert traj.status == "truncated" and len(traj.input_ids) <= 420


def test_thinking_template_keeps_sampled_ids(tiny_tokenizer):
    tok = tiny_tokenizer
    # with enable_thinking the header pre-fills "<think>": the policy writes the rest of the block
    texts = [
        "\nask\n</think>\n\n" + say("action", "Is it a fruit?").split("\n", 1)[1],
        "\nsure\n</think>\n\n" + say("answer", "Kiwi").split("\n", 1)[1],
    ]
    loop, engine = make_rollout(tok, texts, enable_thinking=True)
    traj = asyncio.run(loop.run_episode(telepathy_row(), group_id="g", gen_uid="g-0"))
    assert traj.turn_rewards == [0.0, 1.0]
    for span in traj.turn_spans:
        assert tok.decode(traj.input_ids[span.header_start : span.start]) == "<|im_start|>assistant\n<think>"


def test_batch_runs_episodes_concurrently(tiny_tokenizer):
    loop, engine = make_rollout(tiny_tokenizer, [say("answer", "Kiwi")])
    trajs, timings = asyncio.run(
        loop.run_batch([telepathy_row(), telepathy_row("Kiwi")], n_samples=3, group_ids=["a", "b"])
    )
    assert [t.group_id for t in trajs] == ["a"] * 3 + ["b"] * 3
    assert len({t.episode_id for t in trajs}) == 6
    assert all(t.turn_rewards == [1.0] for t in trajs)
    assert timings.rollout > 0


def test_turn_seed_is_a_pure_function_of_episode_seed_and_turn():
    from mimesis_pl.rollout.loop import turn_seed

    assert turn_seed(0, 0) == 1
    assert turn_seed(0, 2) == 2 * 7_919 + 1
    assert turn_seed(5, 1) == 5 * 1_000_003 + 7_919 + 1
    assert turn_seed(2**62 - 1, 0) == ((2**62 - 1) * 1_000_003 + 1) % 2**62


class _EchoSeedEngine:
    """Answers with a question naming the seed it sampled with (drawn like the HF engine when none is set);
    ``delay(k)`` seconds before answering call ``k``, so replies come back in a chosen order."""

    def __init__(self, tokenizer, delay) -> None:
        self.tokenizer, self.delay, self.calls = tokenizer, delay, 0

    async def generate(self, prompt_ids, params):
        from mimesis_pl.rollout.engines.base import GenerationResult, with_drawn_seed

        params = with_drawn_seed(params)
        k, self.calls = self.calls, self.calls + 1
        await asyncio.sleep(self.delay(k))
        text = say("action", f"Is it number {params.seed}?")  # episodes end at max_turns
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [params.stop_token_ids[0]]
        return GenerationResult(ids, [-0.5] * len(ids), "stop")

    def close(self) -> None:
        pass


def test_samples_do_not_depend_on_the_order_replies_come_back(tiny_tokenizer):
    import torch

    def run(delay):
        torch.manual_seed(0)
        engine = _EchoSeedEngine(tiny_tokenizer, delay)
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=3)
        loop = MultiTurnRollout(engine, tiny_tokenizer, manager, SamplingParams(max_new_tokens=64))
        trajectories, _ = asyncio.run(loop.run_batch([telepathy_row(), telepathy_row()], 2, group_ids=["a", "b"]))
        return {t.gen_uid: [m["content"] for m in t.messages if m["role"] == "assistant"] for t in trajectories}

    forward = run(lambda k: 0.002 * (k % 4))
    backward = run(lambda k: 0.002 * (3 - k % 4))  # the second turns reach the engine in the opposite order
    assert forward == backward
    assert len({text for texts in forward.values() for text in texts}) == sum(map(len, forward.values()))


def test_episode_seed_is_a_pure_function_of_run_seed_group_and_sample():
    import hashlib

    from mimesis_pl.rollout.loop import derive_episode_seed, episode_seed

    # by hand: the first 8 bytes of sha256("0/s3-b1-p2/1"), big-endian, modulo 2**62
    want = int.from_bytes(hashlib.sha256(b"0/s3-b1-p2/1").digest()[:8], "big") % 2**62
    assert episode_seed(0, "s3-b1-p2", 1) == want
    seeds = {episode_seed(r, g, k) for r in (0, 1) for g in ("s3-b1-p2", "s3-b1-p3", "s4-b1-p2") for k in (0, 1)}
    assert len(seeds) == 12
    assert derive_episode_seed(SamplingParams(max_new_tokens=4), 0, "s3-b1-p2", 1) == want
    assert derive_episode_seed(SamplingParams(max_new_tokens=4, seed=7), 0, "s3-b1-p2", 1) is None


def test_a_batch_with_group_ids_samples_the_same_whatever_torchs_rng_holds(tiny_tokenizer):
    """What a resumed run needs (D20): the episodes depend on the run seed and the group ids, not on how many
    numbers torch's RNG gave out before (a resumed process has given out none)."""
    import torch

    def run(draws_before: int, run_seed: int = 0):
        torch.manual_seed(123)
        torch.rand(draws_before)
        engine = _EchoSeedEngine(tiny_tokenizer, lambda k: 0.0)
        manager = EnvironmentManager(users=ScriptedUser(), max_turns=2)
        loop = MultiTurnRollout(engine, tiny_tokenizer, manager, SamplingParams(max_new_tokens=64), run_seed=run_seed)
        trajectories, _ = asyncio.run(loop.run_batch([telepathy_row(), telepathy_row()], 2, group_ids=["a", "b"]))
        return [(t.episode_id, [m["content"] for m in t.messages if m["role"] == "assistant"]) for t in trajectories]

    assert run(0) == run(5)
    assert run(0) != run(0, run_seed=1)
