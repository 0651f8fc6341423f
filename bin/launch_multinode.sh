#!/usr/bin/env bash
# Launch a mimesis-pl job on several nodes. Lightning reads the rank layout from torchrun or SLURM.
#   SLURM:    srun --nodes 2 --ntasks-per-node 8 --gpus-per-node 8 bin/launch_multinode.sh fit --config configs/agent_grpo.yaml
#   torchrun: NNODES=2 NODE_RANK=0 MASTER_ADDR=host0 bin/launch_multinode.sh fit --config configs/agent_grpo.yaml
# Set trainer.num_nodes / trainer.devices in the config (or as --trainer.num_nodes N) to match.
set -euo pipefail
if [ -n "${SLURM_PROCID:-}" ]; then
  exec mimesis-pl "$@"          # one task per GPU; Lightning's SLURMEnvironment does the rest
fi
exec torchrun \
  --nnodes "${NNODES:-1}" --node-rank "${NODE_RANK:-0}" --nproc-per-node "${GPUS_PER_NODE:-8}" \
  --master-addr "${MASTER_ADDR:-127.0.0.1}" --master-port "${MASTER_PORT:-29500}" \
  "$(command -v mimesis-pl)" "$@"
