"""The paper's published rows, shown beside ours where the protocol is comparable.

Our runs use other models (and, offline, scripted ones), so the numbers are context, not targets.
"""

from __future__ import annotations

# RealUserSim PT3, correct-profile condition: FI, persona, style, technical, interaction, pacing (%).
REALUSERSIM = {
    "MIMESIS-9B": (94.0, 99.4, 89.5, 98.8, 91.3, 91.2),
    "MIMESIS-4B": (89.7, 98.7, 83.5, 96.5, 85.0, 84.9),
    "Claude-Opus-5": (80.6, 96.0, 72.5, 92.7, 69.5, 72.5),
    "GPT-5.5": (76.5, 99.3, 73.3, 95.1, 65.0, 49.6),
    "Ditto-8B": (71.3, 92.3, 69.8, 93.0, 57.4, 44.2),
    "Gemini-3.8-Flash": (67.2, 95.4, 57.6, 90.7, 52.2, 40.3),
    "Osim-8B": (57.7, 82.3, 46.0, 85.2, 40.5, 34.5),
    "Osim-4B": (54.1, 75.9, 42.8, 82.7, 37.0, 32.0),
    "Qwen3-8B": (44.4, 71.8, 37.6, 70.5, 24.3, 17.7),
    "Qwen3.5-9B": (39.4, 68.4, 29.8, 59.8, 19.8, 19.2),
    "Qwen3.5-4B": (37.1, 60.1, 26.4, 59.8, 20.0, 19.2),
    "HumanLM-8B": (28.4, 50.2, 17.0, 54.3, 11.5, 9.0),
    "Sotopia-7B": (20.7, 33.4, 7.1, 54.3, 4.7, 3.9),
}
# The dataset card's own reference (gpt-4o as simulator, assistant and judge): profile and task-only FI.
REALUSERSIM_CARD = {"correct_profile": 45.3, "task_only": 24.2}

# tau-USI: D1, D2, D3, D4, ECE, USI5 (human inter-annotator USI5: 91.75).
TAU_USI = {
    "MIMESIS-9B": (51.75, 87.60, 75.84, 92.54, 0.069, 80.17),
    "MIMESIS-4B": (56.33, 92.40, 78.13, 77.04, 0.137, 78.03),
    "Osim-8B": (62.12, 85.92, 77.13, 90.49, 0.135, 80.44),
    "GPT-5.5": (55.20, 89.78, 74.51, 82.78, 0.188, 76.69),
    "Gemini-3.8-Flash": (59.81, 85.71, 67.89, 71.43, 0.192, 73.13),
    "Claude-Opus-5": (48.06, 88.52, 70.40, 60.51, 0.208, 69.34),
    "Ditto-8B": (52.59, 86.13, 54.48, 77.18, 0.166, 70.75),
    "Osim-4B": (32.26, 71.24, 80.04, 83.72, 0.184, 69.78),
    "Sotopia-7B": (30.49, 52.38, 76.43, 67.13, 0.202, 61.25),
    "Qwen3.5-4B": (40.24, 66.16, 58.66, 55.94, 0.169, 60.82),
    "Qwen3-8B": (58.73, 79.03, 51.54, 58.74, 0.469, 60.23),
    "Qwen3.5-9B": (35.92, 64.58, 59.60, 46.37, 0.174, 57.82),
}
TAU_USI_HUMAN = 91.75

# SOUL-Index (mean of 3 seeded runs): CONV, SS, COG, ROLE, EVAL, Overall (the paper's Overall is the
# row-weighted ``val-core/all/score``, not the mean of the axes: docs/decisions.md S23).
SOUL = {
    "MIMESIS-9B": (75.1, 66.4, 86.2, 61.1, 69.7, 65.7),
    "MIMESIS-4B": (74.4, 65.2, 79.8, 58.8, 68.6, 63.7),
    "Claude-Opus-5": (57.4, 70.4, 82.0, 64.6, 69.1, 64.9),
    "GPT-5.5": (56.7, 70.9, 86.1, 62.3, 68.3, 64.1),
    "Gemini-3.8-Flash": (56.0, 66.9, 85.6, 57.3, 68.7, 62.5),
    "Osim-8B": (60.0, 39.1, 74.5, 54.9, 68.7, 58.8),
    "Osim-4B": (58.5, 35.0, 72.9, 51.4, 66.5, 56.0),
    "Ditto-8B": (61.7, 46.4, 78.2, 44.1, 63.9, 53.9),
    "HumanLM-8B": (43.8, 59.8, 68.8, 41.6, 62.7, 49.6),
    "Sotopia-7B": (41.1, 59.7, 29.8, 33.5, 55.1, 38.2),
    "Qwen3.5-9B": (48.9, 54.2, 64.3, 44.8, 64.7, 50.5),
    "Qwen3-8B": (44.8, 58.7, 68.9, 39.7, 64.1, 49.7),
}
