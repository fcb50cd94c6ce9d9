"""On a real GPU: does `snapshot --json`'s process row grow by what a process allocates?

    python3 bench/cuda_alloc.py [--gpu N] [--sizes-gib 1 4 16] [--dry-run]

A child process takes a CUDA context through the driver API (ctypes on libcuda.so.1, which ships with the
driver: nothing to install), then allocates each size in turn with cuMemAlloc_v2, holds it while this
process reads `gpumem-tui snapshot --json`, and frees it. The child's row before the first allocation is
the context's own size; each allocation must then show as that row plus the size, within the context's size
(allocation granularity and page tables land there too). `nvidia-smi --query-compute-apps` is printed
beside it where nvidia-smi is on the PATH. `--dry-run` prints the plan and touches no GPU.

Output, one line per step, then a verdict (exit 0 when every step is within tolerance, 1 when not, 2 when
the GPU or the process row cannot be read):

    child pid 4242 on GPU 0 (NVML index)
    context      row   512.0 MiB  nvidia-smi   512 MiB
    alloc  1 GiB row  1536.0 MiB  nvidia-smi  1536 MiB  growth  1024.0 MiB  off by     0.0 MiB  ok
    ...
    ok: every allocation within the context size (512.0 MiB)

The GPU index is NVML's; the child is started with CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA's device N
is the same card, and without CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
MIB = 2**20


def child(gpu: int, sizes_gib: list[int]) -> int:
    """The CUDA side: context, then each allocation on `go`, freed on `free`; one line per step on stdout."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise SystemExit(f"child: no CUDA driver library (libcuda.so.1): {exc}") from None

    def check(what: str, code: int) -> None:
        if code != 0:
            name = ctypes.c_char_p()
            cuda.cuGetErrorName(code, ctypes.byref(name))
            raise SystemExit(f"child: {what} failed: CUDA error {code} ({(name.value or b'?').decode()})")

    device, context, pointer = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    check("cuInit", cuda.cuInit(0))
    check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), gpu))
    check("cuCtxCreate_v2", cuda.cuCtxCreate_v2(ctypes.byref(context), 0, device))
    print("context", flush=True)
    for size in sizes_gib:
        if not sys.stdin.readline():  # the parent has read the row before this allocation, or has gone
            break
        check(f"cuMemAlloc_v2 {size} GiB", cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size * GIB)))
        print(f"allocated {size}", flush=True)
        sys.stdin.readline()  # the parent has read the row with it
        check("cuMemFree_v2", cuda.cuMemFree_v2(pointer))
        check("cuCtxSynchronize", cuda.cuCtxSynchronize())
    print("done", flush=True)
    sys.stdin.readline()
    cuda.cuCtxDestroy_v2(context)
    return 0


def row_bytes(pid: int, gpu: int) -> int | None:
    """The child's GPU memory as `gpumem-tui snapshot --json` reports it on this GPU."""
    rows = [p for p in snapshot()["processes"] if p["pid"] == pid and p["gpu_index"] == gpu]
    return rows[0]["gpu_memory_bytes"] if rows else None


def snapshot() -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "gpumem_tui", "snapshot", "--json"], capture_output=True, text=True, cwd=ROOT
    )
    if out.returncode != 0:
        raise SystemExit(f"snapshot --json failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


def smi_mib(pid: int) -> str:
    """nvidia-smi's reading of the same pid, in MiB, or why there is none."""
    if shutil.which("nvidia-smi") is None:
        return "-"
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
    )
    for line in out.stdout.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if fields[0] == str(pid):
            return fields[1]
    return "absent"


def mib(n: int | None) -> str:
    return "    -" if n is None else f"{n / MIB:7.1f}"


def parent(gpu: int, sizes_gib: list[int]) -> int:
    env = {**os.environ, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    command = [sys.executable, __file__, "--child", "--gpu", str(gpu), "--sizes-gib", *map(str, sizes_gib)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    print(f"child pid {proc.pid} on GPU {gpu} (NVML index)", flush=True)
    try:
        if proc.stdout.readline().strip() != "context":
            print("no CUDA context: see the child's message above", flush=True)
            return 2
        context = row_bytes(proc.pid, gpu)
        print(f"context      row {mib(context)} MiB  nvidia-smi {smi_mib(proc.pid):>5} MiB", flush=True)
        if not context:
            seen = [(p["pid"], p["gpu_memory_bytes"]) for p in snapshot()["processes"] if p["gpu_index"] == gpu]
            print(f"the child has no process row with memory; (pid, bytes) NVML lists on GPU {gpu}: {seen}")
            return 2
        failed = 0
        for size in sizes_gib:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            if proc.stdout.readline().strip() != f"allocated {size}":
                print(f"the child could not allocate {size} GiB", flush=True)
                return 2
            row = row_bytes(proc.pid, gpu)
            growth = None if row is None else row - context
            off = None if growth is None else growth - size * GIB
            ok = off is not None and abs(off) <= context
            failed += not ok
            print(
                f"alloc {size:2d} GiB row {mib(row)} MiB  nvidia-smi {smi_mib(proc.pid):>5} MiB"
                f"  growth {mib(growth)} MiB  off by {mib(off)} MiB  {'ok' if ok else 'OUT OF TOLERANCE'}",
                flush=True,
            )
            proc.stdin.write("free\n")
            proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write("end\n")
        proc.stdin.flush()
        verdict = "ok: every allocation" if not failed else f"FAIL: {failed} allocation(s) not"
        print(f"{verdict} within the context size ({context / MIB:.1f} MiB)")
        return 1 if failed else 0
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0, help="NVML index of the GPU (default 0)")
    parser.add_argument("--sizes-gib", type=int, nargs="+", default=[1, 4, 16], help="GiB to allocate, in turn")
    parser.add_argument("--dry-run", action="store_true", help="print the plan; no libcuda, no GPU")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.gpu, args.sizes_gib)
    if args.dry_run:
        print(f"plan: a child takes a CUDA context on GPU {args.gpu} (CUDA_DEVICE_ORDER=PCI_BUS_ID), row = context")
        for size in args.sizes_gib:
            print(f"plan: cuMemAlloc_v2 {size} GiB; snapshot --json; expect row = context + {size * 1024} MiB")
        print("plan: pass when each growth is within the context's own size of the allocation")
        return 0
    return parent(args.gpu, args.sizes_gib)


if __name__ == "__main__":
    raise SystemExit(main())
