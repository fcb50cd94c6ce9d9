"""A MIG card whose slices' processes hold its memory: nothing is unattributed, as root or not (the
simulated node through the fake driver and the real binding, then the rules)."""

from __future__ import annotations

import pytest

from gpumem_tui.demo import ManualClock, demo_collector
from gpumem_tui.demo.scenario import parse_scenario
from gpumem_tui.diagnosis.diagnose import diagnose
from gpumem_tui.diagnosis.findings import Thresholds
from gpumem_tui.diagnosis.history import History
from tests.configs import MIG_ONE_JOB

MIG_CARD = (
    MIG_ONE_JOB
    + """
[[processes]]
id = "notebook"
gpus = [0]
memory_gib = 6
mig_instance = 1
"""
)


@pytest.mark.parametrize("root", [True, False], ids=["root", "user"])
def test_a_mig_card_whose_slices_hold_the_memory_has_nothing_unattributed(root):
    toml = MIG_CARD if root else "nvml_root = false\n" + MIG_CARD
    collector, _node = demo_collector(parse_scenario(toml), clock=ManualClock(5))
    sample = collector.sample()
    history = History()
    history.add(sample)
    findings = diagnose([], sample, history, Thresholds())
    assert [f.code for f in findings if f.code == "unattributed_memory"] == [], [f.title for f in findings]
    assert sorted(p.gpu_memory_bytes for p in sample.processes) == [6 * 2**30, 20 * 2**30]
