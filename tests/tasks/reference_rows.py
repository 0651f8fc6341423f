"""Rows shaped exactly as the reference's preprocessing writes them (field names, nesting, JSON strings and the
string/number variants the reference's loops read), one or more per ``data_source`` of the 24-task mixture.

Written from the field lists of the reference's task loops, not from this package's sample files, so a task that
reads invented field names fails on them. ``reference_row(source)`` gives a fresh copy.
"""

from __future__ import annotations

import copy
import json
from typing import Any

PROMPT = [{"role": "user", "content": "(verl builds raw_prompt from these messages; no task reads them)"}]


def _row(data_source: str, index: int, **info: Any) -> dict[str, Any]:
    return {"data_source": data_source, "prompt": PROMPT, "raw_prompt": PROMPT, "extra_info": {"index": index, **info}}


COSER_CIRCUMSTANCE = {
    "book": "The Inn at Gull Point",
    "scenario": "A stormy night at the inn; the bank's letter has arrived.",
    "plot": {
        "summary": "Two sisters inherit a failing inn.",
        "key_characters": [
            {"name": "Nora", "description": "The elder sister, who runs the inn."},
            {"name": "Ida"},
        ],
    },
    "speaking_characters_w_env": ["Nora", "Ida"],  # no Environment: the reference appends it
    "major_characters": ["Nora", "Ida"],
    "character_profiles": {"Nora": "Practical and stubborn.", "Ida": "Dreamy and restless."},
    "key_characters": [
        {"name": "Nora", "motivation": "Save the inn at any cost."},
        {"name": "Ida", "thought": "Sell before winter and leave."},
    ],
    "dialogues": [
        {"character": "Nora", "message": "We can't sell."},
        {"character": "Ida", "message": "[She folds the letter.] Then we drown with it."},
    ],
}

_USERSIM_SCENARIO = {
    "personal": {
        "customer_name": "dana lee",
        "member_level": "bronze",
        "username": "dlee7",
        "email": "dana.lee@mail.test",
        "zip_code": "12345",
    },
    "order": {"order_id": "5512038841", "payment_method": "paypal", "packaging": "yes", "purchase_date": "2026-10-02"},
    "product": {"names": ["jeans"]},
    "flow": "product_defect",
    "subflow": "return_size",
}

