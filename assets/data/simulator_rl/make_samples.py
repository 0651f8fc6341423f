"""Writes the made-up sample rows of assets/data/simulator_rl/ (spec (c) C3 formats); deterministic.

    python assets/data/simulator_rl/make_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
P = [{"role": "user", "content": "placeholder"}]


def row(source: str, index: int, **info) -> dict:
    return {"data_source": source, "prompt": P, "extra_info": {"index": index, **info}}


def scenario(name, level, order_id, payment, flow, subflow, items, **extra):
    personal = {"customer_name": name, "member_level": level, "username": name.split()[0][0] + name.split()[1] + "7",
                "email": name.replace(" ", ".") + "@mail.test", "zip_code": "12345", **extra}
    return json.dumps({"personal": personal, "order": {"order_id": order_id, "payment_method": payment,
                       "packaging": "yes", "purchase_date": "2026-10-02"},
                       "product": {"names": items}, "flow": flow, "subflow": subflow})


def usersim(index, behavior, kwargs, name, subflow="return_size", flow="product_defect"):
    return {"data_source": "usersim-behavior", "prompt": P, "extra_info": {
        "index": index, "flow": flow, "subflow": subflow, "turn_budget": 3,
        "behavior_ids": json.dumps([behavior] if behavior else []), "kwargs": json.dumps([kwargs] if behavior else []),
        "scenario": scenario(name, "bronze", "5512038841", "paypal", flow, subflow, ["jeans"])}}


def rows(split: str) -> list[dict]:
    k = 0 if split == "train" else 100
    return [
        row("fantom", k + 1, context="Ann: I moved to Oslo.\nBen: Nice!\n(Cara joins)\nCara: Hi all.",
            complete_question="Does Cara know that Ann moved to Oslo? Answer yes or no.",
            question_type="tom:answerability:binary", correct_answer="no", wrong_answer="yes"),
        row("fantom", k + 2, context="Ann: My dog is called Rex.\nBen: Cute.", question="What is the name of Ann's dog?",
            question_type="fact", correct_answer="Rex"),
        row("hitom", k + 3, story="Ava and Ben entered the den. The pen is in the box. Ava exited the den. "
            "Ben moved the pen to the drawer.", question="Where does Ava think the pen is?",
            choices="A. box, B. drawer", correct_answer="box", deception="False", story_length=1, question_order=1),
        row("paratomi", k + 4, story=json.dumps(["Liam entered the garage.", "The apple is in the crate.",
            "Liam exited the garage.", "Mia moved the apple to the basket."]),
            question="Where will Liam look for the apple?", correct_answer="crate", cands="['crate', 'basket']",
            qType="first_order"),
        row("lifechoices", k + 5, character_name="Elizabeth Bennet", book="Pride and Prejudice",
            input_text="I value sincerity over fortune and I trust my own judgement.",
            **{"Multiple Choice Question": {"Scenario": "A rich man you dislike proposes.", "Question": "What do you do?",
               "Options": ["Accept at once", "Refuse him plainly", "Ask for a week", "Ask your mother"],
               "Correct Answer": "B"}}),
        row("mistakes", k + 6, QuestionText="What is 1/2 + 1/3?", AnswerAText="2/5", AnswerBText="5/6",
            AnswerCText="1/6", AnswerDText="2/6", MisconceptionName="Adds numerators and denominators",
            TargetOption="A"),
        row("twinvoice", k + 7, conversation_history=["lol this again", "nah not buying it"],
            anchor_post="New phone launch tomorrow!", answer_choices=["Exciting news, can't wait!",
            "lol another one, nah", "Please share the specs.", "I have preordered two."], answer_idx=1,
            dimension="style"),
        row("social_r1", k + 8, prompt_text="Sam forgot Jo's birthday and Jo said 'it's fine'. How does Jo feel?\n"
            "A. delighted\nB. hurt\nC. indifferent\nD. grateful", answer_letter="B"),
        row("behavior_chain", k + 9, raw=json.dumps({
            "profile_text": "A cautious baker.", "history_text": "She lost her savings once.",
            "prior_chain": [{"context": "A friend offers a risky deal.", "behavior": "She declines politely."}],
            "current_context": "A stranger offers to double her money.", "persona_name": "Rosa",
            "options_dict": {"A": "Invests all", "B": "Declines", "C": "Invests half", "D": "Borrows money"},
            "right_option_letter": "B"})),
        row("alignx_demo", k + 10, raw_prompt="How should I start running?", chosen="Start with 10 minutes a day.",
            rejected="Sign up for a marathon.", demographic="A 60-year-old beginner.", icl_pairs=[], ugc=[],
            n_icl=2, n_ugc=2),
        row("socsci210", k + 11, prompt_text="On a scale from 0 to 7, how much do you trust your neighbours? "
            "Only return the number.", response=5, r_min=0, r_max=7, response_type="ordinal",
            study_id="s1", condition_id="c1", outcome_id="o1"),
        row("humanllm", k + 12, prompt_text="Which snack will this hiker pick?",
            candidates=[f"snack {i}" for i in range(20)], answer_index=3, answer_letter="D", answer_text="snack 3"),
        usersim(k + 13, "fabricated_or_false_premise", {"field": "member_level", "true_value": "bronze",
                "false_value": "gold"}, "dana lee"),
        usersim(k + 14, "", {}, "omar diaz"),
        usersim(k + 15, "hidden_evaluation_criteria", {"field": "payment_method",
                "criterion": "the refund must go back to the original payment method"}, "kim park"),
    ]


def main() -> None:
    for split in ("train", "val"):
        path = HERE / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows(split)))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
