"""coach_batch: counters, leak gate, failures, concurrency — and end to end through the real shim."""

from __future__ import annotations

import asyncio
import socket

from csd_fixtures import CoachServer, make_trajectory, turn
from rollout_fixtures import ScriptedEngine, say, telepathy_row

from mimesis_pl.csd import (
    COUNTERS,
    CoachResult,
    NoteRecord,
    OpenAICoach,
    ScriptedCoach,
    coach_batch,
    find_leaks,
    hidden_values,
    scan_for_privileged,
    turn_evidence,
)
from mimesis_pl.csd.coach import finish_note
from mimesis_pl.envs import EnvironmentManager, GymTask, PrivilegedTurn
from mimesis_pl.rollout.engines import SamplingParams
from mimesis_pl.rollout.loop import MultiTurnRollout
from mimesis_pl.rollout.services import ScriptedHTTPUserSettings, SimulatorServices
from mimesis_pl.shim.client import AsyncShimClient, ShimClient
from mimesis_pl.shim.guard import check_distinct_endpoints
from mimesis_pl.users.scripted import ScriptedUser

HIDDEN = {"env_name": "TelepathyGym", "title": "Kiwi", "ground_truth": "Kiwi - a small, brown, fuzzy fruit."}


def three_question_episode(episode_id="ep-a", status="finished"):
    """Turns 1, 2 and 3 are evidenced (each follows a reply with reasoning); turn 0 is not."""
    steps = [(turn("action", f"Question {k}?"), "Yes.") for k in range(3)] + [(turn("answer", "Kiwi"), None)]
    record = [PrivilegedTurn("Yes.", f"thought {k}") for k in range(3)] + [PrivilegedTurn()]
    return make_trajectory(steps, record, episode_id=episode_id, status=status)


class TableCoach:
    """Answers by turn number from a table: a raw text (through finish_note), an exception, or a result."""

    def __init__(self, table):
        self.table = table
        self.in_flight = self.peak = 0

    async def note(self, request):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            answer = self.table[request.turn]
            if isinstance(answer, Exception):
                raise answer
            if isinstance(answer, CoachResult):
                return answer
            return finish_note(answer, avoid=request.avoid)
        finally:
            self.in_flight -= 1


def test_every_outcome_is_counted_and_only_ok_notes_are_kept():
    trajs = [three_question_episode("ep-a"), three_question_episode("ep-b")]
    coach = TableCoach({1: "Ask what it looks like inside.", 2: "NONE", 3: RuntimeError("coach crashed")})
    records: list[NoteRecord] = []
    notes, counts = asyncio.run(coach_batch(trajs, [HIDDEN, HIDDEN], None, coach, k=16, records=records))
    assert notes == {(0, 1): "Ask what it looks like inside.", (1, 1): "Ask what it looks like inside."}
    assert list(counts) == list(COUNTERS)  # every counter present, zeros included
    assert counts["made"] == 2 and counts["skipped_none"] == 2 and counts["failed"] == 2
    assert counts["selected"] == 6 and counts["no_evidence"] == 2 and counts["capped"] == 0
    assert [(r.trajectory, r.turn, r.status) for r in records] == [
        (0, 1, "ok"),
        (0, 2, "none"),
        (0, 3, "failed"),
        (1, 1, "ok"),
        (1, 2, "none"),
        (1, 3, "failed"),
    ]
    assert all(r.evidenced for r in records) and [r.has_next_reply for r in records[:3]] == [True, True, False]


def test_empty_too_long_and_k_cap():
    coach = TableCoach({1: "", 2: "word " * 200, 3: "Fine."})
    notes, counts = asyncio.run(coach_batch([three_question_episode()], [HIDDEN], "trajectory", coach, k=2))
    # k=2 keeps turns 1 and 2 (both have a next reply); turn 3 is capped.
    assert notes == {} and counts["skipped_empty"] == 1 and counts["too_long"] == 1 and counts["capped"] == 1


def test_a_parroting_coach_is_caught_even_when_it_claims_ok():
    parrot = TableCoach({t: CoachResult("It is surely a kiwi fruit.", "ok") for t in range(4)})
    notes, counts = asyncio.run(coach_batch([three_question_episode()], [HIDDEN], None, parrot, k=16))
    assert notes == {} and counts["leaked"] == 3 and counts["made"] == 0
    honest = TableCoach({t: "It is surely a kiwi fruit." for t in range(4)})  # through finish_note
    records: list[NoteRecord] = []
    asyncio.run(coach_batch([three_question_episode()], [HIDDEN], None, honest, k=16, records=records))
    assert {r.status for r in records} == {"leaked"} and records[0].leaks == ("Kiwi",)


