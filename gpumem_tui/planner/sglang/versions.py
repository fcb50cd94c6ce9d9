"""Which of SGLang's sizing rules a release follows (shared/reference/sglang_memory.md, sections 1-4).

A release is (major, minor, patch, post): `0.4.6.post2` is (0, 4, 6, 2), a release candidate `0.5.3rc2`
sorts before its release as (0, 5, 3, -1). The rules were read from v0.3.0 to v0.5.6.post2; the newest of
them is the default."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpumem_tui.planner.dtypes import PlanInputError

DEFAULT_VERSION = "0.5.6"

Version = tuple[int, int, int, int]
RC = -1
"""The post number of a release candidate: before the release itself."""
FIRST_KNOWN: Version = (0, 3, 0, RC)
LAST_KNOWN: Version = (0, 5, 6, 99)


def parse_version(text: str) -> Version:
    """`0.4.6.post2`, `v0.5.3rc2`, `0.5` as a Version; anything else a PlanInputError."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.?post(\d+)|(rc\d+))?$", str(text).strip())
    if not match:
        raise PlanInputError(f"cannot read SGLang version {text!r}; write it like 0.4.6.post2")
    major, minor, patch, post, rc = match.groups()
    return int(major), int(minor), int(patch or 0), RC if rc else int(post or 0)


def known_version(text: str) -> str:
    """`text` (without a leading v) when the rules know its release; otherwise a PlanInputError naming them."""
    if not FIRST_KNOWN <= parse_version(text) <= LAST_KNOWN:
        raise PlanInputError(
            f"SGLang {str(text).strip()} is not a release the sizing rules know; use one from 0.3.0 to 0.5.6.x"
        )
    return str(text).strip().removeprefix("v")


@dataclass(frozen=True)
class Rules:
    """What changed between releases, as flags and small enums; each cites where it was read."""

    version: Version

    def at_least(self, *release: int) -> bool:
        return self.version >= (*release, *(0,) * (4 - len(release)))

    @property
    def fraction_rule(self) -> str:
        """Which default `mem_fraction_static` rule applies (fraction.py; reference section 4)."""
        steps = (
            ((0, 5, 3, RC), "reserve-by-settings"),
            ((0, 4, 8, 0), "reserve-by-class"),
            ((0, 4, 7, 1), "reserve-by-class"),  # v0.4.7.post1 already had the v0.4.8 table
            ((0, 4, 7, 0), "table-0.4.7"),
            ((0, 4, 6, 2), "table-0.4.6.post2"),
            ((0, 4, 6, 0), "table-0.4.6"),
            ((0, 4, 0, 0), "table-0.4.0"),
            ((0, 3, 6, 0), "table-0.3.6"),
        )
        return next((name for low, name in steps if self.version >= low), "table-0.3.0")

    @property
    def vlm_factor(self) -> str:
        """How a multimodal model's fraction is lowered: `always-0.95` (ModelRunner, user values too, before
        0.4.5), `always-0.90` (0.4.5-0.4.8.post1), `default-0.90` (0.4.9-0.4.9.post2, only the default),
        `vit` (0.4.9.post3+: adjust_mem_fraction_for_vlm, only the default)."""
        if not self.at_least(0, 4, 5):
            return "always-0.95"
        if not self.at_least(0, 4, 9):
            return "always-0.90"
        return "default-0.90" if self.version < (0, 4, 9, 3) else "vit"

    @property
    def req_pool_extra_row(self) -> int:
        """ReqToTokenPool holds max_num_reqs + 1 rows through 0.4.6.postN, max_num_reqs from 0.4.7
        (model_runner.py:795 at 0.4.6; :926 at 0.4.7)."""
        return 0 if self.at_least(0, 4, 7) else 1

    @property
    def max_num_reqs_cap(self) -> int:
        """max_num_reqs = min(max(int(tokens / context_len * 512), 2048), cap): 5120 in 0.3.x, 4096 from 0.4.0."""
        return 4096 if self.at_least(0, 4, 0) else 5120

    @property
    def mla_default(self) -> bool:
        """MLA on by default from 0.4.0 (`--disable-mla`); 0.3.x needs `--enable-mla` (MHA cache otherwise)."""
        return self.at_least(0, 4, 0)

    @property
    def hybrid_swa(self) -> bool:
        """Sliding-window and chunked-attention models split the pool into full and SWA pools from 0.4.9."""
        return self.at_least(0, 4, 9)

    @property
    def fp8_kv_from_checkpoint(self) -> bool:
        """`--kv-cache-dtype auto` follows a checkpoint that declares an FP8 KV cache from ~0.5.3."""
        return self.at_least(0, 5, 3, RC)
