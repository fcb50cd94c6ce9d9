"""One serving question, answered once: by the named engine's own sizing when there is one, else by the
plain method; the other method's answer on the same split is kept as a cross-check, never a verdict."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gpumem_tui.catalog import Catalog, LookupFailed
from gpumem_tui.catalog.schema import FormatSpec, ModelSpec
from gpumem_tui.planner.budget import make_plan
from gpumem_tui.planner.dtypes import PlanInputError
from gpumem_tui.planner.parallel import SPLITS, split_problem
from gpumem_tui.planner.records import NonNegative, Plan, PlanInput
from gpumem_tui.planner.sglang.records import SglangPrediction, SglangSettings
from gpumem_tui.planner.vllm import DEFAULT_VERSION, EnginePrediction, EngineSettings, predict
from gpumem_tui.planner.vllm.lengths import longest_accepted
from gpumem_tui.planner.vllm.loaded import FORMAT_TO_QUANTIZATION
from gpumem_tui.planner.vllm.risks import OOM_AT_START
from gpumem_tui.planner.warnings import setting_warnings, thin_warnings
from gpumem_tui.records import Record

# vLLM's quantization methods as the catalog's weight formats (the plain method sizes them so).
QUANTIZATION_TO_FORMAT = {
    "fp8": "fp8",
    "w8a8": "int8",
    "int8": "int8",
    "w4a16": "int4",
    "gptq": "int4",
    "gptq_marlin": "int4",
    "awq": "int4",
    "awq_marlin": "int4",
    "mxfp4": "mxfp4",
}
SIXTEEN_BIT = ("bf16", "fp16")


class EngineOptions(Record):
    """The engine a plan is for and the flags only it has; None means the release's default."""

    name: str = "vllm"
    version: str = DEFAULT_VERSION
    quantization: str | None = None
    """vLLM's method when it was named so (awq, gptq, ...); None: the one the weight format maps to."""
    pp: int = Field(default=1, gt=0)
    dtype: str = "auto"
    max_num_seqs: int | None = Field(default=None, gt=0)
    max_num_batched_tokens: int | None = Field(default=None, gt=0)
    enforce_eager: bool = False
    kv_cache_memory_bytes: int | None = Field(default=None, gt=0)
    other_processes_bytes: NonNegative = 0
    limit_mm_per_prompt: dict[str, int] | None = None
    """`--limit-mm-per-prompt` as counts per modality; None: vLLM's default (999 each)."""
    mem_fraction_static: float | None = Field(default=None, gt=0, lt=1)
    """SGLang's flags from here on; None: the release's default."""
    chunked_prefill_size: int | None = Field(default=None, ge=-1)
    cuda_graph_max_bs: int | None = Field(default=None, gt=0)
    page_size: int = Field(default=1, gt=0)
    dp: int = Field(default=1, gt=0)
    enable_dp_attention: bool = False
    max_total_tokens: int | None = Field(default=None, gt=0)


VLLM_FLAGS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "enforce_eager",
    "kv_cache_memory_bytes",
    "limit_mm_per_prompt",
    "other_processes_bytes",
)
"""vLLM's own flags: the EngineOptions fields only its settings take (with --engine sglang, a usage error)."""
SGLANG_FLAGS = (
    "mem_fraction_static",
    "chunked_prefill_size",
    "cuda_graph_max_bs",
    "page_size",
    "dp",
    "enable_dp_attention",
    "max_total_tokens",
)
"""SGLang's own flags: the EngineOptions fields only its settings take (with --engine vllm, a usage error)."""


def default_format(model: ModelSpec) -> str:
    """The format the published weights ship in (a vLLM method such as awq as the format it sizes as);
    16-bit otherwise."""
    if model.checkpoint_format:
        return QUANTIZATION_TO_FORMAT.get(model.checkpoint_format, model.checkpoint_format)
    return model.native_dtype if model.native_dtype in SIXTEEN_BIT else "bf16"


def format_of(quantization: str | None, model: ModelSpec) -> str:
    """The catalog format a vLLM method sizes as: the mapped one, 16-bit for `none` (16-bit weights of a
    quantized checkpoint), the checkpoint's own for None. The inverse of `engine_quantization`."""
    if quantization == "none":
        return "bf16"
    return QUANTIZATION_TO_FORMAT.get(quantization or "") or default_format(model)


