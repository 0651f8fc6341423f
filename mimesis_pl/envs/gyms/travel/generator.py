"""Deterministic synthetic TravelGym scenarios, written in UserRL's scenario format.

UserRL's scenario files are not public, but its parquet rows name each scenario by an id that says
which aspects it covers and how many preferences each has (``"flight:4-213|hotel:2-36"``) and give the
best option per aspect (``ground_truth = "['F8', 'H20']"``). :func:`generate_scenario` builds a scenario
with exactly that shape from a seed derived from the id, so a row always maps to the same scenario:

- each preference fixes one attribute of the aspect's options (our catalogue below);
- ``correct`` options satisfy every preference, the cheapest is ``best_id`` (the id the row names);
- ``wrong`` options break exactly one preference, and several are cheaper than the best one, so a
  recommendation without elicitation usually misses; ``noise`` options are sold out.

The search ground truth (``arguments``) is the aspect alone: a generated scenario has no cities or
dates to match (docs/decisions.md A42). Numbers on generated scenarios are not UserRL's.

Write a scenario file for the Travel rows of parquet files (UserRL's format; load it with
``gym_options.TravelGym.scenarios_path``)::

    python -m mimesis_pl.envs.gyms.travel --src 'data/userrl/travel*_multiturn_onechoice/*.parquet' \
        --out travel_scenarios.json
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mimesis_pl.envs.base import TaskDataError
from mimesis_pl.envs.gyms.travel.scenarios import ASPECT_INITIALS, parse_task_id

# aspect → attribute → (subcategory, {value: (preference text, implicit statement)})
Catalogue = Mapping[str, Mapping[str, tuple[str, Mapping[str, tuple[str, str]]]]]
CATALOGUE: Catalogue = {
    "flight": {
        "stops": (
            "number of stops",
            {
                "nonstop": ("I want a nonstop flight.", "Layovers wear me out; I'd rather get there in one go."),
                "one stop": ("One stop is fine if it saves money.", "Breaking the trip once helps me stretch my legs."),
            },
        ),
        "seat_class": (
            "seat class",
            {
                "economy": (
                    "Economy class is enough.",
                    "I don't need anything fancy on the plane, a normal seat does.",
                ),
                "business": ("I want business class.", "My back needs a seat that reclines flat on a long trip."),
            },
        ),
        "departure": (
            "departure time",
            {
                "morning": (
                    "I want to leave in the morning.",
                    "I like to arrive with the whole afternoon ahead of me.",
                ),
                "evening": (
                    "I want to leave in the evening.",
                    "I work during the day, so I can only head out after work.",
                ),
            },
        ),
        "baggage": (
            "checked baggage",
            {
                "checked bag included": ("A checked bag must be included.", "I'm bringing a big suitcase along."),
                "carry-on only": ("Carry-on only is fine.", "I travel light, just a backpack."),
            },
        ),
    },
    "hotel": {
        "stars": (
            "star rating",
            {
                "4 stars": ("At least four stars.", "I want somewhere comfortable, but not over the top."),
                "3 stars": ("Three stars is fine.", "I'll mostly be out, the room is just for sleeping."),
            },
        ),
        "breakfast": (
            "breakfast",
            {
                "included": ("Breakfast must be included.", "I can't start my day without a proper meal on site."),
                "not included": ("I don't need breakfast.", "I always grab coffee at a local café in the morning."),
            },
        ),
        "location": (
            "hotel location",
            {
                "downtown": ("It should be downtown.", "I want to walk to the sights in the center."),
                "near the airport": ("It should be near the airport.", "I have an early departure the last day."),
            },
        ),
        "amenity": (
            "hotel amenities",
            {
                "pool": ("It needs a pool.", "Swimming laps is how I unwind after a long day."),
                "gym": ("It needs a gym.", "I never skip my morning workout."),
            },
        ),
    },
    "apartment": {
        "bedrooms": (
            "number of bedrooms",
            {
                "2 bedrooms": ("Two bedrooms.", "My sister is coming along and we each want our own room."),
                "1 bedroom": ("One bedroom is enough.", "It's just me, so I don't need much space."),
            },
        ),
        "kitchen": (
            "kitchen",
            {
                "full kitchen": ("A full kitchen.", "I love cooking my own dinners when I travel."),
                "no kitchen": ("No kitchen needed.", "I plan to eat out for every meal."),
            },
        ),
        "pets": (
            "pet policy",
            {
                "pets allowed": ("Pets must be allowed.", "My dog is coming with me."),
                "no pets": ("A pet-free place.", "I'm allergic to animal hair."),
            },
        ),
        "laundry": (
            "laundry",
            {
                "washer in unit": ("A washer in the unit.", "I'm packing light and will wash clothes midway."),
                "no washer": ("No washer needed.", "It's a short stay, I have enough clothes."),
            },
        ),
    },
    "restaurant": {
        "cuisine": (
            "cuisine",
            {
                "italian": ("Italian food.", "I've been craving fresh pasta for weeks."),
                "japanese": ("Japanese food.", "Nothing beats good sushi for me."),
            },
        ),
        "diet": (
            "dietary options",
            {
                "vegetarian": ("Vegetarian dishes are a must.", "I haven't eaten meat in years."),
                "gluten-free": ("Gluten-free dishes are a must.", "Wheat makes me ill."),
            },
        ),
        "ambience": (
            "ambience",
            {
                "quiet": ("A quiet place.", "I want to be able to talk without shouting."),
                "lively": ("A lively place.", "I enjoy a buzzing room with music."),
            },
        ),
        "seating": (
            "seating",
            {
                "outdoor": ("Outdoor seating.", "If the weather is nice, I want to eat in the fresh air."),
                "indoor": ("Indoor seating.", "I get cold easily in the evenings."),
            },
        ),
    },
    "rental_car": {
        "car_type": (
            "car type",
            {
                "suv": ("An SUV.", "We'll be driving some rough mountain roads."),
                "compact": ("A compact car.", "Parking in the city is tight, smaller is easier."),
            },
        ),
        "transmission": (
            "transmission",
            {
                "automatic": ("An automatic.", "I never learned to drive with a clutch."),
                "manual": ("A manual.", "I enjoy shifting gears myself."),
            },
        ),
        "fuel": (
            "fuel type",
            {
                "electric": ("An electric car.", "I try to keep my trips low on emissions."),
                "gasoline": ("A gasoline car.", "Charging stations are rare where I'm going."),
            },
        ),
        "mileage": (
            "mileage policy",
            {
                "unlimited mileage": ("Unlimited mileage.", "I'll be covering a lot of ground."),
                "limited mileage": ("Limited mileage is fine.", "I'll just drive around town."),
            },
        ),
    },
}
N_CORRECT, N_WRONG, N_NOISE = 3, 10, 5


def _rng(task_id: str, seed: int) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(f"{seed}:{task_id}".encode()).digest()[:8], "big"))


def _dimension(aspect: str, n_prefs: int, best_id: str | None, rng: random.Random) -> dict[str, Any]:
    attrs = CATALOGUE[aspect]
    if n_prefs > len(attrs):
        raise TaskDataError(f"generated TravelGym scenarios support at most {len(attrs)} {aspect} preferences")
    chosen = rng.sample(sorted(attrs), n_prefs)
    wanted = {a: rng.choice(sorted(attrs[a][1])) for a in chosen}
    other = {a: [v for v in attrs[a][1] if v != wanted.get(a)] for a in attrs}

    def make(kind: str, broken: str | None = None) -> dict[str, Any]:
        option: dict[str, Any] = {"availability": "sold out" if kind == "noise" else "available"}
        for a, (_, values) in attrs.items():
            if a in wanted and a != broken and kind != "noise":
                option[a] = wanted[a]
            else:
                option[a] = rng.choice(other[a] if a == broken else sorted(values))
        option["type"] = kind
        return option

    correct = [make("correct") for _ in range(N_CORRECT)]
    wrong = [make("wrong", chosen[i % len(chosen)] if chosen else None) for i in range(N_WRONG)]
    noise = [make("noise") for _ in range(N_NOISE)]
    prices = rng.sample(range(80, 900, 7), len(correct) + len(wrong) + len(noise))
    cheapest_correct = min(prices[: len(correct)])
    for option, price in zip(correct + wrong + noise, prices):
        option["price"] = price
    # Several wrong options undercut the best one: picking the cheapest blindly should fail.
    for option in wrong[: max(1, len(wrong) // 2)]:
        option["price"] = max(10, cheapest_correct - rng.randint(5, 60))
    best_index = min(range(len(correct)), key=lambda i: correct[i]["price"])
    total = len(correct) + len(wrong) + len(noise)
    best_number = int(best_id[1:]) if best_id else rng.randint(1, total)
    total = max(total, best_number)
    while len(correct) + len(wrong) + len(noise) < total:
        noise.append(make("noise") | {"price": rng.randint(80, 900)})
    numbers = [n for n in range(1, total + 1) if n != best_number]
    rng.shuffle(numbers)
    initial = ASPECT_INITIALS[aspect]
    ordered = [correct[best_index]] + [o for i, o in enumerate(correct) if i != best_index] + wrong + noise
    for option, number in zip(ordered, [best_number, *numbers]):
        option["id"] = f"{initial}{number}"
    preferences = [[aspect, attrs[a][0], attrs[a][1][wanted[a]][0], attrs[a][1][wanted[a]][1]] for a in chosen]
    return {
        "preferences": preferences,
        "options": {"correct": correct, "wrong": wrong, "noise": noise},
        "arguments": {},
        "correct_ids": [o["id"] for o in correct],
        "best_id": correct[best_index]["id"],
    }


def generate_scenario(task_id: str, best_ids: Mapping[str, str] | None = None, *, seed: int = 0) -> dict[str, Any]:
    """One scenario record in UserRL's format for ``task_id``; ``best_ids`` (aspect → id) fixes the best options."""
    counts = parse_task_id(task_id)
    rng = _rng(task_id, seed)
    best_ids = dict(best_ids or {})
    dims = list(counts)
    wanted = ", ".join(a.replace("_", " ") for a in dims)
    return {
        "scenario": f"A traveller needs a {wanted} and wants the cheapest option that fits their preferences.",
        "dimensions": dims,
        "wanted_num": len(dims),
        "initial_description": f"I need a {wanted} for my trip. Please choose the cheapest option for each.",
        **{a: _dimension(a, counts[a], best_ids.get(a), rng) for a in dims},
    }


def write_scenarios(tasks: Iterable[tuple[str, Mapping[str, str] | None]], path: str | Path, *, seed: int = 0) -> Path:
    """Write a UserRL-format scenario file for ``(task id, best ids)`` pairs; returns the path."""
    records = {task_id: generate_scenario(task_id, best, seed=seed) for task_id, best in tasks}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
