"""Scenario files for the simulated node: GPUs, engines, other processes and a timeline (pydantic).

A scenario file is outside input: every number is finite and bounded (the node is stepped once a
simulated second, so a day of it or 64 GPUs is as far as a file may ask), every GPU an event names
exists, and a file that is not TOML (nested past reason, an integer too long to read, not UTF-8, over
MAX_FILE_BYTES) is a ScenarioError: one line, exit 2."""

from __future__ import annotations

import difflib
import sys
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from gpumem_tui.demo.shipped import scenario_dir, scenario_names
from gpumem_tui.models import LATEST_TIMESTAMP
from gpumem_tui.records import FiniteRecord
from gpumem_tui.text import literal

MAX_DURATION_S = 86_400
"""A day of simulated time: the node steps once a second, so a demo opens in seconds at most."""
MAX_GPUS = 64
MAX_MIG_DEVICES = 7
"""An A100 or H100 has seven compute slices: at most seven MIG devices (compute instances) per card."""
MAX_FILE_BYTES = 2**20
"""A scenario is a few KiB of TOML."""
PID = Field(default=None, gt=0, le=2**22)
"""Linux's largest pid_max."""


class ScenarioError(ValueError):
    """A scenario that cannot be found or read: the name or file, and the reason."""


class _Spec(FiniteRecord):
    model_config = ConfigDict(extra="forbid")


class GpuGroup(_Spec):
    """`count` identical cards of one catalog GPU."""

    model: str
    """Catalog key or alias (`h100`, `H200-SXM-141GB`); the total is what the card reports."""
    count: int = Field(default=1, gt=0, le=MAX_GPUS)
    reserved_mib: int = Field(default=470, ge=0, le=2**20)
    """Memory the driver sets aside. 470 MiB leaves an H100 80GB the 79.19 GiB that vLLM logs as its
    total; the split between reserved and total is an assumption, not a measured NVML figure."""
    unsupported: list[Literal["memory_v2", "power", "temperature", "utilization", "mig", "graphics"]] = []
    """Readings these cards do not report (NVML answers Not Supported)."""
    mig_instances_mib: list[Annotated[int, Field(gt=0, le=2**20)]] = Field(default=[], max_length=7)
    """MIG mode on, with one GPU instance of each size (MiB)."""
    denied: bool = Field(default=False, strict=True)
    """This process may not open these cards: its cgroup or container allows only the node's other GPUs
    (Slurm ConstrainDevices, `docker --gpus`). NVML counts them and refuses their handle (No Permission);
    what runs on them is someone else's and stays out of sight. A TOML boolean: `"yes"` is refused."""
    mig_compute_instances: list[Annotated[int, Field(gt=0, le=MAX_MIG_DEVICES)]] = Field(default=[], max_length=7)
    """How many compute instances each GPU instance is split into (one each when not given); they share
    their instance's memory, and each is a MIG device of its own to NVML."""

    @model_validator(mode="after")
    def _compute_instances_match(self) -> GpuGroup:
        split = self.mig_compute_instances
        if split and len(split) != len(self.mig_instances_mib):
            raise ValueError(
                f"mig_compute_instances names {len(split)} GPU instances; mig_instances_mib has "
                f"{len(self.mig_instances_mib)}"
            )
        if sum(split) > MAX_MIG_DEVICES:
            raise ValueError(f"{sum(split)} compute instances; a card has at most {MAX_MIG_DEVICES}")
        return self

    @property
    def compute_instances(self) -> list[int]:
        """Compute instances per GPU instance."""
        return list(self.mig_compute_instances) or [1] * len(self.mig_instances_mib)


