#!/usr/bin/env bash
# Runs the worker's NVML backend on a machine with NVIDIA GPUs (outside CI): prints the
# driver, the GPU inventory as the worker registers it, MIG modes (and `nvidia-smi -L`,
# which lists MIG devices), then a minute of samples (one a second) while a small load
# runs on GPU 0 when PyTorch is present. Record the output, the GPU model and the date in
# bench/README.md.
#
#   bash bench/nvml_probe.sh            # builds target/release/berth if needed
#   BERTH=/path/to/berth bash bench/nvml_probe.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BERTH=${BERTH:-target/release/berth}
if [ ! -x "$BERTH" ]; then
  cargo build --release -p berth
fi
echo "== date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "== nvidia-smi -L"
nvidia-smi -L || echo "(nvidia-smi not found)"
LOAD_PID=
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python3 - <<'PY' &
import time, torch
x = torch.randn(8192, 8192, device="cuda:0")
end = time.time() + 40
while time.time() < end:
    x = x @ x
    x = x / x.norm()
torch.cuda.synchronize()
PY
  LOAD_PID=$!
  echo "== a 40 s matmul load runs on GPU 0 (pid $LOAD_PID)"
fi
echo "== berth gpus --require-nvml --seconds 60"
"$BERTH" gpus --require-nvml --seconds 60 --interval 1
if [ -n "$LOAD_PID" ]; then wait "$LOAD_PID" || true; fi
