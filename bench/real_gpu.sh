#!/usr/bin/env bash
# gpumem-tui against a real GPU: what only a real driver can say. Three steps, all outputs under $OUT
# (default ./real_gpu_out):
#   (a) `gpumem-tui snapshot --json` beside `nvidia-smi --query-gpu=index,pci.bus_id,memory.used,
#       memory.total,memory.reserved`, per GPU, matched by bus id: both readings and the difference in MiB,
#       fails beyond 8 MiB (why 8: bench/smi_compare.py)            -> snapshot.json nvidia-smi.csv compare.txt
#   (b) a child process allocates 1, 4 and 16 GiB through the CUDA driver API (ctypes on libcuda.so.1);
#       its process row must grow by each within the CUDA context's size (bench/cuda_alloc.py) -> alloc.txt
#   (c) the TUI for 20 s under tmux at 160x50, the screen captured (skipped, and said, without tmux) -> tui.txt
# Everything printed also goes to log.txt. Exit status: 0 all passed, 1 a reading out of tolerance, 2 a step
# could not run (no driver, no GPU, nothing to compare).
#
# Needs on the GPU machine: the NVIDIA driver (libnvidia-ml.so.1, libcuda.so.1, nvidia-smi), python3 >= 3.11,
# this checkout, and the wheels bench/real_gpu_prep.sh builds into bench/wheels/ (git ignores them): that
# machine reaches no package registry. Here, once:
#
#     bash bench/real_gpu_prep.sh
#
# then on the device machine (the `run` tool; $OUT is set there and comes back):
#
#     run(command="bash bench/real_gpu.sh", carry=["bench/wheels"], timeout_s=240)
#
# About 90 s: two snapshots, four more during the allocations, 20 s of TUI. Anywhere else with a GPU:
# `OUT=somewhere bash bench/real_gpu.sh`.
#
# Expected output (shape):
#   == versions            python, nvidia-ml-py, textual, pydantic; nvidia-smi's driver and GPU names
#   == (a) snapshot vs nvidia-smi
#   <snapshot's text: host, time, `driver 580.x`, a GPU table with Bus-Id, the processes>
#   GPU bus id            field     gpumem MiB   smi MiB  diff MiB
#   0   00000000:18:00.0  used           0.0         0      +0.0
#   0   00000000:18:00.0  total     143771.0    143771      +0.0
#   0   00000000:18:00.0  reserved     530.0       530      +0.0
#   ok: every GPU within 8 MiB
#   == (b) CUDA allocations
#   child pid N on GPU 0 (NVML index)
#   context      row   500.0 MiB  nvidia-smi   500 MiB
#   alloc  1 GiB row  1524.0 MiB  nvidia-smi  1524 MiB  growth  1024.0 MiB  off by     0.0 MiB  ok
#   alloc  4 GiB row  ...
#   alloc 16 GiB row  ...
#   ok: every allocation within the context size (500.0 MiB)
#   == (c) TUI under tmux
#   <the first lines of the captured screen>
#   == result: a=0 b=0 c=0
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-./real_gpu_out}
mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1

site=$(mktemp -d)
if compgen -G "bench/wheels/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" bench/wheels/*.whl ||
        { echo "could not install bench/wheels: see above"; exit 2; }
else
    echo "no bench/wheels: using the packages python3 already has (bench/real_gpu_prep.sh builds them)"
fi
export PYTHONPATH="$site:$PWD"

echo "== versions"
python3 - <<'PY'
import sys
from importlib.metadata import version
print("python", sys.version.split()[0], *(f"{n} {version(n)}" for n in ("nvidia-ml-py", "textual", "pydantic")))
PY
if ! command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi not found: this is no GPU machine"
    exit 2
fi
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader

echo "== (a) snapshot vs nvidia-smi"
a=0
if python3 -m gpumem_tui snapshot --json >"$OUT/snapshot.json"; then
    nvidia-smi --query-gpu=index,pci.bus_id,memory.used,memory.total,memory.reserved \
        --format=csv,noheader,nounits >"$OUT/nvidia-smi.csv"
    COLUMNS=160 python3 -m gpumem_tui snapshot
    python3 bench/smi_compare.py "$OUT/snapshot.json" "$OUT/nvidia-smi.csv" >"$OUT/compare.txt"
    a=$?
    cat "$OUT/compare.txt"
else
    a=2
fi

echo "== (b) CUDA allocations"
python3 bench/cuda_alloc.py --gpu 0 --sizes-gib 1 4 16 >"$OUT/alloc.txt" 2>&1
b=$?
cat "$OUT/alloc.txt"

echo "== (c) TUI under tmux"
c=0
if command -v tmux >/dev/null; then
    tmux new-session -d -s gpumem -x 160 -y 50 "env PYTHONPATH='$PYTHONPATH' python3 -m gpumem_tui"
    sleep 20
    tmux capture-pane -p -t gpumem >"$OUT/tui.txt" || { c=2; echo "the TUI was gone before 20 s: see log.txt"; }
    tmux kill-session -t gpumem 2>/dev/null
    head -n 12 "$OUT/tui.txt"
else
    echo "tmux not installed: the TUI step is skipped"
fi

echo "== result: a=$a b=$b c=$c"
worst=0
for status in "$a" "$b" "$c"; do
    [ "$status" -gt "$worst" ] && worst=$status
done
exit "$worst"
