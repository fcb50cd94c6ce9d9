"""What each problem scenario of the demo must say in the first 80 columns of its first line (the node
screen's line under the header and `check`'s first line): what broke and where, then who. One moment per
problem the demo stories show; the words are the findings' own titles."""

from __future__ import annotations

COLUMNS = 80

PROBLEMS = [
    ("kv-pressure", 90, ["KV cache full on GPU 0:", "waiting"]),
    ("busy-node", 150, ["KV cache full on GPU 6,7:", "waiting"]),
    ("noisy-neighbour", 45, ["other process on GPU 0:", "python3 pid 3100 holds"]),
    ("noisy-neighbour", 60, ["engine exited on GPU 0", "python3 pid 3100 grew"]),
    ("gpu-lost", 90, ["engine exited on GPU 2", "lost"]),
    ("wrong-precision", 90, ["weights", "x the plan on GPU 0,1"]),
]
"""(scenario, seconds into it, what the first 80 columns must hold)."""