def test_leaked_notes_can_be_kept_flagged_for_the_ablation():
    coach = TableCoach({t: "It is surely a kiwi fruit." for t in range(4)})
    records: list[NoteRecord] = []
    notes, counts = asyncio.run(
        coach_batch([three_question_episode()], [HIDDEN], None, coach, k=16, drop_leaked=False, records=records)
    )
    assert len(notes) == 3 and counts["leaked"] == 3 and counts["made"] == 3
    assert all(r.status == "leaked" and r.note and r.leaks == ("Kiwi",) for r in records)


def test_a_value_the_agent_already_said_is_not_a_leak():
    steps = [(turn("action", "Is it a kiwi?"), "Yes."), (turn("answer", "Kiwi"), None)]
    traj = make_trajectory(steps, [PrivilegedTurn("Yes.", "It is a kiwi."), PrivilegedTurn()])
    coach = TableCoach({1: "They confirmed kiwi; answer with it."})
    notes, _ = asyncio.run(coach_batch([traj], [GymTask.from_row(telepathy_row())], None, coach))
    assert notes == {(0, 1): "They confirmed kiwi; answer with it."}


def test_concurrency_is_bounded_and_order_is_deterministic():
    trajs = [three_question_episode(f"ep-{i}") for i in range(5)]
    coach = TableCoach({t: f"Note for turn {t}." for t in range(4)})
    notes, counts = asyncio.run(coach_batch(trajs, [HIDDEN] * 5, None, coach, k=16, max_concurrency=2))
    assert coach.peak == 2 and counts["made"] == 15
    assert list(notes) == sorted(notes)


def test_failed_rollouts_and_foresight_turns():
    trajs = [three_question_episode("ok"), three_question_episode("bad", status="user_error")]
    coach = TableCoach({t: "Ask about texture." for t in range(4)})
    notes, counts = asyncio.run(coach_batch(trajs, [HIDDEN, HIDDEN], None, coach, k=16, require_evidence=False))
    assert counts["skipped_failed"] == 1 and counts["made"] == 4 and counts["foresight"] == 1
    assert (0, 0) in notes and counts["no_evidence"] == 0


def test_an_unreachable_shim_costs_notes_not_the_batch():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = ShimClient(f"http://127.0.0.1:{port}", timeout_s=2)
    notes, counts = asyncio.run(coach_batch([three_question_episode()], [HIDDEN], client, ScriptedCoach()))
    assert notes == {} and counts["privileged_unavailable"] == 1 and counts["selected"] == 0


def test_an_upstream_error_of_the_llm_coach_fails_one_note_not_the_batch():
    async def go():
        server = CoachServer([{"content": "Ask about the inside."}, {"status": 500}, {"content": "NONE"}])
        coach = OpenAICoach(await server.start(), "coach", max_retries=0)
        trajs = [three_question_episode("a")]
        result = await coach_batch(trajs, [HIDDEN], None, coach, k=16, max_concurrency=1)
        await coach.aclose()
        await server.stop()
        return result

    notes, counts = asyncio.run(go())
    assert notes == {(0, 1): "Ask about the inside."}
    assert (counts["made"], counts["failed"], counts["skipped_none"]) == (1, 1, 1)


# ------------------------------------------------------------------------------ end to end, real shim
SCRIPTS = [
    # a question, a turn with no tool call (no user reply), two questions, a correct guess
    [
        say("action", "Is it fuzzy?"),
        "I will simply guess now.",
        say("action", "Is it green inside?"),
        say("action", "Is it a vegetable?"),
        say("answer", "Kiwi"),
    ],
    [say("action", "Is it red?"), say("answer", "Banana"), say("action", "Is it a fruit?"), say("answer", "Kiwi")],
    [say("answer", "Kiwi")],  # no user reply at all
]


async def play_all(tokenizer, manager):
    trajectories, calls = [], []
    for k, texts in enumerate(SCRIPTS):
        engine = ScriptedEngine(tokenizer, texts)
        loop = MultiTurnRollout(engine, tokenizer, manager, SamplingParams(max_new_tokens=96))
        trajectories.append(await loop.run_episode(telepathy_row(), group_id=f"g{k}", gen_uid=f"g{k}-0"))
        calls += engine.calls
    return trajectories, calls


