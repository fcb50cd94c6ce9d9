"""An engine on a MIG GPU instance is planned against the instance's memory, never the whole card's, on a node
read through NVML as on one read from Prometheus (diagnosis/mig_plan.py, as the fleet plans it): the instance
its processes are on, its total as NVML reads it, else the memory its MIG profile names (assumed), else no plan
with the reason."""

from __future__ import annotations

from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.models import MigInstance
from gpumem_tui.units import GIB, MIB

from .build import engine, gpu, process, sample

INSTANCE = 40192 * MIB
"""An H100's 3g.40gb GPU instance."""


def _mig_node(total: int | None, name: str | None = "NVIDIA H100 80GB HBM3 MIG 3g.40gb"):
    instance = MigInstance(gpu_instance_id=1, name=name, memory_total_bytes=total, memory_used_bytes=30 * GIB)
    other = MigInstance(gpu_instance_id=2, name="NVIDIA H100 80GB HBM3 MIG 3g.40gb", memory_total_bytes=INSTANCE)
    card = gpu(0, used_gib=30, mig_enabled=True, mig_instances=[instance, other])
    return sample(gpus=[card], processes=[process(2100, 30, 0, gpu_instance_id=1)], engines=[engine()])


def test_the_engine_s_plan_is_made_for_its_instance(catalog):
    (plan,) = engine_plans(_mig_node(INSTANCE), catalog)
    assert plan.overlay is not None and plan.overlay.capacity_bytes == INSTANCE
    assert plan.overlay.engine_bytes < INSTANCE
    assert any("MIG GPU instance 1 of its card" in fact and "NVML's figures" in fact for fact in plan.found)


def test_an_instance_whose_total_is_unknown_is_sized_by_its_profile_or_not_at_all(catalog):
    (plan,) = engine_plans(_mig_node(None), catalog)
    assert plan.overlay is not None and plan.overlay.capacity_bytes == 40 * GIB
    assert any("as its MIG profile 3g.40gb names it" in fact for fact in plan.assumed)
    (plan,) = engine_plans(_mig_node(None, name=None), catalog)
    assert plan.overlay is None and plan.missing is not None
    assert "MIG GPU instance 1 of its card, whose memory is not known" in plan.missing
    assert plan.missing.endswith("a plan for the whole card would not be its")
