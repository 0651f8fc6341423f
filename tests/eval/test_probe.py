"""The exact decision probe: reading contexts, the ids it scores, its numbers against full forwards, the CLI."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

from mimesis_pl.chat.render import ChatRenderer
from mimesis_pl.envs.tool import interact_tool_schema
from mimesis_pl.eval.probe import (
    ProbeContextError,
    ProbeRow,
    decision_ids,
    policy_written_prefix,
    probe_decisions,
    read_probe_contexts,
    rollout_context_ids,
)

from .conftest import REPO

AGENT = REPO / "assets" / "agent-persuade-coached"
CALL = (
    '<tool_call>\n{"name": "interact_with_env", "arguments": {"choice": "action", "content": "What matters?"}}\n'
    "</tool_call>"
)


def context_rows() -> list[dict]:
    """Two hand-made decision contexts: one after a tool reply and a coach note, one at the opening turn."""
    tools = [interact_tool_schema()]
    first = {
        "id": "cue-test-1/1",
        "messages": [
            {"role": "system", "content": "You help a shopper choose a jacket."},
            {"role": "user", "content": "I need a jacket."},
            {"role": "assistant", "content": "<think>\nAsk what matters.\n</think>\n" + CALL},
            {"role": "tool", "content": "It will get wet a lot."},
            {"role": "user", "content": "Coach: ask about the material."},
        ],
        "tools": tools,
        "prefix": "<think>\nThe user cares about the",
        "candidates": {"material": " material", "colour": " colour", "size": " size", "price": " price"},
        "correct": "material",
    }
    second = {
        "id": "cue-test-2/0",
        "messages": [{"role": "user", "content": "Find me boots."}],
        "tools": tools,
        "prefix": "<think>\nFirst ask about the",
        "candidates": {"size": " size", "colour": " colour"},
        "correct": "colour",
    }
    return [first, second]


def write_rows(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def agent():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(AGENT), AutoTokenizer.from_pretrained(AGENT)


def test_reading_keeps_every_field_and_names_the_file_line_and_field_of_a_bad_row(tmp_path):
    rows = read_probe_contexts(write_rows(tmp_path / "ok.jsonl", context_rows()))
    assert [r.id for r in rows] == ["cue-test-1/1", "cue-test-2/0"]
    assert rows[0].candidates["material"] == " material" and rows[0].correct == "material"
    assert rows[0].tools == [interact_tool_schema()] and rows[0].source.endswith("ok.jsonl:1")

    good = context_rows()[0]
    broken = {
        "missing": ({k: v for k, v in good.items() if k != "correct"}, "field 'correct' is missing"),
        "unknown": ({**good, "correct": "weight"}, "field 'correct': 'weight' is not among the candidates"),
        "empty": ({**good, "candidates": {}}, "field 'candidates' is empty"),
        "blank": ({**good, "candidates": {"material": ""}}, "field 'candidates'"),
    }
    for name, (row, message) in broken.items():
        path = write_rows(tmp_path / f"{name}.jsonl", [context_rows()[1], row])
        with pytest.raises(ProbeContextError, match=f"{name}.jsonl:2: {message}"):
            read_probe_contexts(path)
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ProbeContextError, match="bad.jsonl:1: not valid JSON"):
        read_probe_contexts(tmp_path / "bad.jsonl")
    twice = write_rows(tmp_path / "twice.jsonl", [good, good])
    with pytest.raises(ProbeContextError, match="twice.jsonl:2: field 'id'"):
        read_probe_contexts(twice)
    with pytest.raises(ProbeContextError, match="no probe contexts"):
        read_probe_contexts(write_rows(tmp_path / "none.jsonl", []))


def test_the_prefix_loses_only_what_the_generation_prompt_already_ends_with():
    assert policy_written_prefix("<|im_start|>assistant\n<think>", "<think>\nThe") == "\nThe"
    assert policy_written_prefix("<|im_start|>assistant\n<think>\n", "<think>\nThe") == "The"
    assert policy_written_prefix("<|im_start|>assistant\n", "<think>\nThe") == "<think>\nThe"
    # not from the middle of a line, not whitespace alone
    assert policy_written_prefix("<|im_start|>assistant\n", "t\nThe") == "t\nThe"
    assert policy_written_prefix("<|im_start|>assistant\n", "\nThe") == "\nThe"


def test_the_decision_turn_starts_after_the_generation_prompt_without_a_second_think(agent):
    _, tok = agent
    row = ProbeRow(**context_rows()[0])
    tail = "<|im_start|>assistant\n<think>\nThe user cares about the"
    for kwargs, written in (({"enable_thinking": True}, "\nThe user cares about the"), ({}, row.prefix)):
        renderer = ChatRenderer(tok, **kwargs)
        before, candidates = decision_ids(renderer, row)
        context = rollout_context_ids(ChatRenderer(tok, tools=row.tools, **kwargs), row.messages)
        assert before == context + tok(written, add_special_tokens=False)["input_ids"]
        assert tok.decode(before).endswith(tail)  # "<think>" once, whether the prompt holds it or the policy writes it
        assert {name: tok.decode(ids) for name, ids in candidates.items()} == row.candidates


def test_context_ids_are_the_rollout_ids_prompt_then_generated_turns_then_continuations(agent):
    _, tok = agent
    row = ProbeRow(**context_rows()[0])
    renderer = ChatRenderer(tok, tools=row.tools, enable_thinking=True)
    opening = row.messages[:2]
    assert rollout_context_ids(renderer, opening) == renderer.prompt_ids(opening)
    # independently: the SFT render (assistant turns tokenised after their header), then the generation prompt
    rendered = renderer.render(row.messages).input_ids
    prompt = tok(renderer.generation_prompt, add_special_tokens=False)["input_ids"]
    assert rollout_context_ids(renderer, row.messages) == rendered + prompt


def full_forward_logp(model, ids: list[int], n: int) -> float:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return sum(float(logits[p - 1, ids[p]]) for p in range(len(ids) - n, len(ids)))


def test_batched_probe_equals_one_full_forward_per_candidate(agent, tmp_path):
    """In float64, so that 1e-5 tests the padding, masking and alignment rather than float32 rounding (a float32
    full forward of these ~250-token sequences is itself up to 2e-5 nats off the float64 one)."""
    model, tok = agent
    model = copy.deepcopy(model).double()
    renderer = ChatRenderer(tok, enable_thinking=True)
    rows = read_probe_contexts(write_rows(tmp_path / "c.jsonl", context_rows()))
    model.train()
    model.model.layers[0].eval()  # a submodule's own mode survives the probe
    result = probe_decisions(model, renderer, rows, batch_size=4)
    assert model.training and not model.model.layers[0].training and model.model.layers[1].training
    model.eval()
    assert result.n == 2
    for row, got in zip(rows, result.rows):
        before, candidates = decision_ids(renderer, row)
        want = {name: full_forward_logp(model, before + ids, len(ids)) for name, ids in candidates.items()}
        assert got.id == row.id and set(got.logp) == set(want)
        for name in want:
            assert abs(got.logp[name] - want[name]) < 1e-5, (row.id, name, got.logp[name], want[name])
        assert math.isclose(got.p_correct, math.exp(got.logp[row.correct]), rel_tol=1e-9)
        norm = math.exp(want[row.correct]) / sum(math.exp(v) for v in want.values())
        assert abs(got.p_correct_norm - norm) < 1e-5
    assert math.isclose(result.p_correct, (result.rows[0].p_correct + result.rows[1].p_correct) / 2)
    assert math.isclose(result.p_correct_norm, (result.rows[0].p_correct_norm + result.rows[1].p_correct_norm) / 2)
    one_by_one = probe_decisions(model, renderer, rows, batch_size=1)
    assert all(abs(a.logp[k] - b.logp[k]) < 1e-5 for a, b in zip(result.rows, one_by_one.rows) for k in a.logp)
    single = probe_decisions(agent[0], renderer, rows, batch_size=1)  # float32: within float32's rounding
    assert all(abs(a.logp[k] - b.logp[k]) < 1e-4 for a, b in zip(result.rows, single.rows) for k in a.logp)


def test_p_correct_norm_is_the_softmax_over_the_candidates_at_the_correct_one():
    from mimesis_pl.eval.probe import _row_probe

    row = ProbeRow("r", [{"role": "user", "content": "x"}], None, "", {"a": " a", "b": " b", "c": " c"}, "b")
    got = _row_probe(row, {"a": math.log(0.1), "b": math.log(0.2), "c": math.log(0.1)})
    assert math.isclose(got.p_correct, 0.2) and math.isclose(got.p_correct_norm, 0.5)


def test_a_lora_policy_is_probed_with_its_adapters(tmp_path, agent):
    from mimesis_pl.causal_lm import LoraSettings, load_causal_lm

    _, tok = agent
    renderer = ChatRenderer(tok, enable_thinking=True)
    rows = read_probe_contexts(write_rows(tmp_path / "c.jsonl", context_rows()))
    lora = load_causal_lm(str(AGENT), lora=LoraSettings(r=4, alpha=8, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    adapted = probe_decisions(lora, renderer, rows).rows[0].logp
    base = probe_decisions(load_causal_lm(str(AGENT)), renderer, rows).rows[0].logp
    merged = probe_decisions(lora.merge_and_unload(), renderer, rows).rows[0].logp
    assert all(abs(adapted[k] - merged[k]) < 1e-4 for k in adapted)
    assert any(abs(adapted[k] - base[k]) > 1e-3 for k in adapted)


def test_a_candidate_that_merges_with_the_prefix_is_an_error_naming_row_and_field(agent, tmp_path):
    _, tok = agent
    # the tiny tokenizer reads "the ma" + "terial" as "the" "material"-pieces: "ma" is not a token of the joint text
    row = {
        **context_rows()[1],
        "prefix": "<think>\nFirst ask about the ma",
        "candidates": {"m": "terial", "c": "t"},
        "correct": "m",
    }
    rows = read_probe_contexts(write_rows(tmp_path / "m.jsonl", [row]))
    with pytest.raises(ProbeContextError, match=r"m.jsonl:1: field 'candidates.m' \(row 'cue-test-2/0'\): 'terial'"):
        decision_ids(ChatRenderer(tok), rows[0])


def test_cli_prints_the_means_and_writes_every_row(tmp_path, capsys, agent):
    from mimesis_pl.cli import main

    model, tok = agent
    contexts = write_rows(tmp_path / "c.jsonl", context_rows())
    out = tmp_path / "out" / "probe.json"
    assert main(["probe", str(AGENT), "--contexts", contexts, "--out", str(out), "--enable-thinking", "true"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    want = probe_decisions(model.eval(), ChatRenderer(tok, enable_thinking=True), read_probe_contexts(contexts))
    assert printed["n"] == 2 and abs(printed["p_correct"] - want.p_correct) < 1e-6
    assert abs(printed["p_correct_norm"] - want.p_correct_norm) < 1e-6
    saved = json.loads(out.read_text())
    assert [r["id"] for r in saved["rows"]] == ["cue-test-1/1", "cue-test-2/0"] and set(saved["rows"][0]["logp"]) == {
        "material",
        "colour",
        "size",
        "price",
    }
    bad = write_rows(tmp_path / "bad.jsonl", [{**context_rows()[0], "correct": "weight"}])
    assert main(["probe", str(AGENT), "--contexts", bad]) == 2
    assert "bad.jsonl:1: field 'correct'" in capsys.readouterr().err
