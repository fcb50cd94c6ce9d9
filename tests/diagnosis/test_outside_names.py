"""A model name from outside (an engine's /metrics, /v1/models, a command line, a recording) is looked up in
the catalog and the local HF cache by id only: it never names a local file to read."""

from __future__ import annotations

import json
import os

from gpumem_tui.catalog.hfconfig import MAX_CONFIG_BYTES, find_cached, is_repo_id, load_config
from gpumem_tui.cli import main
from gpumem_tui.diagnosis.autoplan import engine_plans
from gpumem_tui.sources.replay import Recorder
from tests.configs import SMALL_LLAMA

from .build import ENGINE_CMD, engine, gpu, process, sample

CONFIG = SMALL_LLAMA


def _serving(name: str):
    return sample(
        gpus=[gpu(used_gib=72)], processes=[process(2100, 72, cmdline=ENGINE_CMD)], engines=[engine(model=name)]
    )


def _model_dir(tmp_path):
    where = tmp_path / "models" / "X"
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(CONFIG))
    return where


def test_a_name_the_system_cannot_look_up_is_an_unknown_model(catalog, tmp_path):
    too_long = str(tmp_path / ("x" * 256))  # ENAMETOOLONG, for root too
    [plan] = engine_plans(_serving(too_long), catalog)
    assert plan.prediction is None and "not in the catalog or the local HF cache" in plan.missing


def test_a_name_that_is_a_local_model_directory_is_not_read(catalog, tmp_path):
    where = _model_dir(tmp_path)
    relative = os.path.join(os.pardir, os.path.relpath(where, tmp_path.parent))  # a relative path is a path too
    for name in (str(where), str(where / "config.json"), relative):
        [plan] = engine_plans(_serving(name), catalog)
        assert plan.prediction is None and "unknown model" in plan.missing, name
        assert not any("architecture from" in fact for fact in plan.found)


def test_only_repository_ids_reach_the_hf_cache(tmp_path, monkeypatch):
    snapshot = tmp_path / "models--acme--tiny-1b" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(CONFIG))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert find_cached("acme/tiny-1b") == snapshot / "config.json"
    climbing = "/".join(["acme", os.pardir, "acme", "tiny-1b"])
    for name in (
        climbing,
        "/acme/tiny-1b",
        "acme/tiny-1b/",
        "acme",
        "a/b/c",
        "acme/" + "x" * 300,
        str(snapshot),
        "acme/tiny-1b\n",
    ):
        assert not is_repo_id(name) and find_cached(name) is None, name


def test_a_recording_naming_a_local_path_replays_with_an_unknown_model(tmp_path, capsys):
    where = _model_dir(tmp_path)
    path = tmp_path / "rec.jsonl"
    with Recorder(path) as recorder:
        for t, name in enumerate([str(tmp_path / ("x" * 256)), str(where), str(where)]):
            recorder.write(_serving(name).model_copy(update={"timestamp": 1000.0 + t}))
    code = main(["check", "--replay", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in err
    [plan] = json.loads(out)["plans"]
    assert plan["kv_cache_tokens"] is None and "unknown model" in plan["missing"]


def test_a_config_is_read_once_per_version_of_the_file(tmp_path):
    path = _model_dir(tmp_path) / "config.json"
    assert load_config(path)["hidden_size"] == 2048
    stat = path.stat()
    path.write_text(json.dumps({**CONFIG, "hidden_size": 4096}))  # same length, same times: the same version
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert load_config(path)["hidden_size"] == 2048
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert load_config(path)["hidden_size"] == 4096


def test_a_config_over_the_size_limit_is_refused_unread(tmp_path, capsys):
    big = tmp_path / "config.json"
    with big.open("wb") as handle:
        handle.truncate(300 * 2**20)  # sparse: 300 MB that would take seconds and 600 MB to read
    assert main(["plan", "--config", str(big), "--gpu", "h100"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"at most {MAX_CONFIG_BYTES:,}" in err


def test_a_model_path_is_matched_to_the_catalog_by_its_last_part_without_reading_it(catalog, tmp_path):
    where = tmp_path / "models" / "Llama-3.1-8B-Instruct"
    where.mkdir(parents=True)
    (where / "config.json").write_text(json.dumps(CONFIG))  # a 16-layer model: read, it would not plan an 8B
    [plan] = engine_plans(_serving(str(where)), catalog)
    assert plan.model == catalog.model("llama-3.1-8b-instruct").id and plan.prediction is not None
    assert any("by the name's last part Llama-3.1-8B-Instruct" in fact for fact in plan.found)
    assert plan.prediction.weights_bytes > 15e9  # the catalog's 8B, not the 16-layer file beside it
