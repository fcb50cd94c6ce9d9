"""Every figure of "light": what the tool costs the node it watches, printed as one table.

    python3 bench/light.py [--quick] [--only PART ...]

Each part lives in its own module (`light_<part>.py`, a `figures(base_cpu_s, quick)` function) and is
measured in this run, against the baseline measured first (bench/light_common.py): a process that imports
pydantic and httpx. `--quick` takes fewer runs and shorter windows (a rough look, not the figure to quote).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from light_common import Figure, baseline_cpu, compile_package  # noqa: E402

PARTS = ("oneshot", "tui", "fleet", "metrics", "tests")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args()
    compile_package()
    base = baseline_cpu(3 if args.quick else 7)
    print(f"baseline: a process that imports pydantic + httpx, {base * 1000:.0f} ms CPU (median)")
    rows: list[Figure] = []
    for part in args.only:
        module = importlib.import_module(f"light_{part}")
        for figure in module.figures(base, args.quick):
            verdict = "-" if figure.shown.startswith("skipped") else "ok" if figure.met else "MISSED"
            print(f"  {figure.what:<58} {figure.shown:>18}  goal {figure.goal:<10} {verdict}")
            rows.append(figure)
    missed = [row.what for row in rows if not row.met]
    print(f"{len(rows) - len(missed)} of {len(rows)} goals hold" + (f"; missed: {', '.join(missed)}" if missed else ""))
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
