"""Writes the made-up sample rows of assets/data/simulator_rl/ (spec (c) C3 formats); deterministic.

    python assets/data/simulator_rl/make_samples.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
P = [{"role": "user", "content": "placeholder"}]


def row(data_source: str, index: int, **info) -> dict:
    return {"data_source": data_source, "prompt": P, "extra_info": {"index": index, **info}}


def scenario(name, level, order_id, payment, flow, subflow, items, **extra):
    """An ABCD scenario as abcd_v1.1.json holds it (personal, order, product, flow, subflow), as a JSON string."""
    first, last = name.split()
    personal = {"customer_name": name, "email": f"{first[0]}{last}@email.com", "member_level": level,
                "phone": "(977) 625-2661", "username": f"{first[0]}{last}730", "account_id": "AB12CD34",
                "zip_code": "10950", **extra}
    order = {"street_address": "6821 lincoln ave", "full_address": "6821 lincoln ave  brighton, mi 10950",
             "city": "brighton", "num_products": str(len(items)), "order_id": order_id,
             "packaging": "in original packaging", "payment_method": payment, "purchase_date": "2019-11-06",
             "state": "mi", "zip_code": "10950",
             "products": [{"brand": "michael_kors", "product_type": item, "amount": 54} for item in items]}
    return json.dumps({"personal": personal, "order": order,
                       "product": {"names": [f"michael_kors {item}" for item in items], "amounts": [54] * len(items)},
                       "flow": flow, "subflow": subflow}, sort_keys=True)


def usersim(index, behavior, kwargs, name, subflow="return_size", flow="product_defect"):
    """A usersim-behavior row as the reference reads it (spec §1.18): scenario, behavior_ids and kwargs are JSON
    strings, ``"[]"`` ids for a control row; the flow/subflow pair of the stand-in ABCD data."""
    return {"data_source": "usersim-behavior", "prompt": P, "extra_info": {
        "index": index, "flow": flow, "subflow": subflow, "turn_budget": 3,
        "behavior_ids": json.dumps([behavior] if behavior else []), "kwargs": json.dumps([kwargs] if behavior else []),
        "scenario": scenario(name, "bronze", "3348917502", "credit card", flow, subflow, ["jeans"])}}


# Single-turn families: the fields the reference's loops read (one split shows each accepted variant).
PARATOMI_STORY = ["Liam entered the garage.", "The apple is in the crate.", "Liam exited the garage.",
                  "Mia moved the apple to the basket."]
HUMANLLM_ITEMS = [f"trail snack {i}" for i in range(20)]
HUMANLLM_PROMPT = ("User: a weekend hiker who buys light gear. History 1: trail boots, History 2: wool socks; "
                   "History 3: a paper map, "
                   + " ".join(f"Candidate {i + 1}: {c}" for i, c in enumerate(HUMANLLM_ITEMS)))


def twinvoice_lists(split: str) -> dict:
    history, choices = ["lol this again", "nah not buying it"], ["Exciting news, can't wait!", "lol another one, nah",
                                                                  "Please share the specs.", "I have preordered two."]
    if split == "train":
        return {"conversation_history": history, "answer_choices": choices}
    return {"history": json.dumps(history), "choices": json.dumps(choices)}


def social_r1_prompt(split: str) -> dict:
    text = ("Sam forgot Jo's birthday and Jo said 'it's fine'. How does Jo feel?\n"
            "A. delighted\nB. hurt\nC. indifferent\nD. grateful")
    if split == "train":
        return {"prompt_text": text}
    return {"conversations": [{"messages": [{"role": "user", "content": text}]}]}


def socsci210_prompt(split: str) -> dict:
    text = "On a scale from 0 to 7, how much do you trust your neighbours? Only return the number, nothing else."
    if split == "train":
        return {"prompt_text": text}
    return {"conversations": [{"messages": [{"role": "user", "content": text}]}]}


def behavior_chain_raw(split: str) -> dict:
    raw = {"profile_text": "A cautious baker.", "current_context": "A stranger offers to double her money.",
           "persona_name": "Rosa", "right_option_letter": "B"}
    if split == "train":
        return {**raw, "history_text": "She lost her savings once.",
                "prior_chain": [{"context": "A friend offers a risky deal.", "behavior": "She declines politely."}],
                "options_dict": {"A": "Invests all", "B": "Declines", "C": "Invests half", "D": "Borrows money"}}
    return {**raw, "history_truncated": [{"chapter_num": "Chapter 1", "chapter_content": "She lost her savings once."}],
            "prior_chain_text": "She declined a risky deal from a friend.",
            "options": ["Invests all", "Declines", "Invests half", "Borrows money"]}


def rows(split: str) -> list[dict]:
    k = 0 if split == "train" else 100
    return [
        row("fantom", k + 1, context="Ann: I moved to Oslo.\nBen: Nice!\n(Cara joins)\nCara: Hi all.",
            complete_question="Does Cara know that Ann moved to Oslo? Answer yes or no.", question="Does Cara know?",
            question_type="tom:answerability:binary", correct_answer="no", wrong_answer="",
            extra_info="Cara joined after the move was mentioned.", set_id="s1", part_id="p1", tom_type="first",
            missed_info_accessibility="inaccessible"),
        row("fantom", k + 2, context="Ann: My dog is called Rex.\nBen: Cute.",
            question="What is the name of Ann's dog?", question_type="fact", correct_answer="Rex", set_id="s2",
            part_id="p1"),
        row("hitom", k + 3, story="Ava and Ben entered the den. The pen is in the box. Ava exited the den. "
            "Ben moved the pen to the drawer.", question="Where does Ava think the pen is?",
            choices="A. box, B. drawer", correct_answer="box", extra_info="", deception="False", story_length=1,
            question_order=1),
        row("paratomi", k + 4, story=PARATOMI_STORY if split == "train" else str(PARATOMI_STORY),
            question="Where will Liam look for the apple?", correct_answer="crate", cands="['crate', 'basket']",
            qType="first_order"),
        row("lifechoices", k + 5, character_name="Elizabeth Bennet", book="Pride and Prejudice",
            input_text="I value sincerity over fortune and I trust my own judgement.",
            **{"Multiple Choice Question": {"Scenario": "A rich man you dislike proposes.",
               "Question": "What do you do?",
               "Options": ["Accept at once", "Refuse him plainly", "Ask for a week", "Ask your mother"],
               "Correct Answer": "B" if split == "train" else "B. Refuse him plainly"}}),
        row("mistakes", k + 6, QuestionText="What is 1/2 + 1/3?", AnswerAText="2/5", AnswerBText="5/6",
            AnswerCText="1/6", AnswerDText="2/6", MisconceptionName="Adds numerators and denominators",
            TargetOption="A"),
        row("twinvoice", k + 7, **twinvoice_lists(split), anchor_post="New phone launch tomorrow!", answer_idx=1,
            dimension="style"),
        row("social_r1", k + 8, **social_r1_prompt(split), answer_letter="B"),
        row("behavior_chain", k + 9, raw=json.dumps(behavior_chain_raw(split))),
        row("alignx_demo", k + 10, raw_prompt="How should I start running?", chosen="Start with 10 minutes a day.",
            rejected="Sign up for a marathon.", demographic="A 60-year-old beginner.",
            icl_pairs=[{"prompt": "Best shoes?", "chosen": "Whatever feels comfortable.",
                        "rejected": "Carbon plates."}],
            ugc=[{"prompt": "Rainy runs?", "comment": "I skip them."}], n_icl=2, n_ugc=2),
        row("socsci210", k + 11, **socsci210_prompt(split), response=5, r_min=0, r_max=7, response_type="ordinal",
            study_id="s1", condition_id="c1", outcome_id="o1"),
        row("humanllm", k + 12, prompt_text=HUMANLLM_PROMPT, candidates=HUMANLLM_ITEMS, answer_index=3,
            answer_letter="D", answer_text=HUMANLLM_ITEMS[3], task="item_selection", split=split),
        usersim(k + 13, "fabricated_or_false_premise", {"field": "member_level", "true_value": "bronze",
                "false_value": "gold"}, "crystal minh"),
        usersim(k + 14, "", {}, "omar diaz", subflow="status_delivery_time", flow="order_issue"),
        usersim(k + 15, "clarification_noncooperation", {"withheld_fields": ["username", "order_id"]}, "kim park",
                subflow="refund_initiate"),
    ] + dialogue_rows(k, split)


HUMANUAL = {
    "book": ("Retired teacher who reviews mysteries bluntly.", "Review: a slow start, a twist at the end.",
             "Took forever to get going. Ending was clever though, I'll give it that."),
    "chat": ("College student, texts in lowercase.", json.dumps([{"role": "user", "content": "u coming tonight?"}]),
             "yeah prob, after my lab. save me a seat"),
    "email": ("Project manager, polite and brief.", "Email from a vendor: the delivery slips by two weeks.",
              "Thanks for the heads-up. Please send a revised schedule by Friday."),
    "news": ("Local farmer who distrusts big agriculture.", "Headline: new subsidy goes mostly to large farms.",
             "Same story every year. The little guys get crumbs."),
    "opinion": ("Cyclist and city commuter.", "Op-ed: bike lanes slow down traffic.",
                "Bike lanes move more people, not fewer. Try riding one."),
    "politics": ("Moderate voter tired of partisanship.", "Post: the other party ruins everything.",
                 "Both sides say that. I just want the roads fixed."),
}


def dialogue_rows(k: int, split: str) -> list[dict]:
    """Rows of the partner/judge families, shaped as the reference's preprocessing writes them."""
    kinds = list(HUMANUAL) if split == "train" else ["chat"]
    out = [row(f"humanual-{kind}", k + 16 + i, persona=HUMANUAL[kind][0], prompt=HUMANUAL[kind][1],
               completion=HUMANUAL[kind][2], id=f"{kind}-{k + i}", dataset="humanual", category=kind)
           for i, kind in enumerate(kinds)]
    circumstance = {
        "book": "The Inn at Gull Point", "scenario": "A stormy night at the inn; the bank's letter has arrived.",
        "plot": {"summary": "Two sisters inherit a failing inn.",
                 "key_characters": [{"name": "Nora", "description": "The elder sister, who runs the inn."},
                                    {"name": "Ida", "description": "The younger sister, back from the city."}]},
        "speaking_characters_w_env": ["Nora", "Environment", "Ida"], "major_characters": ["Nora", "Ida"],
        "character_profiles": {"Nora": "Practical, stubborn, loyal to their late father.",
                               "Ida": "Dreamy and restless; wants a life elsewhere."},
        "key_characters": [{"name": "Nora", "motivation": "Save the inn."},
                           {"name": "Ida", "thought": "Sell and leave before winter."}],
        "dialogues": [{"character": "Nora", "message": "We can't sell."},
                      {"character": "Ida", "message": "[She folds the letter.] Then we drown with it."}],
    }
    return out + [
        row("userllm", k + 22, source="prism", intent="You are a user chatting with an assistant language model to "
            "find a cheap vegetarian recipe for two.", is_last_turn="False", conversation_history=""),
        row("userllm", k + 23, source="commonsense_qa", intent_summary="Ask where people usually keep milk.",
            choices=json.dumps({"label": ["A", "B", "C", "D", "E"], "text": ["fridge", "oven", "garage", "shelf",
                                                                              "car"]}),
            conversation_history="<user>: quick question\n<assistant>: Sure, go ahead.", is_last_turn=0),
        row("mirrorbench", k + 24, task_description="Get help fixing a slow laptop.", few_shot_user_examples=[],
            turns=[{"role": "user", "content": "my laptop is super slow"},
                   {"role": "assistant", "content": "Sorry to hear that. How old is it?"},
                   {"role": "user", "content": "like 5 years"},
                   {"role": "assistant", "content": "Try checking startup programs."}]),
        row("sotopia", k + 25, scenario="Agent1 and Agent2 share a flat; the rent is due and Agent2 is short.",
            agent1_name="Maya Chen", agent2_name="Leo Park", agent1_background="A nurse who values fairness.",
            agent2_background="A musician, often broke.", agent1_goal="Get Agent2 to pay his half this week.",
            agent2_goal="Ask Agent1 for a one-month extension.", relationship="flatmates"),
        row("coser", k + 26, circumstance=json.dumps(circumstance), wo_thought=False, continue_from=0),
        row("sim_arena_math", k + 27, raw=json.dumps({
            "problem": "Simplify 12/18.", "user_profile_text": "A ninth-grader, anxious about fractions.",
            "human_user_queries": ["how do i simplify 12/18", "so its 2/3?"],
            "human_public_conversation": [{"role": "user", "content": "how do i simplify 12/18"},
                                          {"role": "assistant", "content": "Find the greatest common divisor."},
                                          {"role": "user", "content": "so its 2/3?"}],
            "target_interaction_style_features": [
                {"Feature Name": "asks for the next step", "Feature Question Answer": "Does the student ask?"},
                {"Feature Name": "admits confusion"}]})),
        row("sim_arena_doc", k + 28, raw=json.dumps({
            "document_type": "cover letter", "intent": "Apply for a barista job.",
            "pre_writing_materials_text": "2 years at a cafe; latte art", "user_profile_text": "A student.",
            "target_document_preferences": "short, warm, no cliches",
            "human_user_queries": "help me write a cover letter\nmake it shorter",
            "human_public_conversation": "User: help me write a cover letter\n"
                                         "AI Writing Assistant: Sure, what's the job?",
            "target_interaction_style_features": [{"Feature Name": "gives details when asked",
                                                   "Feature Question": "Does the user give details?"}],
            "target_writing_style_features": [{"Feature Name": "lowercase",
                                               "Feature Question Answer": "Lowercase?"}]})),
    ]


def main() -> None:
    for split in ("train", "val"):
        path = HERE / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows(split)))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
