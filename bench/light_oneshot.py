"""One-shot commands: CPU of the whole process as a ratio to the baseline (bench/light.py).

    python3 bench/light_oneshot.py [N]

run alone, prints where each command's start goes instead: the N packages whose modules take longest to
import (`python -X importtime`, self time, compiled bytecode), and how many modules it loads in all."""

from __future__ import annotations

import collections
import subprocess
import sys

from light_common import ROOT, Figure, compile_package, environment, median_cpu

COMMANDS = (
    ("plan --model llama-3.1-8b --gpu h100", 2.0),
    ("check --demo noisy-neighbour", 3.0),
    ("fleet check --demo", 4.0),
)


def figures(base_cpu_s: float, quick: bool) -> list[Figure]:
    out = []
    for command, goal in COMMANDS:
        cpu = median_cpu((sys.executable, "-m", "gpumem_tui", *command.split()), 3 if quick else 7)
        ratio = cpu / base_cpu_s
        out.append(Figure(f"`{command}`", f"{ratio:.1f}x ({cpu * 1000:.0f} ms)", f"<= {goal:g}x", ratio <= goal))
    return out


def import_costs(command: str) -> tuple[int, collections.Counter[str]]:
    """How many modules `command` imports, and the self time of their imports in µs by package (ours by
    subpackage: `gpumem_tui.catalog`)."""
    argv = [sys.executable, "-X", "importtime", "-m", "gpumem_tui", *command.split()]
    done = subprocess.run(argv, capture_output=True, text=True, env=environment(), cwd=ROOT)
    by_package: collections.Counter[str] = collections.Counter()
    modules = set()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        parts = name.strip().split(".")
        by_package[".".join(parts[:2]) if parts[0] == "gpumem_tui" else parts[0]] += int(own)
        modules.add(name.strip())  # a failed import is timed again at each attempt
    return len(modules), by_package


def main() -> int:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    compile_package()
    for command, _ in COMMANDS:
        modules, costs = import_costs(command)
        print(f"{command}: {modules} modules, {sum(costs.values()) / 1000:.0f} ms importing")
        for package, us in costs.most_common(top):
            print(f"  {us / 1000:6.1f} ms  {package}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
