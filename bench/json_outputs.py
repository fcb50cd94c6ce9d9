"""Write every command's `--json` output to a folder, one file per run, so that two commits can be compared
with `diff -r` (a refactor must leave them byte-identical).

    python3 bench/json_outputs.py OUT_DIR

Runs `snapshot` and `check` on every demo scenario, `plan` on the README's examples, `fleet snapshot` and
`fleet check` on the demo fleet and on the test fleet (a real Prometheus over `tests/sources/prometheus`'s
backfilled blocks, at several moments and reads), and `check --prometheus --node` for each of its nodes.
Needs `prometheus` and `promtool` on PATH for the test fleet (skipped with a line where missing)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLANS = [
    "--model llama-3.1-70b --gpu h100 --gpu-memory 80GB --users 40 --context 8192 --weights fp8 --kv-dtype fp8",
    "--model llama-3.1-70b --gpu h100 --gpu-memory 80GB --users 40 --context 8192 --weights fp8 --kv-dtype fp8"
    " --engine vllm",
    "--model llama-3.1-70b --gpu h100 --gpu-memory 80GB --users 40 --context 8192",
    "--model llama-3.1-8b --gpu h100",
    "--model llama-3.1-8b --gpu h100 --engine vllm",
    "--model llama-3.1-8b --gpu a100 --users 64 --context 32768 --engine vllm --vllm-version 0.6.4",
]


def run(out: Path, name: str, *args: str, url: str = "") -> None:
    """One run's exit status and standard output. Free ports differ each run: the test Prometheus's URL reads
    `PROMETHEUS`, and a demo engine's ephemeral port (`snapshot --demo` names where it listened) `PORT`."""
    done = subprocess.run([sys.executable, "-m", "gpumem_tui", *args], capture_output=True, text=True, cwd=ROOT)
    text = done.stdout.replace(url, "PROMETHEUS") if url else done.stdout
    text = re.sub(r"(http://127\.0\.0\.\d+):\d{5}\b", r"\1:PORT", text)
    (out / f"{name}.json").write_text(f"exit {done.returncode}\n{text}", encoding="utf-8")


def scenarios() -> list[str]:
    return sorted(path.stem for path in (ROOT / "catalog" / "scenarios").glob("*.toml"))


def node_runs(out: Path) -> None:
    for scenario in scenarios():
        run(out, f"snapshot-{scenario}", "snapshot", "--demo", scenario, "--json")
        run(out, f"check-{scenario}", "check", "--demo", scenario, "--json")
    for i, plan in enumerate(PLANS):
        run(out, f"plan-{i}", "plan", *plan.split(), "--json")
    run(out, "fleet-snapshot-demo", "fleet", "snapshot", "--demo", "--json")
    run(out, "fleet-check-demo", "fleet", "check", "--demo", "--json")


def fleet_runs(out: Path) -> None:
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        print("prometheus or promtool not on PATH: the test fleet is skipped")
        return
    from tests.sources.prometheus.conftest import AT, FLEET, fleet_text
    from tests.sources.prometheus.server import backfill, running

    with tempfile.TemporaryDirectory() as where, running(backfill(fleet_text(), Path(where))) as url:
        for at in (AT - 70, AT, AT + 30):
            for read in ("", "--overview", "--full"):
                for action in ("snapshot", "check"):
                    extra = [read] if read else []
                    tag = f"fleet-{action}-{at}{read.replace('--', '-')}"
                    run(out, tag, "fleet", action, "--prometheus", url, "--at", str(at), *extra, "--json", url=url)
        for spec in FLEET:
            args = ("check", "--prometheus", url, "--node", spec.name, "--at", str(AT), "--json")
            run(out, f"node-check-{spec.name}", *args, url=url)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    node_runs(out)
    fleet_runs(out)
    print(f"{len(list(out.glob('*.json')))} outputs in {out}")


if __name__ == "__main__":
    main()
