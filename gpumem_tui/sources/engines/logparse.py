"""Parse a vLLM (any release) or SGLang startup log into a StartupLog: the memory numbers the lines state.

Prefixes (`(EngineCore pid=N)`, `(Worker_TP1 pid=N)`, SGLang's `[date TP0]`), ANSI colours and
thousands separators are handled. A value seen twice in one process keeps the later line; values
that each worker logs for itself are kept per rank, and the engine-wide value is the one the engine
uses (the smallest KV budget) or the worst rank.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpumem_tui.sources.engines import logconfig
from gpumem_tui.sources.engines.logfailures import derived_failure, failure_for, with_more_clues
from gpumem_tui.sources.engines.logpatterns import ANSI, RULES, SGLANG_PREFIX, VLLM_PREFIX, Rule
from gpumem_tui.sources.engines.startup_log import (
    FREE_KEYS,
    INT_KEYS,
    KEYS,
    LOWEST_WINS,
    PER_RANK_KEYS,
    SGLANG_KEYS,
    TEXT_KEYS,
    Failure,
    RankValues,
    StartupLog,
)

_WORKER_TAG = re.compile(r"^(?:Worker|VllmWorker\w*|RayWorker\w*)_(?P<rank>\w+)$")
_NAMELESS_WORKERS = ("Worker", "VllmWorkerProcess", "RayWorkerWrapper")
LIMIT = 1e15
"""No engine logs a size, count or setting this large."""
MAX_OOM_CHARS = 4096
"""PyTorch's out-of-memory message is under 1 KiB; a wrapped one is followed no further than this, so a
log of endless "Process N has ..." lines is not re-read line after line."""
STARTED = ("startup_complete", "server_ready")
"""Rules whose line means the engine finished starting."""


@dataclass
class _Collected:
    """Values gathered so far: engine-wide, per rank, failures, and which engines spoke."""

    values: dict[str, object] = field(default_factory=dict)
    ranks: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    oom_text: str | None = None
    """The out-of-memory message read so far while its wrapped lines follow; None once it ended."""
    engines: set[str] = field(default_factory=set)


LOG_END_BYTES = 32 * 2**20
"""How much of each end of a log `log FILE` reads: a startup log is some KiB (DEBUG and many ranks: a few
MiB), all read; of a long-running server's, the start-up at its start and what stopped it at its end (64 MiB
parse in about 10 s and 300 MB here), its middle passed over."""


def parse_log(text: str) -> StartupLog:
    """The startup record of a whole log text."""
    lines = [_split(_clean(raw)) for raw in text.splitlines()]
    ranks_by_pid = {pid: rank for rank, pid, _ in lines if pid and not rank.startswith("pid ")}
    collected = _Collected()
    for rank, pid, message in lines:
        scope = ranks_by_pid.get(pid, rank) if pid and rank.startswith("pid ") else rank
        _read_line(message, scope, collected)
    return _finish(collected)


def _clean(raw: str) -> str:
    """No colours, no markdown bold from pasted issues, no surrounding blanks."""
    return ANSI.sub("", raw).replace("**", "").strip()


def _split(line: str) -> tuple[str, str | None, str]:
    """(rank scope, pid, message). Lines without a known prefix are read whole, in the `main` scope."""
    match = VLLM_PREFIX.match(line)
    if match:
        return _vllm_scope(match.group("proc"), match.group("pid")), match.group("pid"), match.group("msg")
    match = SGLANG_PREFIX.match(line)
    if match:
        rank = match.group("rank")
        return (rank.replace(" ", "_") if rank else "main"), None, match.group("msg")
    return "main", None, line


def _vllm_scope(proc: str | None, pid: str | None) -> str:
    if not proc:
        return "main"
    tagged = _WORKER_TAG.match(proc)
    if tagged:
        return tagged.group("rank")
    return f"pid {pid}" if proc in _NAMELESS_WORKERS else "main"


def _read_line(message: str, scope: str, collected: _Collected) -> None:
    failed = False
    for rule in RULES:
        if rule.needle not in message:
            continue
        match = rule.pattern.search(message)
        if match is None:
            continue
        if rule.engine:
            collected.engines.add(rule.engine)
        if rule.name in STARTED:
            collected.values["startup_complete"] = True
        _take(rule, match, scope, collected)
        failure = None if failed else failure_for(rule.name, match, message)
        if failure is not None and failure not in collected.failures:
            collected.failures.append(failure)
            collected.oom_text = message if failure.kind == "cuda_out_of_memory" else None
        failed = failed or failure is not None
    if not failed and message:
        _follow_oom(message, collected)


def _follow_oom(message: str, collected: _Collected) -> None:
    """A wrapped out-of-memory message (a paste, a collector's line limit) is read joined again."""
    if collected.oom_text is None:
        return
    joined = f"{collected.oom_text} {message}"
    if len(joined) > MAX_OOM_CHARS:
        collected.oom_text = None
        return
    completed = with_more_clues(collected.failures[-1], joined)
    if completed is None:
        collected.oom_text = None
        return
    collected.failures[-1] = completed
    collected.oom_text = joined


def _take(rule: Rule, match: re.Match[str], scope: str, collected: _Collected) -> None:
    found = {k: v for k, v in match.groupdict().items() if v is not None}
    if rule.name == "sg_server_args" and "server_args" not in collected.values:
        collected.values["server_args"] = logconfig.sglang_args(found["server_args"])
    settings = _settings(rule.name, found)
    for key, raw in settings.items():
        if key in PER_RANK_KEYS:
            found[key] = raw
        else:
            collected.values[key] = _typed(key, raw)
    if "k_gib" in found and "v_gib" in found:
        found["kv_cache_gib"] = str(round(float(found["k_gib"]) + float(found["v_gib"]), 6))
    for key, raw in found.items():
        if key in PER_RANK_KEYS:
            value = _typed(key, raw)
            if isinstance(value, float):  # per-rank values are all measures: a float, or None unreadable
                collected.ranks.setdefault(scope, {})[key] = value
        elif key in FREE_KEYS:
            collected.values[key] = _least(collected.values.get(key), _typed(key, raw))
        elif key in KEYS or key in SGLANG_KEYS:
            collected.values[key] = _typed(key, raw)


def _settings(rule: str, found: dict[str, str]) -> Mapping[str, str | None]:
    if rule == "engine_config":
        return logconfig.key_values(found["config"], logconfig.VLLM_CONFIG)
    if rule == "non_default_args":
        return logconfig.dict_values(found["args"], logconfig.VLLM_ARGS)
    if rule == "profile_064":
        return logconfig.profile_values(found["profile"])
    if rule == "sg_server_args":
        pairs, _whole = logconfig.server_args_pairs(found["server_args"])
        return {out: pairs[name] for name, out in logconfig.SGLANG_ARGS.items() if name in pairs}
    return {}


def _least(seen: object, value: object) -> object:
    if isinstance(seen, float) and isinstance(value, float):
        return min(seen, value)
    return value if value is not None else seen


def _typed(key: str, raw: str | None) -> object:
    """Text as written; numbers as int or float, or None when unreadable or beyond any engine's (10^15)."""
    if raw is None:
        return None
    if key in TEXT_KEYS:
        return raw
    try:
        value = int(raw.replace(",", "")) if key in INT_KEYS else float(raw)
    except ValueError:
        return None
    return value if abs(value) <= LIMIT else None  # NaN compares false: no reading either


def _finish(collected: _Collected) -> StartupLog:
    values = dict(collected.values)
    for key in PER_RANK_KEYS:
        seen = [r[key] for r in collected.ranks.values() if key in r]
        if seen:
            values[key] = min(seen) if key in LOWEST_WINS else max(seen)
    failures = list(collected.failures)
    extra = derived_failure(values, failures)
    if extra is not None:
        failures.append(extra)
    ranks = [RankValues(rank=name, **fields) for name, fields in sorted(collected.ranks.items(), key=_rank_order)]
    engine = "vllm" if "vllm" in collected.engines else ("sglang" if collected.engines else None)
    return StartupLog(**values, failures=failures, engine=engine, ranks=ranks if len(ranks) > 1 else [])


def _rank_order(item: tuple[str, dict]) -> tuple[int, str]:
    name = item[0]
    return (0 if name == "main" else 2 if name.startswith("pid ") else 1, name)
