#!/usr/bin/env bash
# Serve a frozen user simulator with vLLM, optionally with the privileged shim in front of it.
#   bin/serve_simulator.sh MODEL_DIR [PORT=8000] [SHIM_PORT]      e.g. bin/serve_simulator.sh /models/mimesis-9b 8000 8710
# With SHIM_PORT the shim listens on 127.0.0.1:SHIM_PORT (agents use http://127.0.0.1:SHIM_PORT/ep/<id>/v1).
# A training job started with `users.kind: openai, users.shim: true` starts its own shim instead.
set -euo pipefail
model=${1:?usage: bin/serve_simulator.sh MODEL_DIR [PORT] [SHIM_PORT]}
port=${2:-8000}
shim_port=${3:-}
name=$(basename "$model")
vllm serve "$model" --host 127.0.0.1 --port "$port" --served-model-name "$name" --dtype auto &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  kill -0 $server 2>/dev/null || { echo "vllm exited during start-up" >&2; exit 1; }
  sleep 1
done
echo "simulator $name serving on http://127.0.0.1:$port/v1"
if [ -n "$shim_port" ]; then
  exec mimesis-pl shim --upstream "http://127.0.0.1:$port/v1" --host 127.0.0.1 --port "$shim_port"
fi
wait $server