class PodSpec(_Spec):
    """The Kubernetes pod a process runs in (its cgroup names the UID; the kubelet's log directory the rest)."""

    namespace: str = Field(min_length=1, max_length=253)
    name: str = Field(min_length=1, max_length=253)
    uid: str = Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class EngineSpec(_Spec):
    """An inference engine (vLLM, or SGLang) serving one model, split over `gpus` by tensor parallelism. The
    `gpu_memory_utilization`, `max_num_seqs` and `block_size` are vLLM's; SGLang's own settings follow them
    (`mem_fraction_static` ...), `max_model_len` being its `context_length`."""

    id: str
    engine: Literal["vllm", "sglang"] = "vllm"
    model: str
    format: str = "bf16"
    """Weight format the engine actually loaded."""
    planned_format: str | None = None
    """Format the deployment was planned in, when it differs (a misconfiguration to find): a catalog format or
    a vLLM method (awq, gptq), as `--weights` takes it."""
    gpus: list[int] = Field(max_length=MAX_GPUS)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int = Field(default=8192, gt=0)
    max_num_seqs: int = Field(default=1024, gt=0)
    block_size: int = Field(default=16, gt=0)
    kv_cache_dtype: str = "auto"
    mem_fraction_static: float = Field(default=0.835, gt=0, le=1)
    """SGLang: the share of the memory free before the weights load that weights and KV pool take (0.835: what
    SGLang 0.5.6 picks on one H100 80GB, `round((81559 - 13440) / 81559, 3)`)."""
    max_total_tokens: int | None = Field(default=None, gt=0)
    """SGLang: `--max-total-tokens`, a cap on the KV pool in tokens."""
    max_running_requests: int | None = Field(default=None, gt=0)
    """SGLang: `--max-running-requests` (None: its default, from the pool)."""
    chunked_prefill_size: int = Field(default=8192, ge=-1)
    cuda_graph_max_bs: int = Field(default=256, gt=0)
    page_size: int = Field(default=1, gt=0)
    sglang_version: str = "0.5.6"
    port: int = Field(default=8000, gt=0, le=65_535)
    start_s: float = Field(default=0, ge=0)
    load_s: float = Field(default=20, ge=0)
    """Seconds to load the weights; profiling and CUDA-graph capture follow (5 s each)."""
    activation_gib: float = Field(default=1.9, ge=0)
    """Peak activation of the profile run (1.9 GiB: Llama 3.1 8B on vLLM V1, H100)."""
    non_torch_gib: float | None = Field(default=None, ge=0)
    """CUDA context, NCCL, workspaces; default 0.35 GiB alone, 2.1 GiB per GPU when split."""
    cudagraph_gib: float = Field(default=1.0, ge=0)
    tokens_per_request: int = Field(default=2000, gt=0)
    """Mean KV tokens one request holds while it runs (prompt plus output so far)."""
    request_s: float = Field(default=20, gt=0)
    """Mean time a request stays running."""
    pid: int | None = PID
    user: str = "vllm"
    pod: PodSpec | None = None
    """Runs in this pod, in its own network namespace: the demo serves it on a loopback address of its own
    (127.0.0.2, 127.0.0.3, ...), which plays the pod's address."""
    container_pid: int = Field(default=1, gt=0, le=2**22)
    """Its pid inside its container, what a `view = "container"` scenario sees (NVML reports `pid`)."""


