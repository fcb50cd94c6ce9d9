"""On a real GPU: does `snapshot --json` read each GPU's memory as nvidia-smi does?

    python3 bench/smi_compare.py SNAPSHOT.json SMI.csv [--tolerance-mib 8]

SMI.csv is `nvidia-smi --query-gpu=index,pci.bus_id,memory.used,memory.total,memory.reserved
--format=csv,noheader,nounits` (MiB, 2^20 bytes), taken right after the snapshot. Prints one line per GPU
(both readings and their difference in MiB) and exits 1 when any differs by more than the tolerance.

Tolerance, 8 MiB by default: both read the same NVML counters, nvidia-smi rounds to whole MiB, and the two
reads are a second apart on a GPU the script has not started anything on yet, so an honest difference is a
MiB or two. What this is here to catch is larger by far: `used` read with memory v1 against nvidia-smi's v2
differs by the reserved memory (hundreds of MiB), a wrong unit by a factor of 1.05 or 1024, another card
matched to this index by its whole size.
"""

from __future__ import annotations

import argparse
import json
import sys

MIB = 2**20
FIELDS = ("used", "total", "reserved")


def smi_rows(text: str) -> dict[str, dict[str, float | None]]:
    """nvidia-smi's CSV by bus id (the index is NVML's in both, but the bus id says it is the same card)."""
    rows = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        index, bus_id, *sizes = (field.strip() for field in line.split(","))
        values = [float(s) if s.replace(".", "", 1).isdigit() else None for s in sizes]
        rows[bus_id.upper()] = {"index": float(index), **dict(zip(FIELDS, values, strict=True))}
    return rows


def compare(snapshot: dict, smi: dict[str, dict[str, float | None]], tolerance_mib: float) -> tuple[list[str], int]:
    lines, bad = [f"{'GPU':<4}{'bus id':<18}{'field':<10}{'gpumem MiB':>12}{'smi MiB':>10}{'diff MiB':>10}"], 0
    for gpu in snapshot["gpus"]:
        bus_id = (gpu.get("bus_id") or "").upper()
        theirs = smi.get(bus_id)
        if theirs is None:
            lines.append(f"{gpu['index']:<4}{bus_id or '-':<18}not in nvidia-smi's list: FAIL")
            bad += 1
            continue
        if theirs["index"] != gpu["index"]:
            lines.append(f"{gpu['index']:<4}{bus_id:<18}nvidia-smi calls it GPU {theirs['index']:.0f}: FAIL")
            bad += 1
        for field in FIELDS:
            ours_bytes, smi_value = gpu.get(f"memory_{field}_bytes"), theirs[field]
            if ours_bytes is None or smi_value is None:
                lines.append(
                    f"{gpu['index']:<4}{bus_id:<18}{field:<10}{'-' if ours_bytes is None else ours_bytes / MIB:>12}"
                    f"{'-' if smi_value is None else smi_value:>10}{'n/a':>10}"
                )
                continue
            diff = ours_bytes / MIB - smi_value
            over = abs(diff) > tolerance_mib
            bad += over
            lines.append(
                f"{gpu['index']:<4}{bus_id:<18}{field:<10}{ours_bytes / MIB:>12.1f}{smi_value:>10.0f}{diff:>+10.1f}"
                + ("  FAIL" if over else "")
            )
    verdict = f"ok: every GPU within {tolerance_mib:g} MiB" if not bad else f"FAIL: {bad} reading(s) off"
    return [*lines, verdict], bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("smi_csv")
    parser.add_argument("--tolerance-mib", type=float, default=8.0)
    args = parser.parse_args(argv)
    with open(args.snapshot, encoding="utf-8") as f:
        snapshot = json.load(f)
    with open(args.smi_csv, encoding="utf-8") as f:
        smi = smi_rows(f.read())
    lines, bad = compare(snapshot, smi, args.tolerance_mib)
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
