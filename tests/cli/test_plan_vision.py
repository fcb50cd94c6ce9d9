"""`plan --engine vllm --limit-mm-per-prompt`: a multimodal checkpoint's tower and encoder inputs are named
in the human output and in `engine.terms`; 0 for every modality drops both; a bad value is one line."""

import json

import pytest

from gpumem_tui.cli import main

PLAN = ["plan", "--model", "google/gemma-3-12b-it", "--gpu", "h100", "--engine", "vllm", "--vllm-version", "0.19.0"]


def _terms(capsys, *extra: str) -> dict:
    assert main([*PLAN, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["engine"]["terms"]


def test_the_tower_is_counted_and_said(capsys):
    terms = _terms(capsys)
    assert terms["vision_tower"] == 421_290_864 * 2 and terms["encoder_profile"] > 0
    assert main(PLAN) == 0
    assert "  + vision tower counted: 0.78 GiB" in capsys.readouterr().out


@pytest.mark.parametrize("flag", [["--limit-mm-per-prompt", '{"image": 0}'], ["--language-model-only"]])
def test_no_images_loads_no_tower(capsys, flag):
    terms = _terms(capsys, *flag)
    assert "vision_tower" not in terms and "encoder_profile" not in terms and "rope_cache" in terms


@pytest.mark.parametrize(
    "bad, said", [("{image: 0", "needs JSON"), ('{"image": -1}', "whole count"), ("[0]", "JSON object")]
)
def test_a_bad_limit_is_one_line_and_exit_2(capsys, bad, said):
    assert main([*PLAN, "--limit-mm-per-prompt", bad]) == 2
    err = capsys.readouterr().err
    assert "--limit-mm-per-prompt" in err and said in err and len(err.strip().splitlines()) == 1