class ProcessSpec(_Spec):
    """Any other process holding GPU memory (a notebook, a training job, a neighbour)."""

    id: str
    name: str = "python3"
    cmdline: list[str] = ["python3"]
    environ: dict[str, str] = {}
    """Its environment beside PATH and HOSTNAME, as /proc/PID/environ shows it."""
    user: str = "user"
    gpus: list[int] = Field(max_length=MAX_GPUS)
    memory_gib: float = Field(ge=0, le=2**20)
    """What it allocates on each of its GPUs once it has ramped up."""
    start_s: float = Field(default=0, ge=0)
    ramp_s: float = Field(default=0, ge=0)
    stop_s: float | None = None
    host_rss_gib: float = Field(default=2.0, ge=0)
    pid: int | None = PID
    pod: PodSpec | None = None
    container_pid: int | None = Field(default=None, gt=0, le=2**22)
    """Its pid inside the first engine's container, where a `view = "container"` scenario runs: visible there
    (by this pid) when set, otherwise in another container."""
    nvml_kind: Literal["compute", "graphics", "compute+graphics", "mps"] = "compute"
    """Which NVML process lists it appears in (a desktop session is graphics; PyTorch is compute; a client of
    an MPS server is mps, and the server itself, nvidia-cuda-mps-server, is compute)."""
    mig_instance: int | None = Field(default=None, ge=0)
    """Index into its GPU's `mig_instances_mib` when the card is in MIG mode."""
    mig_compute_instance: int | None = Field(default=None, ge=0)
    """Index of the compute instance inside that GPU instance (0 when not given)."""
    ignores_sigterm: bool = Field(default=False, strict=True)
    """It goes on after SIGTERM from the screen (`k`), as a process that traps it; SIGKILL ends it."""


class Event(_Spec):
    """A change on the timeline: traffic to an engine, or a GPU falling off the bus."""

    at_s: float = Field(ge=0)
    kind: Literal["traffic", "gpu_lost"]
    engine: str | None = None
    rate: float | None = Field(default=None, ge=0)
    """Requests per second arriving at `engine` (traffic)."""
    ramp_s: float = Field(default=0, ge=0)
    """Reach `rate` linearly over this many seconds."""
    gpu: int | None = None

    @model_validator(mode="after")
    def _complete(self) -> Event:
        if self.kind == "traffic" and (self.engine is None or self.rate is None):
            raise ValueError("a traffic event needs `engine` and `rate`")
        if self.kind == "gpu_lost" and self.gpu is None:
            raise ValueError("a gpu_lost event needs `gpu`")
        return self


class HostSpec(_Spec):
    memory_total_gib: float = Field(default=1024, ge=0, le=2**30)
    base_used_gib: float = Field(default=12, ge=0, le=2**30)
    swap_total_gib: float = Field(default=0, ge=0, le=2**30)
    cpu_count: int = Field(default=96, gt=0, le=2**16)


