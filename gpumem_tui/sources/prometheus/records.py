"""Pure records of one fleet sample read from Prometheus: nodes, GPUs, engines, coverage, and the source's
state. A field Prometheus does not give is None with its reason in `unknown` (field -> why): never a
number that reads as fine. Sizes are bytes (dcgm-exporter's MiB times 2^20)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from gpumem_tui.records import Record as _Record

SourceState = Literal["ok", "stale", "down"]
Joined = Literal["found", "assumed", "not joined"]
PlanFrom = Literal["exporter", "catalog"]
MemoryFrom = Literal["dcgm-exporter", "gpumem-tui export"]
"""Which exporter's figures a GPU's or node's memory is: dcgm-exporter's where it reports the node (then the
node's `gpumem-tui export`, if any, is compared, not added), else the node's `gpumem-tui export`."""
NodeFigures = Literal["raw series", "recording rules"]


class FleetProcess(_Record):
    """A process that is not an engine, on one GPU (`gpumem_process_memory_used_bytes`)."""

    pid: str
    """Its pid, or `other`: what the processes beyond the exporter's `--top-processes` hold together."""
    name: str | None = None
    pod: str | None = None
    """`namespace/pod` when its cgroup names one."""
    used_bytes: int


class FleetGpu(_Record):
    """One GPU (or MIG GPU instance) as dcgm-exporter reports it, deduplicated: figures per GPU."""

    node: str
    index: str | None = None
    """dcgm-exporter's `gpu` label (NVML's index, the parent's for MIG)."""
    uuid: str | None = None
    gpu_instance: str | None = None
    """`GPU_I_ID` of a MIG GPU instance; None for a whole card."""
    gpu_instance_profile: str | None = None
    """`GPU_I_PROFILE` of a MIG GPU instance (`3g.40gb`), as dcgm-exporter labels it."""
    card: str | None = None
    """`modelName` (`NVIDIA H100 80GB HBM3`)."""
    used_bytes: int | None = None
    free_bytes: int | None = None
    reserved_bytes: int | None = None
    total_bytes: int | None = None
    """used + free + reserved; used + free where the exporter gives no reserved (then a note says so)."""
    pods: list[str] = []
    """`namespace/pod` of the workloads the kubelet allocated this GPU to."""
    memory_from: MemoryFrom = "dcgm-exporter"
    processes: list[FleetProcess] = []
    """Processes that are not an engine holding memory on it, as the node's `gpumem-tui export` publishes them
    (its `--top-processes` largest, then one `pid="other"` row for the rest); empty without an exporter."""
    unknown: dict[str, str] = {}


class FleetPlan(_Record):
    """A plan made here for an engine, from the catalog with the single-node planner (diagnosis/autoplan.py's
    rules): the figures the fleet's findings hold the engine against, and the facts behind them."""

    model: str
    """The catalog model."""
    card: str
    """The catalog GPU it is sized for."""
    tensor_parallel: int
    per_gpu_bytes: int
    """What the engine should hold on each of its GPUs: weights, context and non-torch memory, activations,
    CUDA graphs and the KV pool (the bands `gpumem-tui export` publishes, less driver_reserved, reserve and
    spare)."""
    weights_bytes: int
    """Weights per GPU."""
    overhead_bytes: int
    """CUDA context, non-torch memory and CUDA graphs per GPU."""
    activation_peak_bytes: int
    kv_cache_tokens: int
    """The KV pool the plan predicts, in tokens (0: the plan does not fit)."""
    kv_bytes_per_token: int
    """KV cache bytes one token takes on one GPU with the engine's own cache settings."""
    max_model_len: int
    failures: list[str] = []
    """Why the plan does not fit, as the planner says it (its prediction's failures)."""
    warnings: list[str] = []
    """What the planner warns about the plan."""
    found: list[str] = []
    assumed: list[str] = []


class FleetEngine(_Record):
    """One engine (a `model_name` + `engine` of one scrape target) and how it was joined to GPUs."""

    kind: str = "vllm"
    """Which engine it is (the registry's kind, by the names of its series); left out of JSON for vLLM, the
    fleet's first engine, whose records had no kind before."""
    model_name: str
    engine: str | None = None
    namespace: str | None = None
    pod: str | None = None
    instance: str | None = None
    job: str | None = None
    node: str | None = None
    gpus: list[str] = []
    """UUIDs (else indexes) of the GPUs joined to it, from the pod-to-GPU join."""
    gpu_indices: list[int] = []
    """Their indices (dcgm-exporter's `gpu` label), one for each of `gpus`, where the join read every one (else
    empty): how the node names its GPUs (`on GPU 6, 7`), also where they were not read one by one."""
    gpu_count: int | None = None
    """How many GPUs are joined to it, counted per node on the server (None: not joined)."""
    joined: Joined = "not joined"
    join_reason: str = ""
    """How it was joined (found: the GPUs carry its pod; assumed: its node's only engine) or why not."""
    kv_usage_fraction: float | None = None
    pool_tokens: int | None = None
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    cache_dtype: str | None = None
    gpu_memory_utilization: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    preemptions_per_min: float | None = None
    requests_swapped: float | None = None
    """Requests swapped out to CPU memory (vLLM v0), where some are; None, and left out of JSON, elsewhere."""
    settings: dict[str, str] = {}
    """The labels of its `vllm:cache_config_info` that are settings (not counts measured at start-up)."""
    sleep_state: str | None = None
    """vLLM's `sleep_state` when the engine is asleep (`weights_offloaded`, `discard_all`); None when awake or
    when it does not say."""
    planned_bytes: int | None = None
    """GPU memory its plan expects over all its GPUs together; None with the reason in `unknown`."""
    plan_from: PlanFrom | None = None
    """Where that plan came from: `exporter` (the `gpumem_plan_bytes` series of its node's `gpumem-tui
    export`) or `catalog` (made here from the catalog's model and its own cache settings)."""
    plan: FleetPlan | None = None
    """The plan made here (`plan_from` = `catalog`), with its figures and facts."""
    unknown: dict[str, str] = {}

    @model_serializer(mode="wrap")
    def _left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        data = handler(self)
        if self.requests_swapped is None:
            data.pop("requests_swapped", None)
        if self.kind == "vllm":
            data.pop("kind", None)
        return data

    @property
    def name(self) -> str:
        where = f"{self.namespace}/{self.pod}" if self.pod else self.instance or "?"
        engine = f" engine {self.engine}" if self.engine not in (None, "0") else ""
        return f"{self.model_name} at {where}{engine}"


class NodeLow(_Record):
    """A node's GPUs under the headroom warning fraction, counted on the server (the overview, on a node
    whose GPUs were not read one by one because its engines' gpu_memory_utilization explains them)."""

    gpus: int
    """GPUs whose free memory is under the fraction of their card."""
    least_free_bytes: int
    """Free memory of the GPU with the least (per GPU)."""
    least_free_total_bytes: int
    """That GPU's card: used + free + reserved (the same on every GPU of the card)."""


class FleetNode(_Record):
    """One node: figures per node, summed on the server over all its GPUs (each counted once), whether or
    not its GPUs were read one by one."""

    name: str
    gpus: int = 0
    cards: dict[str, int] = {}
    """GPU model -> count."""
    used_bytes: int | None = None
    free_bytes: int | None = None
    reserved_bytes: int | None = None
    total_bytes: int | None = None
    data_age_s: float | None = None
    """Seconds between the newest sample of the node and the evaluation time."""
    engines: list[str] = []
    """Names of the engines joined to it."""
    memory_from: MemoryFrom | None = None
    """Whose figures `used_bytes` ... `total_bytes` are; None when no exporter reports the node's GPUs."""
    exporter_used_bytes: int | None = None
    """Used memory as the node's `gpumem-tui export` reads it, where dcgm-exporter's figures are the node's:
    the two are compared, never added."""
    other_processes_bytes: int | None = None
    """Memory that processes that are not an engine hold on the node's GPUs (its `gpumem-tui export`'s)."""
    low: NodeLow | None = None
    """Its GPUs under the headroom fraction, counted on the server: only in the overview, where they are
    as its engines planned and so were not read one by one (else None: see `FleetSample.gpus`)."""
    unknown: dict[str, str] = {}


class NodeFinding(_Record):
    """A finding a node's own `gpumem-tui export` raises (`gpumem_finding_active`), as its labels say it."""

    node: str
    code: str
    severity: str
    gpu: str | None = None
    pid: str | None = None
    endpoint: str | None = None
    model_name: str | None = None
    title: str | None = None
    """The finding's title and what to try as the node's `check` says them (`gpumem_finding_info`); None where
    the exporter publishes no words for it (an older one, `refresh_failed`)."""
    try_this: str | None = None


class Coverage(_Record):
    nodes: int = 0
    gpus: int = 0
    engines: int = 0
    joined: int = 0
    """Engines joined to GPUs, found or assumed."""
    not_joined: int = 0

    @classmethod
    def of(cls, nodes: list[FleetNode], engines: list[FleetEngine]) -> Coverage:
        joined = sum(e.joined != "not joined" for e in engines)
        return cls(
            nodes=len(nodes),
            gpus=sum(n.gpus for n in nodes),
            engines=len(engines),
            joined=joined,
            not_joined=len(engines) - joined,
        )


QUIET_FIELDS = ("kv_usage_fraction", "requests_running")
"""What a refresh by exception (`Queries.over`) reads of an engine only where its KV usage is at or over the
fraction: an engine under it has them per model (FleetSample.models)."""


class ModelGauges(_Record):
    """One model's engines' gauges, read per model on the server (`Queries.model_gauges`): the largest KV usage
    and the requests running in all; None with the reason in `unknown` where not every engine of the model
    reported one (or one reported twice)."""

    kv_usage_max: float | None = None
    requests_running: float | None = None
    unknown: dict[str, str] = {}


class FleetSample(_Record):
    """Everything one evaluation read from Prometheus."""

    source: str
    """The server's URL."""
    evaluated_at: float
    """Unix seconds the queries were evaluated at (--at, or now)."""
    state: SourceState = "ok"
    error: str | None = None
    warnings: list[str] = []
    """The server's own warnings (a partial answer) and notes about what was read."""
    selector: str = ""
    nodes: list[FleetNode] = []
    """Per node: every node, its memory summed over all its GPUs."""
    gpus: list[FleetGpu] = []
    """Per GPU, the ones read one by one: every GPU in a full read (`fleet snapshot`, `fleet check --full`);
    in the overview (`fleet check`, the fleet screen) only on the nodes that need a look, and of those only
    the GPUs whose free memory is under the headroom warning fraction of the card or whose reading is
    missing or not a number, so the answer grows with nodes, not GPUs. A node whose GPUs are under the fraction as its
    engines planned is counted in its `low`. Counts of all GPUs are in `nodes` and `coverage`."""
    engines: list[FleetEngine] = []
    pod_nodes: dict[str, str] = {}
    """Per workload: `namespace/pod` -> the node of the GPUs dcgm-exporter attributes to it (every pod, also
    where its GPUs were not read one by one)."""
    targets_down: list[dict[str, str]] = []
    """Labels of vLLM scrape targets whose `up` is 0."""
    node_findings: list[NodeFinding] = []
    """Findings of the nodes that run `gpumem-tui export`."""
    exporter_nodes: dict[str, float] = {}
    """Nodes that run `gpumem-tui export`: name -> the age in seconds of the newest sample it published."""
    stale_nodes: dict[str, float | None] = {}
    """Nodes whose newest sample is older than twice the collection interval: name -> its age in seconds,
    None when it is past Prometheus's 5 min lookback (seen within the last hour, not since)."""
    coverage: Coverage = Coverage()
    data_age_s: float | None = None
    """The oldest data age among the nodes that are not stale."""
    held_back_s: float = 0.0
    """Seconds the server answers behind the time asked, its newest samples hidden (VictoriaMetrics'
    `-search.latencyOffset`, 30 s by default; 0 on Prometheus): the data is that much older than its ages
    say (sources/prometheus/held_back.py)."""
    node_figures_from: NodeFigures = "raw series"
    """Where the per-node figures came from: the raw dcgm-exporter series aggregated by the query, or the
    `gpumem:*` series of `gpumem-tui fleet rules` (the overview uses them when the server has them)."""
    join_age_s: float | None = None
    """Seconds since the pod-to-GPU join (and the GPUs per node and card) was read: the overview reads these
    slow facts every 5 min or when the set of nodes changes; 0 when read with this sample."""
    unknown: dict[str, str] = {}
    models: dict[str, ModelGauges] = Field(default={}, exclude=True)
    """Per model (`model_name`), its engines' KV usage and requests running as the fleet screen reads them
    between its reads of the pools (`Queries.over`): on the server, where each engine's were read only at or
    over the saturation fraction. Empty where every engine's were read. Never in the JSON, as `reading`."""
    reading: list[str] = Field(default=[], exclude=True)
    """A first look (the fleet screen's first frame): what is still being read, in words, while the sample
    holds the first read's answers but the costly slow facts; the findings that need them wait (judge.py).
    Empty: the whole picture. Never in the JSON: `fleet check` and `fleet snapshot` make the whole read."""