def resolve_weights(catalog: Catalog, model: ModelSpec, name: str | None) -> tuple[FormatSpec, str | None]:
    """`--weights` and `--quantization` name one thing: a catalog format (bf16, fp8, int4, w8a8, ...) or a
    vLLM method (awq, gptq, ...). Returns the format the plain method sizes and vLLM's method for it."""
    if name is None:
        fmt = catalog.format(default_format(model))
        return fmt, engine_quantization(fmt, model)
    try:
        fmt = catalog.format(name)
    except LookupFailed:
        key = name.strip().lower().replace("-", "_")
        if key not in QUANTIZATION_TO_FORMAT:
            raise PlanInputError(
                f"unknown weight format or quantization {name!r}: use a format ({', '.join(sorted(catalog.formats))})"
                f" or a vLLM method ({', '.join(sorted(QUANTIZATION_TO_FORMAT))})"
            ) from None
        return catalog.format(QUANTIZATION_TO_FORMAT[key]), key
    return fmt, engine_quantization(fmt, model)


def engine_quantization(fmt: FormatSpec, model: ModelSpec) -> str | None:
    """vLLM's method for a weight format: None for the checkpoint's own (vLLM reads it from the checkpoint),
    `none` for 16-bit weights of a quantized checkpoint, else the mapped method."""
    if fmt.name == default_format(model):
        return None
    if fmt.name in SIXTEEN_BIT or fmt.name == "fp32":
        return "none"
    return FORMAT_TO_QUANTIZATION.get(fmt.name)


def _from_plan(inp: PlanInput, engine: EngineOptions, tp: int, flags: tuple[str, ...]) -> dict[str, Any]:
    """The values an engine's settings take from a plan, under the names vLLM's and SGLang's records share
    (the model, card and capacity, release, split, weights' and KV cache's formats), and the engine's own
    `flags` (its EngineOptions fields of the same names)."""
    return {
        "model": inp.model,
        "gpu": inp.gpu,
        "total_memory_bytes": inp.capacity_bytes,
        "version": engine.version,
        "tp": tp,
        "pp": engine.pp,
        "dtype": engine.dtype,
        "quantization": engine.quantization or engine_quantization(inp.weights_format, inp.model),
        "kv_cache_dtype": inp.kv_dtype,
        **{name: getattr(engine, name) for name in flags},
    }


def engine_settings(inp: PlanInput, engine: EngineOptions, tp: int, check_length: bool = True) -> EngineSettings:
    """The plan's own values as vLLM flags: weights as --quantization, context as --max-model-len, the split
    as --tensor-parallel-size, the capacity given as the device total."""
    values = _from_plan(inp, engine, tp, VLLM_FLAGS)
    return EngineSettings(**values, utilization=inp.utilization, max_model_len=inp.context, check_length=check_length)


def sglang_settings(inp: PlanInput, engine: EngineOptions, tp: int, check_length: bool = True) -> SglangSettings:
    """The plan's own values as SGLang flags: weights as --quantization, context as --context-length, the
    split as --tp, the capacity given as the card's."""
    return SglangSettings(
        **_from_plan(inp, engine, tp, SGLANG_FLAGS), context_length=inp.context, check_length=check_length
    )


class EngineAnswer(Record):
    """The engine's own answer on one split: does it start, does its KV pool hold the load, what else it holds."""

    tp: int
    pp: int = 1

    @property
    def gpus(self) -> int:
        """GPUs the launch takes: tensor-parallel ranks x pipeline stages."""
        return self.tp * self.pp

    settings: EngineSettings | SglangSettings
    """The flags the prediction was made with: what `vllm serve` (or SGLang's launch_server) is given to
    reproduce it."""
    prediction: EnginePrediction | SglangPrediction
    pool_tokens: int
    """Tokens the KV pool holds ("GPU KV cache size"), 0 when the launch fails for lack of memory."""
    needed_tokens: int
    """users x context: what the load needs of the pool."""
    starts: bool
    fits: bool
    max_users_at_context: int
    max_context_at_users: int | None


