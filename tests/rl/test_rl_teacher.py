"""Teacher rows: token splicing, packing without empty rows, and the log-prob gather."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mimesis_pl.rl import (
    TeacherRows,
    build_teacher_rows,
    gather_teacher_logprobs,
    pack_teacher_rows,
    teacher_logits_to_keep,
    token_logprobs_from_logits,
)
from mimesis_pl.spans import TurnSpan

# A fake chat vocabulary: 10 system, 60 user/tool header, 50 51 assistant header, 99 end of message.
# Student sequence (absolute positions):
#   0-6   10 11 12 | 60 13 14 99          system + task message
#   7-8   50 51                           assistant header (generation prompt, inside the prompt)
#   9-12  20 21 22 99                     turn 0, generated
#   13-16 60 30 31 99                     tool reply
#   17-18 50 51                           header
#   19-21 23 24 99                        turn 1, generated
#   22-24 60 32 99                        tool reply
#   25-26 50 51                           header
#   27-28 25 99                           turn 2, generated
IDS = [
    10,
    11,
    12,
    60,
    13,
    14,
    99,
    50,
    51,
    20,
    21,
    22,
    99,
    60,
    30,
    31,
    99,
    50,
    51,
    23,
    24,
    99,
    60,
    32,
    99,
    50,
    51,
    25,
    99,
]
PROMPT_LEN = 9
TURNS = [TurnSpan(7, 9, 13), TurnSpan(17, 19, 22), TurnSpan(25, 27, 29)]
PAD = 0


def render_note(text: str) -> list[int]:
    """A complete user message: header, one id per character, end."""
    return [60, *(ord(c) for c in text), 99]


def test_row_hand_worked():
    # note "ab" → [60, 97, 98, 99] (4 ids) spliced before turn 1's header at 17:
    # row = IDS[0:17] + [60, 97, 98, 99] + IDS[17:22], length 17 + 4 + 5 = 26
    # student tokens 19, 20, 21 (response positions 10, 11, 12) sit at row positions 23, 24, 25
    out = build_teacher_rows(IDS, TURNS, {1: "ab"}, render_note, width=64, prompt_len=PROMPT_LEN)
    assert out.rows[0].tolist() == IDS[:17] + [60, 97, 98, 99] + IDS[17:22]
    n_resp = len(IDS) - PROMPT_LEN  # 20
    expected_map = [0] * n_resp
    expected_map[10:13] = [23, 24, 25]
    assert out.index_map.tolist() == expected_map
    assert out.row_idx.tolist() == [0] * n_resp
    assert out.teacher_mask.nonzero().flatten().tolist() == [10, 11, 12]
    assert out.skipped == 0
    assert out.row_turns == [1]


def test_teacher_context_is_the_student_prefix_and_response_is_copied():
    notes = {0: "hint zero", 1: "a", 2: "later"}
    out = build_teacher_rows(IDS, TURNS, notes, render_note, width=64, prompt_len=PROMPT_LEN)
    ids = torch.tensor(IDS)
    for row, t in zip(out.rows, out.row_turns):
        span, note = TURNS[t], render_note(notes[t])
        # the prefix is the student's exact tokens, earlier tool calls and replies included
        assert torch.equal(row[: span.header_start], ids[: span.header_start])
        assert row[span.header_start : span.header_start + len(note)].tolist() == note
        # header and generated tokens copied unchanged
        assert torch.equal(row[span.header_start + len(note) :], ids[span.header_start : span.end])
    # through the maps, every masked response token is byte-identical to the student's token
    for i in out.teacher_mask.nonzero().flatten().tolist():
        row = out.rows[int(out.row_idx[i])]
        assert int(row[out.index_map[i]]) == IDS[PROMPT_LEN + i]
    # exactly the generated tokens of the noted turns are masked (not headers, not tool replies)
    generated = [j - PROMPT_LEN for s in TURNS for j in range(s.start, s.end)]
    assert out.teacher_mask.nonzero().flatten().tolist() == generated
    assert out.row_idx[out.teacher_mask].tolist() == [0] * 4 + [1] * 3 + [2] * 2


def test_null_note_reproduces_the_student_prefix():
    # a note that renders to no tokens gives the student's own sequence up to the turn's end
    out = build_teacher_rows(IDS, TURNS, {0: "x", 1: "x", 2: "x"}, lambda _: [], width=64, prompt_len=PROMPT_LEN)
    for row, span in zip(out.rows, TURNS):
        assert row.tolist() == IDS[: span.end]


def test_over_wide_rows_are_skipped_and_counted():
    # width 25: turn 0 row = 13 + 4 = 17 ✓; turn 1 row = 22 + 3 = 25 ✓ ("a" → 3 ids);
    # turn 2 row = 29 + 7 = 36 ✗ ("abcde" → 7 ids)
    out = build_teacher_rows(IDS, TURNS, {0: "ab", 1: "a", 2: "abcde"}, render_note, width=25, prompt_len=PROMPT_LEN)
    assert out.row_turns == [0, 1]
    assert out.skipped == 1
    assert not out.teacher_mask[TURNS[2].start - PROMPT_LEN :].any()
    narrow = build_teacher_rows(IDS, TURNS, {0: "ab", 1: "a"}, render_note, width=16, prompt_len=PROMPT_LEN)
    assert narrow.rows == [] and narrow.skipped == 2 and not narrow.teacher_mask.any()


def test_empty_notes_are_skipped_without_counting():
    out = build_teacher_rows(IDS, TURNS, {0: "", 2: None}, render_note, width=64, prompt_len=PROMPT_LEN)
    assert out.rows == [] and out.skipped == 0 and not out.teacher_mask.any()


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"notes": {3: "x"}}, "notes has key 3"),
        ({"prompt_len": 30}, "prompt_len"),
        ({"prompt_len": 10}, r"turns\[0\]"),
        ({"turns": [TurnSpan(7, 9, 13), TurnSpan(11, 19, 22)]}, "overlaps"),
        ({"turns": [TurnSpan(7, 9, 40)]}, r"turns\[0\]"),
        ({"turns": [(7, 9, 13)]}, "TurnSpan"),
        ({"width": 0}, "width"),
        ({"input_ids": [IDS]}, "input_ids"),
    ],
)
def test_build_bad_input(kwargs, needle):
    args = {
        "input_ids": IDS,
        "turns": TURNS,
        "notes": {0: "a"},
        "note_renderer": render_note,
        "width": 64,
        "prompt_len": PROMPT_LEN,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=needle):
        build_teacher_rows(**args)


def test_turn_span_validates():
    with pytest.raises(ValueError, match="header_start ≤ start < end"):
        TurnSpan(5, 3, 4)


# ---------------------------------------------------------------- packing


def _three_trajectories():
    a = build_teacher_rows(IDS, TURNS, {0: "ab", 2: "c"}, render_note, width=64, prompt_len=PROMPT_LEN)
    b = build_teacher_rows(IDS, TURNS, {}, render_note, width=64, prompt_len=PROMPT_LEN)
    c = build_teacher_rows(IDS, TURNS, {1: "abcdef"}, render_note, width=64, prompt_len=PROMPT_LEN)
    return [a, b, c]


def test_pack_has_no_empty_rows_and_left_pads():
    # rows: a/turn 0 = 13 + 4 = 17, a/turn 2 = 29 + 3 = 32, c/turn 1 = 22 + 8 = 30 → W = 32
    trajs = _three_trajectories()
    packed = pack_teacher_rows(trajs, response_length=24, pad_id=PAD)
    assert packed.input_ids.shape == (3, 32)
    assert packed.row_trajectory.tolist() == [0, 0, 2]
    assert packed.attention_mask.sum(1).tolist() == [17, 32, 30]
    assert packed.input_ids[0, :15].tolist() == [PAD] * 15
    assert packed.input_ids[0, 15:].tolist() == trajs[0].rows[0].tolist()
    # positions restart at 0 on the first real token: row 2 has 2 pads
    assert packed.position_ids[2].tolist() == [0, 0, *range(30)]
    # maps are [B, L] with L = 24 (the batch response length), right-padded with zeros
    assert packed.index_map.shape == (3, 24)
    assert not packed.teacher_mask[1].any()
    assert not packed.teacher_mask[:, 20:].any()
    # trajectory 2's row is packed row 2, shifted by its 2 pads: student token 19 (response 10) was at
    # 19 + 8 = 27 in its row → 29 after packing
    assert int(packed.row_idx[2, 10]) == 2 and int(packed.index_map[2, 10]) == 29


def test_packed_maps_point_at_the_student_tokens():
    trajs = _three_trajectories()
    packed = pack_teacher_rows(trajs, response_length=20, pad_id=PAD)
    b_idx, i_idx = packed.teacher_mask.nonzero(as_tuple=True)
    rows, cols = packed.row_idx[b_idx, i_idx], packed.index_map[b_idx, i_idx]
    assert packed.input_ids[rows, cols].tolist() == [IDS[PROMPT_LEN + i] for i in i_idx.tolist()]
    assert (packed.row_trajectory[rows] == b_idx).all()


def test_pack_without_rows():
    empty = build_teacher_rows(IDS, TURNS, {}, render_note, width=64, prompt_len=PROMPT_LEN)
    packed = pack_teacher_rows([empty, empty], response_length=20, pad_id=PAD)
    assert packed.input_ids.shape == (0, 0) and not packed.teacher_mask.any()
    assert teacher_logits_to_keep(packed) == 0
    out = gather_teacher_logprobs(torch.zeros(0, 0), packed, fill=float("nan"))
    assert out.shape == (2, 20) and torch.isnan(out).all()


def test_pack_rejects_short_response_length():
    with pytest.raises(ValueError, match="response_length"):
        pack_teacher_rows(_three_trajectories(), response_length=10, pad_id=PAD)


# ---------------------------------------------------------------- gather


def test_gather_reads_the_right_cell():
    # token_logprobs[r, c] = 1000·r + c: the gather must return 1000·row + column for each token
    packed = pack_teacher_rows(_three_trajectories(), response_length=20, pad_id=PAD)
    n_rows, width = packed.input_ids.shape
    codes = (1000 * torch.arange(n_rows)[:, None] + torch.arange(width)[None, :]).float()
    out = gather_teacher_logprobs(codes, packed, fill=-1.0)
    expected = torch.where(packed.teacher_mask, 1000 * packed.row_idx + packed.index_map, -1).float()
    assert torch.equal(out, expected)
    # trajectory 0, turn 0: student token 9 is response 0; its row (17 long) has 15 pads and the note
    # shifts it by 4 → column 15 + 9 + 4 = 28 of packed row 0
    assert float(out[0, 0]) == 28.0


class CausalToy(torch.nn.Module):
    """A deterministic causal 'language model' that ignores padding, for checking the gather."""

    def __init__(self, vocab: int = 128, dim: int = 8):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.emb = torch.randn(vocab, dim, generator=g, dtype=torch.float64)
        self.pos = torch.randn(64, dim, generator=g, dtype=torch.float64)
        self.out = torch.randn(dim, vocab, generator=g, dtype=torch.float64)

    def forward(self, input_ids, attention_mask, position_ids):
        hidden = (self.emb[input_ids] * attention_mask[..., None]).cumsum(dim=1) + self.pos[position_ids]
        return torch.tanh(hidden) @ self.out


def _reference_logprob(model, context: list[int], token: int) -> float:
    ids = torch.tensor([context])
    logits = model(ids, torch.ones_like(ids), torch.arange(len(context))[None])
    return float(torch.log_softmax(logits[0, -1], -1)[token])


def test_gather_returns_the_teacher_logprob_of_each_student_token():
    model = CausalToy()
    notes = [{0: "ab", 2: "c"}, {}, {1: "abcdef"}]
    trajs = [build_teacher_rows(IDS, TURNS, n, render_note, width=64, prompt_len=PROMPT_LEN) for n in notes]
    packed = pack_teacher_rows(trajs, response_length=20, pad_id=PAD)
    all_logits = model(packed.input_ids, packed.attention_mask, packed.position_ids)
    keep = teacher_logits_to_keep(packed)
    assert keep < all_logits.shape[1]
    # the trailing window (what logits_to_keep=keep returns) gives the same values as all positions
    teacher = gather_teacher_logprobs(token_logprobs_from_logits(all_logits[:, -keep:], packed.input_ids), packed)
    full = gather_teacher_logprobs(token_logprobs_from_logits(all_logits, packed.input_ids), packed)
    torch.testing.assert_close(teacher, full)

    for b, traj_notes in enumerate(notes):
        for t, text in traj_notes.items():
            span = TURNS[t]
            for j in range(span.start, span.end):
                # teacher context written out by hand: prefix, note, header and generated tokens before j
                context = IDS[: span.header_start] + render_note(text) + IDS[span.header_start : j]
                expected = _reference_logprob(model, context, IDS[j])
                assert float(teacher[b, j - PROMPT_LEN]) == pytest.approx(expected, abs=1e-6)
    assert (teacher[~packed.teacher_mask] == 0).all()


def test_gather_rejects_a_window_that_is_too_short():
    packed = pack_teacher_rows(_three_trajectories(), response_length=20, pad_id=PAD)
    keep = teacher_logits_to_keep(packed)
    with pytest.raises(ValueError, match=f"need {keep}"):
        gather_teacher_logprobs(torch.zeros(packed.input_ids.shape[0], keep - 1), packed)
    with pytest.raises(ValueError, match="token_logprobs"):
        gather_teacher_logprobs(torch.zeros(1, keep), packed)


def test_token_logprobs_from_logits_hand_worked():
    # one row [5, 1, 2], vocab 3, keep 2: column 1 is log p(token 2 | logits of position 1)
    # logits[position 1] = [0, ln 3, 0] → p(2) = 1/(1 + 3 + 1) = 0.2; column 0 is NaN
    logits = torch.tensor([[[0.0, float(torch.log(torch.tensor(3.0))), 0.0], [9.0, 9.0, 9.0]]])
    out = token_logprobs_from_logits(logits, torch.tensor([[5, 1, 2]]))
    assert torch.isnan(out[0, 0])
    assert float(out[0, 1]) == pytest.approx(float(torch.log(torch.tensor(0.2))), abs=1e-6)


def test_token_topk_from_logits_hand_worked():
    # one row, vocab 3, keep 2: column 1 is the distribution of token 2, from the logits of position 1
    # logits[position 1] = ln [1, 3, 2] → p = [1/6, 1/2, 1/3]; top-2 = ids [1, 2], log-probs [ln 1/2, ln 1/3]
    from mimesis_pl.rl.teacher import token_topk_from_logits

    logits = torch.log(torch.tensor([[[1.0, 3.0, 2.0], [5.0, 1.0, 1.0]]]))
    ids, logprobs = token_topk_from_logits(logits, 2)
    assert ids.tolist() == [[[0, 0], [1, 2]]]  # column 0: its logit is outside the window
    assert torch.isnan(logprobs[0, 0]).all()
    torch.testing.assert_close(logprobs[0, 1], torch.log(torch.tensor([0.5, 1 / 3])))
    with pytest.raises(ValueError, match="1 ≤ k ≤ V"):
        token_topk_from_logits(logits, 4)


def test_gather_reads_the_right_cell_of_k_values_per_token():
    # [R, W, 2] codes (1000·r + c, −(1000·r + c)): a top-k gather moves whole K-vectors, with the fill elsewhere
    packed = pack_teacher_rows(_three_trajectories(), response_length=20, pad_id=PAD)
    n_rows, width = packed.input_ids.shape
    codes = 1000 * torch.arange(n_rows)[:, None] + torch.arange(width)[None, :]
    out = gather_teacher_logprobs(torch.stack([codes, -codes], -1), packed, fill=0)
    expected = torch.where(packed.teacher_mask, 1000 * packed.row_idx + packed.index_map, 0)
    assert out.dtype == torch.long and out.shape == (*packed.teacher_mask.shape, 2)
    assert torch.equal(out, torch.stack([expected, -expected], -1))


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_random_trajectories_round_trip(data):
    # random turn layouts and notes: the packed maps always point at the student's own tokens
    trajs, sequences = [], []
    for _ in range(data.draw(st.integers(1, 4))):
        prompt = data.draw(st.lists(st.integers(1, 90), min_size=2, max_size=6))
        ids, turns = list(prompt), []
        for _ in range(data.draw(st.integers(1, 4))):
            header_start = len(ids)
            ids += [50, 51]
            start = len(ids)
            ids += data.draw(st.lists(st.integers(1, 90), min_size=1, max_size=5))
            turns.append(TurnSpan(header_start, start, len(ids)))
            ids += data.draw(st.lists(st.integers(1, 90), min_size=0, max_size=3))
        notes = {t: data.draw(st.text("xyz", max_size=4)) for t in range(len(turns)) if data.draw(st.booleans())}
        # the first header may belong to the prompt (generation prompt) or to the response
        prompt_len = data.draw(st.sampled_from([len(prompt), turns[0].start]))
        width = data.draw(st.integers(5, 40))
        trajs.append(build_teacher_rows(ids, turns, notes, render_note, width=width, prompt_len=prompt_len))
        sequences.append((ids, prompt_len))
        accepted = sum(1 for n in notes.values() if n)
        assert len(trajs[-1].rows) + trajs[-1].skipped == accepted
        assert all(len(r) <= width for r in trajs[-1].rows)
    length = max(len(ids) - p for ids, p in sequences)
    packed = pack_teacher_rows(trajs, response_length=length, pad_id=PAD)
    assert packed.input_ids.shape[0] == sum(len(t.rows) for t in trajs)
    assert (packed.attention_mask.sum(1) > 0).all()
    for b, i in packed.teacher_mask.nonzero().tolist():
        ids, prompt_len = sequences[b]
        assert int(packed.input_ids[packed.row_idx[b, i], packed.index_map[b, i]]) == ids[prompt_len + i]


def test_teacher_rows_is_a_tuple():
    out = build_teacher_rows(IDS, TURNS, {0: "a"}, render_note, width=64, prompt_len=PROMPT_LEN)
    rows, index_map, row_idx, teacher_mask, skipped, row_turns = out
    assert isinstance(out, TeacherRows) and skipped == 0 and row_turns == [0]
