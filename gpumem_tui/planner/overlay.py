"""The planned bar of one GPU, on the same scale as NVML's measured bar: bands that sum to the card."""

from __future__ import annotations

from gpumem_tui.planner.sglang.records import SglangPrediction
from gpumem_tui.planner.vllm import EnginePrediction
from gpumem_tui.records import Record
from gpumem_tui.units import GIB

# A CUDA process holds its context before the engine measures anything (about 0.5 GiB on H100).
CUDA_CONTEXT_BYTES = round(0.5 * GIB)


class PlannedBand(Record):
    """One band of the planned bar. `kind` groups bands for drawing and comparison."""

    name: str
    kind: str  # driver | weights | runtime | activations | graphs | kv | reserve | spare
    bytes: int


class GpuOverlay(Record):
    """What a plan says one GPU should hold, with the numbers to compare against the measurement."""

    label: str
    """`manual` (the user set it) or `auto` (built from what is running)."""
    title: str
    capacity_bytes: int
    bands: list[PlannedBand]
    engine_bytes: int
    """Memory the serving process itself should hold on this GPU (what NVML shows for its pid)."""
    kv_pool_bytes: int
    kv_pool_tokens: int | None = None
    measured_kv_bytes_per_token: int | None = None
    """KV bytes per token per GPU of the model the engine runs, to count its measured pool in bytes;
    None: the plan's own (pool bytes over pool tokens)."""

    @property
    def free_bytes(self) -> int:
        return sum(band.bytes for band in self.bands if band.kind in ("reserve", "spare"))


def overlay_from_engine(p: EnginePrediction, capacity_bytes: int, label: str, title: str) -> GpuOverlay:
    """vLLM's own bands on one rank: the driver's share, context and non-torch, weights, activations,
    CUDA graphs, the KV pool it carves, and what utilization leaves."""
    graphs_outside = 0 if p.cudagraph_charged else p.cudagraph_bytes
    bands = [
        PlannedBand(name="driver reserved", kind="driver", bytes=max(0, capacity_bytes - p.total_gpu_memory_bytes)),
        PlannedBand(name="weights", kind="weights", bytes=p.weights_bytes),
        PlannedBand(name="context + non-torch", kind="runtime", bytes=CUDA_CONTEXT_BYTES + p.non_torch_bytes),
        PlannedBand(name="activations", kind="activations", bytes=p.activation_peak_bytes),
        PlannedBand(name="CUDA graphs", kind="graphs", bytes=p.cudagraph_bytes),
        PlannedBand(name="KV pool", kind="kv", bytes=max(0, p.kv_cache_bytes)),
    ]
    held = sum(b.bytes for b in bands[1:])
    left = p.total_gpu_memory_bytes - p.requested_memory_bytes - CUDA_CONTEXT_BYTES - graphs_outside
    bands.append(PlannedBand(name="left by utilization", kind="reserve", bytes=max(0, left)))
    bands = _fit(bands, capacity_bytes)
    tokens = p.num_gpu_blocks * p.block_size if p.num_gpu_blocks else None
    return GpuOverlay(
        label=label,
        title=title,
        capacity_bytes=capacity_bytes,
        bands=bands,
        engine_bytes=held,
        kv_pool_bytes=max(0, p.kv_cache_bytes),
        kv_pool_tokens=tokens,
    )


def overlay_from_sglang(
    p: SglangPrediction, capacity_bytes: int, context_bytes: int, label: str, title: str
) -> GpuOverlay:
    """SGLang's own bands on one rank. Outside the fraction: the driver's share and what the process holds
    before its weights load (`context_bytes`: CUDA context, NCCL); inside `total` (the memory free then): the
    weights and KV pool that mem_fraction_static keeps, then in what it leaves the request table, the backend
    workspace, CUDA graphs, activations and what is left after them."""
    outside = max(0, capacity_bytes - p.total_bytes)
    context = min(outside, context_bytes)
    bands = [
        PlannedBand(name="driver reserved", kind="driver", bytes=outside - context),
        PlannedBand(name="CUDA context", kind="runtime", bytes=context),
        PlannedBand(name="weights", kind="weights", bytes=p.weights_bytes),
        PlannedBand(name="KV pool", kind="kv", bytes=max(0, p.kv_cache_bytes)),
        PlannedBand(name="request table", kind="runtime", bytes=p.req_to_token_bytes),
        PlannedBand(name="backend workspace", kind="runtime", bytes=p.workspace_bytes),
        PlannedBand(name="CUDA graphs", kind="graphs", bytes=p.cudagraph_bytes),
        PlannedBand(name="activations", kind="activations", bytes=p.activation_bytes),
    ]
    held = sum(b.bytes for b in bands[1:])
    left = PlannedBand(name="left by mem_fraction_static", kind="reserve", bytes=max(0, p.left_after_graphs_bytes))
    return GpuOverlay(
        label=label,
        title=title,
        capacity_bytes=capacity_bytes,
        bands=_fit([*bands, left], capacity_bytes),
        engine_bytes=held,
        kv_pool_bytes=max(0, p.kv_cache_bytes),
        kv_pool_tokens=p.kv_cache_tokens if p.kv_cache_tokens > 0 else None,
        measured_kv_bytes_per_token=p.cell_bytes,
    )


def _fit(bands: list[PlannedBand], capacity: int) -> list[PlannedBand]:
    """Append the spare (or shortfall, negative) so the bands sum exactly to the card."""
    spare = capacity - sum(b.bytes for b in bands if b.kind != "spare")
    return [b for b in bands if b.kind != "spare"] + [PlannedBand(name="spare", kind="spare", bytes=spare)]
