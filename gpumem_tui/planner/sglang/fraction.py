"""The `mem_fraction_static` SGLang picks when none is given, per release, and the multimodal factor.

Reference section 4 (server_args.py of each release); `gpu_mib` is the card's capacity in MiB as
nvidia-smi reports it. Each answer carries its rule in words, so a plan can say why it got that value."""

from __future__ import annotations

from dataclasses import dataclass

from gpumem_tui.catalog.schema import VisionSpec
from gpumem_tui.planner.sglang.versions import Rules

TABLES = {
    "table-0.3.0": ((16, 0.79), (8, 0.83), (4, 0.85), (2, 0.87), (1, 0.88)),
    "table-0.3.6": ((16, 0.79), (8, 0.82), (4, 0.85), (2, 0.87), (1, 0.88)),
}
TABLE_0_4 = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
VIT_BASELINE = 24 * 1024**2
"""ViT-L/14's layers x hidden^2, the baseline of adjust_mem_fraction_for_vlm (0.4.9.post3+)."""


@dataclass(frozen=True)
class Chosen:
    """A fraction and the rule that gave it, in words."""

    value: float
    rule: str


@dataclass(frozen=True)
class Launch:
    """What the default depends on besides the release and the card."""

    gpu_mib: int
    tp: int = 1
    pp: int = 1
    dp: int = 1
    dp_attention: bool = False
    chunked_prefill_size: int = 8192
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int = 160
    speculative: str | None = None
    """None, or the algorithm (EAGLE, EAGLE3, STANDALONE, NGRAM)."""
    cuda: bool = True


def default_fraction(rules: Rules, launch: Launch) -> Chosen:
    """The release's default before any multimodal factor."""
    name = rules.fraction_rule
    if name in TABLES:
        return _table(TABLES[name], launch.tp * launch.pp, name)
    if name == "reserve-by-settings":
        return _by_settings(launch)
    if name == "reserve-by-class":
        return _by_class(launch, rules)
    table = _table(TABLE_0_4, launch.tp * launch.pp, name)
    if name == "table-0.4.0" or launch.gpu_mib <= 81920 and name == "table-0.4.6":
        return table
    if name == "table-0.4.6":
        value = (launch.gpu_mib - 13 * 1024) / launch.gpu_mib
        return Chosen(value, f"(gpu_mem - 13 GiB) / gpu_mem above 80 GiB (0.4.6): {_card(launch)}")
    return _large_card(launch, table, name)


def _table(rows: tuple[tuple[int, float], ...], size: int, name: str) -> Chosen:
    value = next(v for at_least, v in rows if size >= at_least)
    return Chosen(value, f"the TP-size table of {name.removeprefix('table-')} (TP x PP = {size}: {value})")


def _card(launch: Launch) -> str:
    return f"a {launch.gpu_mib:,} MiB card"


def _large_card(launch: Launch, table: Chosen, name: str) -> Chosen:
    """0.4.6.post2-0.4.7: the table up to 80 GiB (0.88 above), then a formula above 96 GiB."""
    mib = launch.gpu_mib
    base = table.value if mib <= 81920 else 0.88
    if name == "table-0.4.7" and mib > 180_000 and launch.cuda:
        return Chosen(0.79, f"0.79 above 180,000 MiB on CUDA (0.4.7): {_card(launch)}")
    if mib > 96 * 1024:
        reserve = 20 * 1024 if name == "table-0.4.7" and launch.speculative else 18 * 1024
        value = min(base + 48 * 1024 * (1 - base) / mib, (mib - reserve) / mib)
        return Chosen(value, f"min(f + 48 GiB x (1 - f) / gpu_mem, (gpu_mem - {reserve // 1024} GiB) / gpu_mem)")
    if name == "table-0.4.7" and launch.speculative:
        return Chosen(base * 0.95, f"{table.rule}, x 0.95 with speculative decoding")
    return table if mib <= 81920 else Chosen(base, f"0.88 above 80 GiB: {_card(launch)}")


