"""`log --compare` of a multimodal startup (issue 15, term 3): the tower and the encoder's dummy inputs are
predicted from the settings the log states, `--limit-mm-per-prompt` among them."""

import json

from gpumem_tui.cli import main
from tests.datafiles import DATA

GEMMA_3 = DATA / "vllm_0.19_gemma-3-12b_started.log"


def _compare(capsys, path) -> dict:
    assert main(["log", str(path), "--compare", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_gemma_3_startup_is_compared_with_its_tower(capsys):
    out = _compare(capsys, GEMMA_3)
    rows = {row["key"]: row for row in out["compare"]}
    assert out["engine"]["terms"]["vision_tower"] == 421_290_864 * 2
    assert abs(rows["weights_gib"]["error"]) < 0.005 and abs(rows["kv_cache_gib"]["error"]) < 0.005


def test_a_limit_the_log_states_drops_the_tower(capsys, tmp_path):
    text = GEMMA_3.read_text().replace("'enable_prefix_caching': False", "'limit_mm_per_prompt': {'image': 0}", 1)
    path = tmp_path / "text_only.log"
    path.write_text(text)
    out = _compare(capsys, path)
    assert out["log"]["limit_mm_per_prompt"] == "{'image': 0}"
    assert "vision_tower" not in out["engine"]["terms"] and "encoder_profile" not in out["engine"]["terms"]


def test_the_gemma_3_startup_is_predicted_to_start_as_it_did(capsys):
    """The warm-up after the pool runs in what the profile freed (its peak, less the buffers it keeps) plus
    the headroom outside the budget: the logged start completed, so the prediction must agree."""
    out = _compare(capsys, GEMMA_3)
    assert out["outcome"]["agree"] is True, out["outcome"]["says"]


def test_a_limit_the_log_states_but_cannot_be_read_is_said_as_assumed(capsys, tmp_path):
    """A dict cut short by a collector, or values vLLM would refuse: the prediction keeps vLLM's default
    (999 each, the tower counted) and says so, as the live auto plan does."""
    text = GEMMA_3.read_text().replace("'enable_prefix_caching': False", "'limit_mm_per_prompt': {'image': -1}", 1)
    path = tmp_path / "unreadable.log"
    path.write_text(text)
    out = _compare(capsys, path)
    assert "vision_tower" in out["engine"]["terms"]
    assert any("limit_mm_per_prompt" in line and "999" in line for line in out["assumed"]), out["assumed"]


def test_a_log_that_names_no_gpu_is_said_so_in_its_assumed_lines(capsys):
    """The Gemma 3 log states only the total (79.19 GiB); the lines about the GPU's facts must read as
    English, not 'for GPU stated'."""
    out = _compare(capsys, GEMMA_3)
    about_gpu = [line for line in out["engine"]["assumed"] if "known for" in line]
    assert about_gpu and all("GPU unnamed in the log (79.19 GiB)" in line for line in about_gpu), about_gpu
