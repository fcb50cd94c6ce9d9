"""The command that launches a plan: `vllm serve MODEL` with the flags its settings were predicted with, in
the release's own spelling. What a flag alone cannot give (a checkpoint quantized beforehand, a KV dtype
vLLM has not) is left out and said in a note."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from gpumem_tui.catalog.hfconfig import is_repo_id, served_folder
from gpumem_tui.catalog.schema import ModelSpec
from gpumem_tui.planner.vllm.records import EngineSettings
from gpumem_tui.planner.vllm.versions import Rules, rules_for
from gpumem_tui.records import Record

AT_LOAD = ("fp8",)
"""Methods vLLM applies to 16-bit weights as it loads them: the model's own checkpoint is served."""
FROM_CHECKPOINT = {"w4a16": "4-bit", "w8a8": "8-bit integer", "int8": "8-bit integer"}
"""The planner's sizes for weights quantized beforehand (AWQ, GPTQ, compressed-tensors), which vLLM reads
from the checkpoint's own config: no `--quantization` names them."""
FP8_KV = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")
SIXTEEN_BIT_KV = ("auto", "bf16", "bfloat16", "fp16", "float16", "half")
"""A 16-bit KV cache is vLLM's `auto` (the model's dtype, 16-bit for fp32 checkpoints too): no flag."""


class LaunchLine(Record):
    """The launch as argv; `command` is it quoted for a shell. `notes` say what the line alone does not do."""

    argv: list[str]
    notes: list[str] = []

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def launch_json(self) -> dict:
        """The `launch` object of `plan --engine vllm --json`."""
        return {"command": self.command, "argv": list(self.argv), "notes": list(self.notes)}


class ServedModel(Record):
    """The model argument of a launch line (`name`), and what it alone does not do (`note`)."""

    name: str
    note: str | None = None


def model_argument(spec: ModelSpec, typed: str | None = None, config: str | None = None) -> ServedModel:
    """The model as vLLM takes it: for a `--config` reference, the model directory (`config_argument`); an
    HF id typed for the model (its id or an alias with an owner) as typed; else the catalog's id, the
    model's Hugging Face repository."""
    if config:
        return config_argument(spec, config)
    names = {name.lower() for name in spec.names}
    if typed and "/" in typed and typed.strip().lower() in names:
        return ServedModel(name=typed.strip())
    return ServedModel(name=spec.id)


def config_argument(spec: ModelSpec, config: str) -> ServedModel:
    """A cached HF id as given. A model directory with weights in it, given as the directory or its
    config.json: that directory (`served_folder`; vLLM serves a directory, never the file), the model's id
    too. A lone file (or a directory with no weights): the Hub id its `_name_or_path` names, else its
    directory, with a note to put the weights beside it, as config.json."""
    path = Path(config).expanduser()
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        return ServedModel(name=config)
    served = served_folder(config)
    if served is not None:
        return ServedModel(name=str(served))
    folder = Path(os.path.abspath(path)).parent
    if is_repo_id(spec.id):
        return ServedModel(
            name=spec.id,
            note=f"{config} has no weights beside it: this serves {spec.id}, the model it names, from the "
            "Hugging Face Hub; for your own weights serve their directory, with this file in it as config.json",
        )
    return ServedModel(
        name=str(folder),
        note=f"{config} has no weights beside it: put them in {folder}, with this file as config.json, "
        "before serving that directory",
    )


def launch_line(settings: EngineSettings, model: str | None = None) -> LaunchLine:
    """The command for these settings on their release; `model`: the model argument (`model_argument`),
    else the catalog's id."""
    rules = rules_for(settings.version)
    name = model or settings.model.id
    notes: list[str] = []
    argv = ["vllm", "serve", name] if rules.serve_command else _api_server(name)
    argv += ["--tensor-parallel-size", str(settings.tp)]
    if settings.pp > 1:
        argv += ["--pipeline-parallel-size", str(settings.pp)]
    argv += ["--gpu-memory-utilization", _share(settings.utilization)]
    if settings.max_model_len:
        argv += ["--max-model-len", str(settings.max_model_len)]
    argv += _weights(settings, name, notes) + _kv_cache(settings, rules, notes) + _scheduler(settings)
    argv += _mm_limits(settings, rules, notes)
    return LaunchLine(argv=argv, notes=notes)