def _by_class(launch: Launch, rules: Rules) -> Chosen:
    """0.4.8-0.5.2: round((gpu_mem - reserved) / gpu_mem, 3), reserved by GPU class and TP x PP."""
    mib, size = launch.gpu_mib, launch.tp * launch.pp
    gib = mib / 1024
    if gib < 35:
        reserved, what = (2.8 + size / 10) * 1024, f"(2.8 + {size}/10) GiB under 35 GiB"
    elif gib < 90:
        reserved, what = (9.5 + size / 2) * 1024, f"(9.5 + {size}/2) GiB under 90 GiB"
    elif gib < 160:
        reserved, what = (12 + size / 2) * 1024, f"(12 + {size}/2) GiB under 160 GiB"
    else:
        reserved, what = 32 * 1024, "32 GiB at 160 GiB or more"
    if launch.speculative:
        extra = 6 if launch.speculative == "STANDALONE" and rules.at_least(0, 5, 2) else 2
        reserved, what = reserved + extra * 1024, f"{what}, + {extra} GiB for speculative decoding"
    if launch.dp_attention:
        reserved, what = reserved + 4 * 1024, f"{what}, + 4 GiB for DP attention"
    value = round((mib - reserved) / mib, 3)
    return Chosen(value, f"(gpu_mem - reserved) / gpu_mem, reserved {what} ({_card(launch)}): {value}")


def _by_settings(launch: Launch) -> Chosen:
    """0.5.3+: reserved (MiB) from chunked prefill, graph batch size, TP x PP and DP attention."""
    mib, bs = launch.gpu_mib, launch.cuda_graph_max_bs
    chunk = launch.chunked_prefill_size if launch.chunked_prefill_size > 0 else launch.max_prefill_tokens
    reserved = 512 + max(chunk, 2048) * 1.5 + bs * 2 + launch.tp * launch.pp / 8 * 1024
    what = f"512 + 1.5 x {max(chunk, 2048):,} + 2 x {bs} + 1024 x {launch.tp * launch.pp}/8"
    if launch.dp_attention:
        reserved += bs * launch.dp * 3 + (bs * launch.dp * 1.5 if bs > 300 else 0)
        what += " + DP attention's graph padding"
    if mib > 60 * 1024 and reserved < 10 * 1024:
        reserved, what = 10 * 1024, f"{what}, floored at 10 GiB above 60 GiB"
    if launch.speculative and launch.speculative != "NGRAM":
        extra = 6144 if launch.speculative == "STANDALONE" else 2048
        reserved, what = reserved + extra, f"{what} + {extra} for speculative decoding"
    value = round((mib - reserved) / mib, 3)
    return Chosen(value, f"(gpu_mem - reserved) / gpu_mem, reserved {what} MiB ({_card(launch)}): {value}")


def vlm_factor(rules: Rules, vision: VisionSpec | None, given: bool) -> tuple[float, str | None]:
    """The factor a multimodal model's fraction is multiplied by, and why; (1.0, None) when none applies.
    The ViT rule's layers x hidden^2 is taken as the tower's parameters / 12 (a transformer layer holds
    about 12 hidden^2): the catalog keeps the tower's size, not its shape."""
    if vision is None:
        return 1.0, None
    mode = rules.vlm_factor
    if mode == "always-0.95":
        return 0.95, "x 0.95 for a multimodal model (ModelRunner, before 0.4.5; given values too)"
    if mode == "always-0.90":
        return 0.90, "x 0.90 for a multimodal model (0.4.5-0.4.8; given values too)"
    if given:
        return 1.0, None
    if mode == "default-0.90":
        return 0.90, "x 0.90 for a multimodal model's default (0.4.9)"
    ratio = (vision.params or 0) / 12 / VIT_BASELINE if vision.params else 1.0
    factor = 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return factor, (
        f"x {factor:.3f} for a multimodal model's default (adjust_mem_fraction_for_vlm: 0.95 x the ViT's size"
        " against ViT-L/14, its layers x hidden^2 taken as its parameters / 12)"
    )
