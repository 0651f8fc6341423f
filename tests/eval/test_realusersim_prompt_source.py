"""RealUserSim's simulator prompt: the benchmark's own text read from the user's template file (never shipped),
our paraphrase as the offline default, and every report saying which one ran and whether FI is comparable."""

from __future__ import annotations

import asyncio

import pytest

from mimesis_pl.eval.failures import RetryPolicy
from mimesis_pl.eval.simulator.base import SuiteContext
from mimesis_pl.eval.simulator.realusersim import prompt as prompt_module
from mimesis_pl.eval.simulator.realusersim import suite as realusersim
from mimesis_pl.eval.simulator.realusersim.data import RealUserSimCase, RealUserSimDataModule
from mimesis_pl.eval.simulator.realusersim.prompt import demographic_block, load_prompt_template, render_prompt
from mimesis_pl.eval.simulator.rows import DataFormatError
from mimesis_pl.eval.trials import TrialCache

TEMPLATE = """[correct_profile]
MIMIC {json: "kept"}
{demographics}
Profile: {linguistic_profile}
Need: {problem_desc}
Done when: {solution_conditions}
[primer]
Begin now.
"""


def _case(**demographics: str) -> RealUserSimCase:
    return RealUserSimCase(
        case_id="x-1",
        split="x",
        domain="d",
        user_ip="ip",
        original_messages=({"role": "user", "content": "hi"},),
        problem_desc="fix my router",
        solution_conditions="router works",
        linguistic_profile="lowercase, terse",
        demographics=demographics,
    )


def test_template_renders_the_cards_fields_and_keeps_other_braces(tmp_path):
    path = tmp_path / "card_prompt.txt"
    path.write_text(TEMPLATE)
    template = load_prompt_template(path)
    assert template.primer == "Begin now." and template.task_only is None and len(template.sha256) == 64
    text = render_prompt(template, _case(), _case(occupation="nurse", age="25-34", hobby="chess"))
    # Known fields in the card's order and labels (age before occupation); unknown fields are not shown.
    assert text == (
        'MIMIC {json: "kept"}\n- Age range: 25-34\n- Occupation: nurse\nProfile: lowercase, terse\n'
        "Need: fix my router\nDone when: router works"
    )
    assert demographic_block({}, template) == "No demographic information is available for this user."


def test_template_errors_name_the_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("[correct_profile]\nNeed: {problem_desc}\n")
    with pytest.raises(DataFormatError, match=r"t.txt: \[correct_profile\] lacks the placeholder\(s\)"):
        load_prompt_template(path)
    path.write_text(TEMPLATE + "[extra]\nx\n")
    with pytest.raises(DataFormatError, match=r"t.txt: unknown section \[extra\]"):
        load_prompt_template(path)
    with pytest.raises(DataFormatError, match="cannot read the simulator prompt template"):
        load_prompt_template(tmp_path / "absent.txt")


def _run(tmp_path, monkeypatch, **kwargs):
    seen: list[tuple[str, str]] = []
    real = realusersim.scripted_realusersim_user

    def recording(messages, seed, temperature):
        seen.append((messages[0]["content"], messages[1]["content"]))
        return real(messages, seed, temperature)

    monkeypatch.setattr(realusersim, "scripted_realusersim_user", recording)
    dm = RealUserSimDataModule(["assets/data/eval/realusersim/test_sets"], limit=2)
    dm.setup()
    suite = realusersim.RealUserSimSuite("assets/data/eval/realusersim/judge_prompt.txt", n_boot=50, **kwargs)
    suite.start()
    ctx = SuiteContext(TrialCache(tmp_path / "items.jsonl"), RetryPolicy(max_attempts=1, backoff_s=0), 2, tmp_path)

    async def go():
        try:
            await suite.run_batch(dm.items, ctx)
        finally:
            await suite.aclose()

    asyncio.run(go())
    return suite.report(ctx), seen


def test_reports_say_which_prompt_ran_and_whether_fi_is_comparable(tmp_path, monkeypatch):
    report, seen = _run(tmp_path / "ours", monkeypatch)
    assert report.results["simulator_prompt"]["template"] is None
    assert set(report.results["simulator_prompt"]["conditions_on_our_paraphrase"]) == set(realusersim.CONDITIONS)
    assert "our paraphrase — not comparable with published FI" in report.markdown

    path = tmp_path / "card_prompt.txt"
    path.write_text(TEMPLATE)
    monkeypatch.undo()
    report, seen = _run(tmp_path / "sample_judge", monkeypatch, simulator_prompt=str(path))
    # the bundled judge prompts are our wording: never comparable, whatever the simulator prompt (S87)
    assert not any(report.results["simulator_prompt"]["comparable_with_published_fi"].values())
    assert "Judge prompts: the bundled sample" in report.markdown
    monkeypatch.undo()
    monkeypatch.setattr(prompt_module, "SAMPLE_JUDGE_PROMPTS", tmp_path / "none.txt")  # as if the dataset's file
    report, seen = _run(tmp_path / "card", monkeypatch, simulator_prompt=str(path))
    source = report.results["simulator_prompt"]
    assert source["comparable_with_published_fi"] == {
        "task_only": False,  # no [task_only] section: our paraphrase ran for it, and says so
        "correct_profile": True,
        "shuffled_profile": True,
    }
    mimic = [s for s in seen if s[0].startswith("MIMIC")]
    assert mimic and all(primer == "Begin now." for _, primer in mimic)
    assert f"the benchmark's text from {path}" in report.markdown
    assert "Simulator prompt of task_only: our paraphrase — not comparable" in report.markdown