def _api_server(name: str) -> list[str]:
    return ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", name]


def _share(value: float) -> str:
    """0.9 as `0.90`; a finer share whole (`0.925`), so the line asks for what was planned."""
    return f"{value:.2f}" if round(value, 2) == value else repr(value)


def _weights(settings: EngineSettings, name: str, notes: list[str]) -> list[str]:
    """`--quantization` where a flag gives the planned weights; the checkpoint they need where it does not."""
    method, spec = settings.quantization, settings.model
    flags = ["--dtype", settings.dtype] if settings.dtype != "auto" else []
    if method is None:
        return flags
    if method == "none":  # 16-bit weights: of a quantized checkpoint, only from another checkpoint
        if spec.checkpoint_format:
            notes.append(
                f"{name} ships {spec.checkpoint_format} weights and vLLM loads them as shipped: for the planned "
                "16-bit weights serve a 16-bit checkpoint of the model in its place"
            )
        return flags
    if method in FROM_CHECKPOINT:
        notes.append(
            f"vLLM does not quantize weights to {FROM_CHECKPOINT[method]} as it loads them: serve a "
            f"{FROM_CHECKPOINT[method]} checkpoint of the model (AWQ, GPTQ or compressed-tensors) in place of "
            f"{name}; vLLM reads its method from it"
        )
        return flags
    if method not in AT_LOAD:
        notes.append(f"--quantization {method} needs a checkpoint quantized so: serve one in place of {name}")
    return flags + ["--quantization", method]


def _kv_cache(settings: EngineSettings, rules: Rules, notes: list[str]) -> list[str]:
    """`--kv-cache-dtype` (16-bit is vLLM's default) and `--kv-cache-memory-bytes` where the release has it."""
    flags: list[str] = []
    dtype = settings.kv_cache_dtype.lower()
    if dtype in FP8_KV:
        flags += ["--kv-cache-dtype", dtype]
    elif dtype not in SIXTEEN_BIT_KV:
        notes.append(
            f"vLLM's --kv-cache-dtype has no {settings.kv_cache_dtype}: "
            "the line leaves the KV cache at the model's dtype"
        )
    if settings.kv_cache_memory_bytes and rules.kv_cache_memory_flag:
        flags += ["--kv-cache-memory-bytes", str(settings.kv_cache_memory_bytes)]
    elif settings.kv_cache_memory_bytes:
        notes.append(f"vLLM {settings.version} has no --kv-cache-memory-bytes (0.10.2 and later): left out")
    return flags


def _scheduler(settings: EngineSettings) -> list[str]:
    """The flags set beyond the release's defaults (None: vLLM computes the default the plan used)."""
    flags: list[str] = []
    for flag, value in (
        ("--block-size", settings.block_size),
        ("--max-num-seqs", settings.max_num_seqs),
        ("--max-num-batched-tokens", settings.max_num_batched_tokens),
    ):
        if value is not None:
            flags += [flag, str(value)]
    return flags + (["--enforce-eager"] if settings.enforce_eager else [])


def _mm_limits(settings: EngineSettings, rules: Rules, notes: list[str]) -> list[str]:
    """`--limit-mm-per-prompt` for a model with a vision tower, spelt as its release takes it."""
    limits = settings.limit_mm_per_prompt
    if limits is None or settings.model.vision is None:
        return []  # vLLM refuses the flag for a model without a tower; the plan sized none
    spelling = rules.mm_limits_spelling
    if spelling is None:
        notes.append(f"vLLM {settings.version} has no --limit-mm-per-prompt (0.6 and later): left out")
        return []
    if spelling == "json":
        return ["--limit-mm-per-prompt", json.dumps(limits, separators=(",", ":"))]
    return ["--limit-mm-per-prompt", ",".join(f"{key}={value}" for key, value in limits.items())]