def accepted_length(engine: str, model: ModelSpec) -> int | None:
    """The longest context the engine starts with for this model, by its own rule (None: no limit known)."""
    if engine == "sglang":
        from gpumem_tui.planner.sglang.risks import longest_accepted as sglang_longest

        return sglang_longest(model)
    return longest_accepted(model)


ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def past_maximum(engine: str, model: ModelSpec, context: int) -> str | None:
    """`200,000 tokens is past M's maximum of 131,072: vLLM refuses to start with it`, where the length passes
    the engine's maximum (None where it does not): the plain verdict's words and `fit`'s."""
    longest = accepted_length(engine, model)
    if not longest or context <= longest:
        return None
    who = ENGINE_NAMES.get(engine, engine)
    return f"{context:,} tokens is past {model.id}'s maximum of {longest:,}: {who} refuses to start with it"


def engine_answer(inp: PlanInput, engine: EngineOptions, tp: int, check_length: bool = True) -> EngineAnswer:
    """Predict the launch on `tp` GPUs: it fits when it starts and its pool holds users x context tokens.
    Most users = pool // context; longest context = pool // users, capped at the longest context the engine accepts."""
    settings: EngineSettings | SglangSettings
    prediction: EnginePrediction | SglangPrediction
    if engine.name == "sglang":
        from gpumem_tui.planner.sglang.predict import predict as predict_sglang

        settings = sglang_settings(inp, engine, tp, check_length)
        prediction = predict_sglang(settings)
    else:
        settings = engine_settings(inp, engine, tp, check_length)
        prediction = predict(settings)
    accepted = accepted_length(engine.name, inp.model)
    starts = not prediction.failures
    allocated = prediction.kv_cache_bytes > 0 and not any(OOM_AT_START in f for f in prediction.failures)
    pool = max(0, prediction.kv_cache_tokens) if allocated else 0
    needed = inp.users * inp.context
    longest = None
    if inp.users:
        longest = min(pool // inp.users, accepted or pool // inp.users)
    return EngineAnswer(
        tp=tp,
        pp=engine.pp,
        settings=settings,
        prediction=prediction,
        pool_tokens=pool,
        starts=starts,
        fits=starts and needed <= pool,
        max_users_at_context=pool // inp.context if starts else 0,
        max_context_at_users=longest,
        needed_tokens=needed,
    )


def engine_fewest(inp: PlanInput, engine: EngineOptions, check_length: bool = True) -> int | None:
    """The fewest GPUs (tensor-parallel 1, 2, 4 or 8, times the pipeline stages) on which the engine starts
    and holds the load, or None; `check_length=False` lets a length past the model's maximum through."""
    for tp in SPLITS:
        if split_problem(inp.model, tp, inp.kv_heads) is None and engine_answer(inp, engine, tp, check_length).fits:
            return tp * engine.pp
    return None


def engine_split(inp: PlanInput, engine: EngineOptions, fewest: int | None = None) -> int:
    """The tensor-parallel size a plan is for: the GPUs given over the pipeline stages, else the engine's
    fewest (`fewest` when already searched, in GPUs), else 8."""
    gpus = inp.gpus or fewest or engine_fewest(inp, engine) or SPLITS[-1] * engine.pp
    if gpus % engine.pp:
        raise PlanInputError(f"{gpus} GPUs do not divide into {engine.pp} pipeline stages")
    return gpus // engine.pp


class PoolPastCard(Record):
    """A --kv-cache-memory that no split leaves room for: vLLM allocates the size on every GPU as given, so
    more GPUs never make it fit. The largest size that starts, and the split that leaves room for it."""

    asked_bytes: int
    most_bytes: int
    """Negative where no split leaves room for any KV cache beside the weights."""
    gpus: int
    split_given: bool
    """The plan's split was asked for (`--gpus`): its own failure is said first."""


def pool_past_card(inp: PlanInput, engine: EngineOptions) -> PoolPastCard | None:
    """Where --kv-cache-memory is past what one card leaves room for on every split the model takes (each
    prediction's own largest size, `kv_cache_memory_most_bytes`), the split that leaves the most; None where
    a split leaves room for it or the size is not given (or the release has no such flag)."""
    asked = engine.kv_cache_memory_bytes
    if engine.name != "vllm" or not asked:
        return None
    best: PoolPastCard | None = None
    for tp in SPLITS:
        if split_problem(inp.model, tp, inp.kv_heads) is not None:
            continue
        prediction = engine_answer(inp, engine, tp).prediction
        most = prediction.kv_cache_memory_most_bytes if isinstance(prediction, EnginePrediction) else None
        if most is None or most >= asked:
            return None
        if best is None or most > best.most_bytes:
            best = PoolPastCard(asked_bytes=asked, most_bytes=most, gpus=tp * engine.pp, split_given=bool(inp.gpus))
    return best


class Serving(Record):
    """The plan of one question. `method` says who decided: `plain` (weights + KV + overhead) or the
    engine's name; `plan` is always the plain method on the same split (with an engine, the cross-check)."""

    method: str
    plan: Plan
    engine: EngineAnswer | None = None
    engine_fewest_gpus: int | None = None
    pool_past_card: PoolPastCard | None = None
    """Set where the --kv-cache-memory asked for fits on no split: the verdict says so, not a GPU count."""

    @property
    def gpus(self) -> int:
        return self.plan.gpus

    @property
    def fits(self) -> bool:
        return self.engine.fits if self.engine else self.plan.fits

    @property
    def passes(self) -> bool:
        """What `plan --check` answers, as the verdict does: the deciding method's fit and, for the plain
        method (memory only), a context vLLM accepts: one past the model's maximum is refused at start."""
        if self.engine is not None:
            return self.engine.fits
        inp = self.plan.input
        return self.plan.fits and past_maximum("vllm", inp.model, inp.context) is None

    @property
    def fewest_gpus(self) -> int | None:
        return self.engine_fewest_gpus if self.engine else self.plan.fewest_gpus

    @property
    def max_users_at_context(self) -> int:
        return self.engine.max_users_at_context if self.engine else self.plan.max_users_at_context

    @property
    def max_context_at_users(self) -> int | None:
        return self.engine.max_context_at_users if self.engine else self.plan.max_context_at_users

    @property
    def spare_fraction(self) -> float:
        """Plain: spare / usable. Engine: the share of its KV pool the load leaves (-1 when there is none)."""
        if self.engine is None:
            return self.plan.spare_fraction
        pool = self.engine.pool_tokens
        return 1 - self.engine.needed_tokens / pool if pool else -1.0

    @property
    def spare_bytes(self) -> int:
        """Plain: usable - weights - KV on all GPUs. Engine: that share of its KV pool, in bytes, on all GPUs."""
        if self.engine is None:
            return self.plan.spare_bytes
        pool = max(0, self.engine.prediction.kv_cache_bytes) * self.engine.gpus
        return round(pool * self.spare_fraction) if self.engine.pool_tokens else 0

    @property
    def warnings(self) -> list[str]:
        """The deciding method's warnings about the fit, then those about the setting (split, context, format)."""
        if self.engine is None:
            return list(self.plan.warnings)
        thin = thin_warnings(self.spare_fraction, "of the KV pool spare") if self.fits else []
        return thin + setting_warnings(self.plan)


def serve(inp: PlanInput, engine: EngineOptions | None = None) -> Serving:
    """The one path every plan takes (`plan`, the planner screen, a manual plan): with an engine, its
    sizing searches the split and answers the inverse questions; the plain plan follows on that split."""
    if engine is None:
        return Serving(method="plain", plan=make_plan(inp))
    fewest = engine_fewest(inp, engine)
    split_at = fewest
    past = pool_past_card(inp, engine) if fewest is None else None
    if past is not None and not inp.gpus:
        # a pool no card has room for fails on every split: plan the one that leaves the most room
        split_at = past.gpus
    elif fewest is None and not inp.gpus:
        # a length the engine refuses fails on every split: plan the one its memory needs at that length
        split_at = engine_fewest(inp, engine, check_length=False) or SPLITS[-1] * engine.pp
    tp = engine_split(inp, engine, split_at)
    return Serving(
        method=engine.name,
        plan=make_plan(inp.model_copy(update={"gpus": tp * engine.pp})),
        engine=engine_answer(inp, engine, tp),
        engine_fewest_gpus=fewest,
        pool_past_card=past,
    )
