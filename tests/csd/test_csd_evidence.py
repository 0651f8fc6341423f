"""Turn ↔ reply alignment (in-process record and shim entries) and turn selection, on hand-worked episodes."""

from __future__ import annotations

import pytest
from csd_fixtures import entry, make_trajectory, turn

from mimesis_pl.csd.evidence import (
    TurnEvidence,
    rank_turns,
    replies_from_shim,
    select_turns,
    turn_evidence,
)
from mimesis_pl.envs import PrivilegedTurn

R0 = "R0: the entity is round; the question is about shape."
R3 = "R3: the entity is fuzzy; the question is about texture."

# Turn 0 asks (reply with reasoning), turn 1 makes a malformed call (no user reply), turn 2 asks
# (reply without reasoning), turn 3 asks (reply with reasoning), turn 4 guesses (judged by the gym).
STEPS = [
    (turn("action", "Is it round?"), "Yes."),
    ("no tool call here", "Error: No tool call found in your reply."),
    (turn("action", "Is it red?"), "No."),
    (turn("action", "Is it fuzzy?"), "Yes."),
    (turn("answer", "Kiwi"), None),
]
RECORD = [
    PrivilegedTurn("Yes.", R0),
    PrivilegedTurn(),
    PrivilegedTurn("No.", None),
    PrivilegedTurn("Yes.", R3),
    PrivilegedTurn(),
]
EXPECTED = [
    TurnEvidence(0, "", "Yes."),
    TurnEvidence(1, R0, ""),  # the agent read reply 0 (with reasoning) before acting at turn 1
    TurnEvidence(2, "", "No."),  # turn 1 made no reply: R0 is not carried forward
    TurnEvidence(3, "", "Yes."),  # reply 2 carried no reasoning
    TurnEvidence(4, R3, ""),
]


def test_in_process_record_alignment():
    traj = make_trajectory(STEPS, RECORD)
    assert turn_evidence(traj) == EXPECTED
    assert [e.evidenced for e in EXPECTED] == [False, True, False, False, True]


def test_record_as_mappings_is_accepted():
    records = [{"reply": r.reply, "reasoning": r.reasoning} for r in RECORD]
    assert turn_evidence(make_trajectory(STEPS, records)) == EXPECTED


def test_shim_entries_align_by_counting_turns_that_made_a_reply():
    # Through the shim the in-process record holds the public replies only (the shim stripped the reasoning).
    record = [PrivilegedTurn(r.reply, None) if r.reply is not None else PrivilegedTurn() for r in RECORD]
    traj = make_trajectory(STEPS, record)
    entries = [
        entry(0, "Yes.", R0),
        entry(1, "", "the user produced only reasoning; the HTTP user retried"),  # never shown to the agent
        entry(2, "No."),  # a reply without reasoning still has its entry
        entry(3, "Yes.", R3),
    ]
    assert turn_evidence(traj, entries) == EXPECTED
    alignment = replies_from_shim(traj, entries)
    assert alignment.misaligned == 0 and alignment.unmatched_entries == 1
    assert [r is not None for r in alignment.replies] == [True, False, True, True, False]


def test_shim_entry_order_follows_index_not_list_order():
    record = [PrivilegedTurn(r.reply, None) if r.reply is not None else PrivilegedTurn() for r in RECORD]
    entries = [entry(3, "Yes.", R3), entry(0, "Yes.", R0), entry(2, "No.")]
    assert turn_evidence(make_trajectory(STEPS, record), entries) == EXPECTED


def test_a_stray_entry_is_skipped_and_a_missing_one_never_shifts_thoughts():
    record = [PrivilegedTurn(r.reply, None) if r.reply is not None else PrivilegedTurn() for r in RECORD]
    traj = make_trajectory(STEPS, record)
    # A judge call sent through the episode's URL left an entry between replies 0 and 2.
    stray = [entry(0, "Yes.", R0), entry(1, "SCORE: 7", "judge reasoning"), entry(2, "No."), entry(3, "Yes.", R3)]
    assert turn_evidence(traj, stray) == EXPECTED
    assert replies_from_shim(traj, stray).unmatched_entries == 1
    # Reply 2's entry is gone: turn 2 keeps its public reply, turn 3 is still matched to its own entry.
    missing = [entry(0, "Yes.", R0), entry(2, "Yes.", R3)]
    alignment = replies_from_shim(traj, missing)
    assert alignment.misaligned == 1
    evidence = turn_evidence(traj, missing)
    assert evidence[3] == TurnEvidence(3, "", "Yes.") and evidence[4] == TurnEvidence(4, R3, "")


def test_entries_cut_at_the_front_give_no_reasoning_at_all():
    record = [PrivilegedTurn(r.reply, None) if r.reply is not None else PrivilegedTurn() for r in RECORD]
    traj = make_trajectory(STEPS, record)
    entries = [entry(1, "No."), entry(2, "Yes.", R3)]  # entry 0 was dropped by the shim
    evidence = turn_evidence(traj, entries)
    assert not any(e.evidenced for e in evidence)
    assert [e.reply_after for e in evidence] == ["Yes.", "", "No.", "Yes.", ""]
    assert replies_from_shim(traj, entries).misaligned == 3


def test_without_a_record_entries_match_the_tool_messages_by_content():
    traj = make_trajectory(STEPS, [])
    entries = [entry(0, "Yes.", R0), entry(1, "No."), entry(2, "Yes.", R3)]
    evidence = turn_evidence(traj, entries)
    # The last reply answers turn 3 whose tool message is "Yes."; the final turn has no tool message.
    assert evidence == EXPECTED


def test_a_turn_cut_by_the_length_limit_has_no_record_and_no_reply():
    steps = [(turn("action", "Is it round?"), "Yes."), ("<think>cut mid", None)]
    traj = make_trajectory(steps, [PrivilegedTurn("Yes.", R0)])
    assert turn_evidence(traj) == [TurnEvidence(0, "", "Yes."), TurnEvidence(1, R0, "")]


def test_selection_puts_evidenced_turns_first_and_caps_at_k():
    # Evidenced: 1 (no reply after), 4 (no reply), 6 (reply after); unevidenced: 0, 2, 3, 5.
    thought = "private"
    steps, record = [], []
    plan = [
        ("Yes.", thought),
        (None, None),
        ("No.", None),
        ("Yes.", thought),
        (None, None),
        ("Maybe.", thought),
        ("Yes.", None),
    ]
    for k, (reply, reasoning) in enumerate(plan):
        steps.append((turn("action", f"Question {k}?"), reply or "Error: bad call"))
        record.append(PrivilegedTurn(reply, reasoning) if reply else PrivilegedTurn())
    traj = make_trajectory(steps, record)
    evidence = turn_evidence(traj)
    assert [e.turn for e in evidence if e.evidenced] == [1, 4, 6]
    assert rank_turns(evidence) == [6, 1, 4]  # with the next reply first, then ascending
    assert select_turns(traj, None, k=16) == [6, 1, 4]
    assert select_turns(traj, None, k=2) == [6, 1]
    assert select_turns(traj, None, k=0) == []
    assert select_turns(traj, None, k=16, require_evidence=False) == [6, 1, 4, 0, 2, 3, 5]
    assert select_turns(traj, None, k=4, require_evidence=False) == [6, 1, 4, 0]
    with pytest.raises(ValueError, match="k"):
        select_turns(traj, None, k=-1)


def test_selection_is_deterministic():
    traj = make_trajectory(STEPS, RECORD)
    assert {tuple(select_turns(traj, None, 3, require_evidence=False)) for _ in range(5)} == {(1, 4, 0)}