class Scenario(_Spec):
    """A simulated node and what happens to it."""

    name: str
    description: str = ""
    hostname: str | None = None
    duration_s: float = Field(default=600, gt=0, le=MAX_DURATION_S)
    start_s: float = Field(default=0, ge=0)
    """Where the story starts: the TUI steps the node here before its first frame, so a demo opens warm
    (engines loaded, pools carved, traffic running) unless the story is the start."""
    story_s: float = Field(default=0, ge=0)
    """The moment that shows the story: what `snapshot --demo` and `check --demo` show without `--at`."""
    seed: int = Field(default=0, ge=0, lt=2**64)
    start_epoch: float = Field(default=1_767_225_600.0, ge=0, le=LATEST_TIMESTAMP - MAX_DURATION_S)
    """The simulated wall clock at t=0 (2026-01-01 00:00:00 UTC), so samples are reproducible."""
    gpus: list[GpuGroup] = Field(max_length=MAX_GPUS)
    engines: list[EngineSpec] = []
    processes: list[ProcessSpec] = []
    events: list[Event] = []
    host: HostSpec = HostSpec()
    nvml_root: bool = True
    """Whether the demo reads NVML as root: as another user a MIG card's own process list is refused, and
    processes are read per MIG device only."""
    view: Literal["host", "container"] = "host"
    """Where gpumem-tui runs: on the host, or inside the first engine's container, where NVML's pids are host
    pids that its PID namespace cannot see."""

    @model_validator(mode="after")
    def _story_in_time(self) -> Scenario:
        if not self.start_s <= self.story_s <= self.duration_s:
            raise ValueError(
                f"story_s ({self.story_s:g}) must lie between start_s ({self.start_s:g}) and duration_s "
                f"({self.duration_s:g})"
            )
        return self

    @model_validator(mode="after")
    def _a_container_view_has_its_engine(self) -> Scenario:
        if self.view == "container" and not self.engines:
            raise ValueError('view = "container" runs inside the first engine\'s container; the scenario has none')
        return self

    @model_validator(mode="after")
    def _events_name_what_exists(self) -> Scenario:
        gpus = sum(group.count for group in self.gpus)
        if gpus > MAX_GPUS:
            raise ValueError(f"{gpus} GPUs; a simulated node has at most {MAX_GPUS}")
        engines = {engine.id for engine in self.engines}
        for event in self.events:
            if event.kind == "gpu_lost" and not 0 <= event.gpu < gpus:  # type: ignore[operator]
                raise ValueError(f"a gpu_lost event names GPU {event.gpu}; the node has GPUs 0 to {gpus - 1}")
            if event.kind == "traffic" and event.engine not in engines:
                raise ValueError(f"a traffic event names engine {event.engine!r}, which the scenario lacks")
        return self

    @model_validator(mode="after")
    def _processes_name_slices_that_exist(self) -> Scenario:
        cards = [group for group in self.gpus for _ in range(group.count)]
        for process in self.processes:
            gi, ci = process.mig_instance, process.mig_compute_instance
            if gi is None:
                if ci is not None:
                    raise ValueError(f"process {process.id!r} names a compute instance but no mig_instance")
                continue
            for index in (i for i in process.gpus if 0 <= i < len(cards)):  # others: the node says so
                split = cards[index].compute_instances
                if gi >= len(split):
                    raise ValueError(
                        f"process {process.id!r} names MIG instance {gi}; GPU {index} has {len(split)} "
                        "(mig_instances_mib)"
                    )
                if (ci or 0) >= split[gi]:
                    raise ValueError(
                        f"process {process.id!r} names compute instance {ci} of MIG instance {gi}; it has "
                        f"{split[gi]} (mig_compute_instances)"
                    )
        return self


HURRY_SPEED = 4
HURRY_AFTER_S = 10
"""The speed the opening note suggests when the story is more than HURRY_AFTER_S seconds away."""


def intro(scenario: Scenario, speed: float = 1.0) -> str:
    """The note a demo opens with: what the scenario is, where it starts, and when its story shows."""
    wait = (scenario.story_s - scenario.start_s) / speed
    when = f"opens {scenario.start_s:g} s in, warm" if scenario.start_s > 0 else "opens at the start"
    if wait > 0:
        when += f"; the story shows at {scenario.story_s:g} s, {wait:.0f} s from now"
        if wait > HURRY_AFTER_S and speed < HURRY_SPEED:
            when += f" (--speed {HURRY_SPEED} to hurry)"
    return f"{literal(scenario.description or scenario.name)}\n{when}"


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name, or a scenario file by path."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = scenario_dir() / f"{name_or_path}.toml"
        if not path.is_file():
            close = difflib.get_close_matches(name_or_path, scenario_names(), n=3, cutoff=0.4)
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise ScenarioError(f"unknown scenario {name_or_path!r}{hint} (shipped: {', '.join(scenario_names())})")
    return parse_scenario(_read(path), str(path), default_name=path.stem)


def parse_scenario(text: str, where: str = "scenario", default_name: str = "custom") -> Scenario:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    except ValueError:  # what else tomllib raises: an integer too long for Python to convert
        raise ScenarioError(f"{where}: an integer over {sys.get_int_max_str_digits():,} digits") from None
    except RecursionError:
        raise ScenarioError(f"{where}: nested too deeply to be a scenario") from None
    try:
        return Scenario.model_validate({"name": default_name, **data})
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"])
        reason = first["msg"].removeprefix("Value error, ")
        raise ScenarioError(f"{where}: {place}: {reason}" if place else f"{where}: {reason}") from None


def _read(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: over {MAX_FILE_BYTES // 2**20} MiB; a scenario is a few KiB of TOML")
        return raw.decode("utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