def test_coach_batch_through_the_real_shim(tiny_tokenizer):
    task = GymTask.from_row(telepathy_row())
    services = SimulatorServices(ScriptedHTTPUserSettings()).start()
    try:
        shim = ShimClient(services.shim_url)
        manager = EnvironmentManager(users=services.users(), shim_url=services.shim_url, no_tool_call="continue")
        trajs, calls = asyncio.run(play_all(tiny_tokenizer, manager))
        assert [t.status for t in trajs] == ["finished"] * 3
        # the HTTP user got public replies only; the reasoning sits in the shim
        assert all(p.reasoning is None for t in trajs for p in t.privileged)

        # Alignment through the shim equals the in-process user's, turn by turn.
        reference, _ = asyncio.run(
            play_all(tiny_tokenizer, EnvironmentManager(users=ScriptedUser(), no_tool_call="continue"))
        )
        for traj, ref in zip(trajs, reference):
            assert turn_evidence(traj, shim.privileged(traj.episode_id)) == turn_evidence(ref)
        evidence = turn_evidence(trajs[0], shim.privileged(trajs[0].episode_id))
        assert [e.evidenced for e in evidence] == [False, True, False, True, True]
        assert "fuzzy" in evidence[1].reasoning_before and "vegetable" in evidence[4].reasoning_before

        # No privileged text ever reached the agent's requests.
        reasonings = [e["reasoning"] for t in trajs for e in shim.privileged(t.episode_id) if e["reasoning"]]
        assert len(reasonings) == 5
        requests = [{"role": "prompt", "content": tiny_tokenizer.decode(ids)} for ids in calls]
        assert scan_for_privileged(requests, reasonings) == []

        notes, counts = asyncio.run(coach_batch(trajs, [task] * 3, shim, ScriptedCoach(), k=16))
        # evidenced: episode 0 turns 1, 3, 4; episode 1 turns 1, 3 (turn 2 follows a guess, not a reply)
        assert counts["made"] == 5 and counts["misaligned"] == 0 and counts["no_evidence"] == 5
        assert set(notes) == {(0, 1), (0, 3), (0, 4), (1, 1), (1, 3)}
        for (i, t), note in notes.items():
            at = [j for j, m in enumerate(trajs[i].messages) if m["role"] == "assistant"][t]
            seen = "\n".join(m["content"] for m in trajs[i].messages[:at])
            assert not find_leaks(note, hidden_values(task.hidden, public_text=seen)), note
            assert "kiwi" not in note.lower()
            assert "green" not in note.lower() or "green" in seen.lower()

        async def with_llm_coach():
            server = CoachServer([{"content": "Ask what colour it is inside."}])
            coach_url = await server.start()
            check_distinct_endpoints(services.shim_url, coach_url)
            coach = OpenAICoach(coach_url, "coach", max_retries=0)
            async with AsyncShimClient(services.shim_url) as reader:
                result = await coach_batch(trajs, [task] * 3, reader, coach, k=2, style="corrective")
            # the shim given by URL reads the same entries
            again = await coach_batch(trajs, [task] * 3, services.shim_url, coach, k=2, style="corrective")
            assert again == result
            await coach.aclose()
            await server.stop()
            return result, server

        (notes, counts), server = asyncio.run(with_llm_coach())
        assert counts["made"] == 4 and counts["capped"] == 1  # k=2 leaves out episode 0's turn 4
        assert set(notes.values()) == {"Ask what colour it is inside."}
        prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
        assert any(evidence[1].reasoning_before in p for p in prompts)
    finally:
        services.stop()


def test_tau_trajectories_are_skipped_as_the_reference_does():
    """TauGym is not episode-scoped (A55): CSD leaves its trajectories out and counts them."""
    trajs = [three_question_episode("tau"), three_question_episode("kiwi")]
    coach = TableCoach({t: "Ask about texture." for t in range(4)})
    tau_hidden = {"env_name": "TauGym", "id": "retail-000", "ground_truth": ""}
    notes, counts = asyncio.run(coach_batch(trajs, [tau_hidden, HIDDEN], None, coach, k=16))
    assert counts["skipped_gym"] == 1 and {i for i, _ in notes} == {1}
