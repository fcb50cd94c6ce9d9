"""An engine's exit names its cause: a lost GPU when its card was lost, and free memory only when it was
short (what the plan leaves on purpose is no cause)."""

from __future__ import annotations

import json

from gpumem_tui.cli import main


def test_an_engine_on_a_lost_gpu_exited_because_the_gpu_was_lost(capsys):
    assert main(["check", "--demo", "gpu-lost", "--json"]) == 2
    findings = json.loads(capsys.readouterr().out)["findings"]
    [exited] = [f for f in findings if f["code"] == "engine_exited"]
    assert exited["title"].startswith("engine exited on GPU 2: its GPU was lost")
    # 7.31 GiB free (9 % of the card) is the engine's planned headroom, not why it died
    assert "free memory" not in exited["title"] and "no shortage" in exited["explanation"]
    assert exited["gpu_index"] == 2 and "dmesg" in exited["try_this"]
    assert [f["code"] for f in findings if f["severity"] == "critical"] == ["engine_exited", "gpu_lost"]