ROWS: dict[str, dict[str, Any]] = {
    "sotopia": _row(
        "sotopia",
        1,
        agent1_name="Maya Chen",
        agent2_name="Leo Park",
        scenario="Agent1 and Agent2 share a flat; the rent is due and agent2 is short.",
        agent1_background="A nurse who values fairness.",
        agent2_background="A musician, often broke.",
        agent1_goal="Get Leo to pay his half this week.",
        agent2_goal="Ask for a one-month extension.",
        relationship="flatmates",
    ),  # no eval_position: the policy is agent 1
    "coser": _row("coser", 2, circumstance=json.dumps(COSER_CIRCUMSTANCE)),
    "lifechoices": _row(
        "lifechoices",
        3,
        character_name="Elizabeth Bennet",
        input_text="I value sincerity over fortune.",
        book="Pride and Prejudice",
        **{
            "Multiple Choice Question": {
                "Scenario": "A rich man you dislike proposes.",
                "Question": "What do you do?",
                "Options": ["Accept at once", "Refuse him plainly", "Ask for a week", "Ask your mother"],
                "Correct Answer": "B. Refuse him plainly",
            }
        },
    ),
    "userllm": _row(
        "userllm",
        4,
        intent="You are a user chatting with an assistant language model to: find a cheap vegetarian recipe.",
        conversation_history="",
        source="prism",
        is_last_turn="False",
        id="u-4",
    ),
    "mirrorbench": _row(
        "mirrorbench",
        5,
        turns=[
            {"role": "user", "content": "my laptop is super slow"},
            {"role": "assistant", "content": "How old is it?"},
            {"role": "user", "content": "like 5 years"},
            {"role": "assistant", "content": "Try checking startup programs."},
        ],
        task_description="Get help with a slow laptop.",
        few_shot_user_examples=[],
    ),
    "fantom": _row(
        "fantom",
        6,
        context="Ann: I moved to Oslo.\nBen: Nice!\n(Cara joins)\nCara: Hi all.",
        complete_question="Does Cara know that Ann moved to Oslo?",
        question_type="tom:answerability:binary",
        correct_answer="no",
        wrong_answer="['yes']",
        extra_info="",
        set_id="s1",
    ),
    "hitom": _row(
        "hitom",
        7,
        story="Ava and Ben entered the den. The pen is in the box. Ava exited the den. Ben moved the pen to the drawer",
        question="Where does Ava think the pen is?",
        choices="A. box, B. drawer",
        correct_answer="box",
        deception="False",
        story_length=1,
        question_order=1,
    ),
    "paratomi": _row(
        "paratomi",
        8,
        story="['Liam entered the garage.', 'The apple is in the crate.', 'Liam exited the garage.']",
        question="Where will Liam look for the apple?",
        cands="['crate', 'basket']",
        correct_answer="crate",
        qType="first_order",
    ),
    "mistakes": _row(
        "mistakes",
        9,
        QuestionText="What is 1/2 + 1/3?",
        AnswerAText="2/5",
        AnswerBText="5/6",
        AnswerCText="1/6",
        AnswerDText="2/6",
        MisconceptionName="Adds numerators and denominators",
        TargetOption=" a ",
    ),
    "twinvoice": _row(
        "twinvoice",
        10,
        history=json.dumps(["lol this again", "nah not buying it"]),
        anchor_post="New phone launch tomorrow!",
        choices=json.dumps(["Exciting!", "lol another one, nah", "Share the specs.", "Preordered two."]),
        answer_idx=1,
        dimension="style",
    ),
    "social_r1": _row(
        "social_r1",
        11,
        conversations=[{"messages": [{"role": "user", "content": "Jo said 'it's fine'. Jo feels?\nA. glad\nB. hurt"}]}],
        answer_text="B) hurt",
    ),
    "behavior_chain": _row(
        "behavior_chain",
        12,
        raw=json.dumps(
            {
                "profile": "A cautious baker.",
                "history_text": "She lost her savings once.",
                "prior_chain_text": "Step 0: she declined a risky deal.",
                "current_context": "A stranger offers to double her money.",
                "persona_name": "Rosa",
                "options": ["Invests all", "Declines", "Invests half", "Borrows money"],
                "right_option_letter": "B",
            }
        ),
    ),
    "sim_arena_math": _row(
        "sim_arena_math",
        13,
        raw=json.dumps(
            {
                "problem": "Simplify 12/18.",
                "user_profile_text": "A ninth-grader, anxious about fractions.",
                "human_user_queries": ["how do i simplify 12/18", "so its 2/3?"],
                "human_public_conversation": [
                    {"role": "user", "content": "how do i simplify 12/18"},
                    {"role": "assistant", "content": "Find the greatest common divisor."},
                ],
                "target_interaction_style_features": [
                    {"Feature Name": "asks for the next step", "Feature Question Answer": "Does the student ask?"}
                ],
            }
        ),
    ),
    "sim_arena_doc": _row(
        "sim_arena_doc",
        14,
        raw=json.dumps(
            {
                "document_type": "cover letter",
                "intent": "Apply for a barista job.",
                "human_user_queries": "help me write a cover letter\nmake it shorter",
                "human_public_conversation": "User: help me write a cover letter\nAI Writing Assistant: Sure.",
                "pre_writing_materials_text": "2 years at a cafe",
                "target_document_preferences": "short, warm",
                "target_writing_style_features": [{"Feature Name": "lowercase", "Feature Question": "Lowercase?"}],
            }
        ),
    ),
    **{
        f"humanual-{kind}": _row(
            f"humanual-{kind}",
            15 + i,
            prompt=json.dumps([{"role": "user", "content": f"A {kind} post: the bus is late again."}]),
            persona="A commuter who writes short, dry replies.",
            completion="Third time this week. I'm buying a bike.",
            id=f"h-{kind}",
            dataset="humanual",
            category=kind,
        )
        for i, kind in enumerate(("book", "chat", "email", "news", "opinion", "politics"))
    },
    "alignx_demo": _row(
        "alignx_demo",
        21,
        raw_prompt="How should I start running?",
        chosen="Start with 10 minutes a day.",
        rejected="Sign up for a marathon.",
        **{"Demographic Information": "A 60-year-old beginner."},
        n_icl=2,
        n_ugc=2,
    ),
    "socsci210": _row(
        "socsci210",
        22,
        conversations=[
            {"messages": [{"role": "user", "content": "From 0 to 7, trust in neighbours? Only return it."}]}
        ],
        response="5",
        response_type="Ordinal",
        r_min=0,
        r_max=7,
    ),
    "humanllm": _row(
        "humanllm",
        23,
        prompt_text="History 1: tent, History 2: stove; Which item next? Candidate 1: x",
        candidates=[f"item {i}" for i in range(20)],
        answer_index=3,
    ),
    "usersim-behavior": _row(
        "usersim-behavior",
        24,
        flow="product_defect",
        subflow="return_size",
        turn_budget="3",
        behavior_ids=json.dumps([]),
        kwargs=json.dumps([]),
        scenario=json.dumps(_USERSIM_SCENARIO),
    ),
}

#: the families of this slice (the dialogue families); the others' readers are owned elsewhere
DIALOGUE = ("sotopia", "coser", "userllm", "mirrorbench", "sim_arena_math", "sim_arena_doc") + tuple(
    f"humanual-{k}" for k in ("book", "chat", "email", "news", "opinion", "politics")
)


def reference_row(source: str) -> dict[str, Any]:
    return copy.deepcopy(ROWS[source])
