"""A recording made before URLs were shown without their user and password may hold them (`http://user:pw@...`
in an engine's address, its records and an error): replayed, every command and the exporter show each URL as
`text.shown_url` does, and the file is never rewritten."""

from __future__ import annotations

import json

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.replay import RecordingReader, ReplaySource
from tests.export.exporter import exporter, scrape

SECRET = "hunter2"
OLD = f"http://alice:{SECRET}@gpu-host:8000"


@pytest.fixture
def old_recording(tmp_path, capsys):
    """kv-pressure recorded, then its engine's URL written as a recording made before the rule held it."""
    path = tmp_path / "old.jsonl"
    assert main(["snapshot", "--demo", "kv-pressure", "--record", str(path), "--json"]) == 0
    capsys.readouterr()
    header, *samples = path.read_text(encoding="utf-8").splitlines()
    aged = []
    for line in samples:
        sample = json.loads(line.replace("http://127.0.0.1:8000", OLD))
        sample["errors"].append(
            {"source": "engine", "message": f"{OLD}/metrics: connection refused", "hint": f"is {OLD} up?"}
        )
        aged.append(json.dumps(sample))
    path.write_text("\n".join([header, *aged]) + "\n", encoding="utf-8")
    return path


def _said(capsys, *argv: str) -> str:
    main(list(argv))
    out, err = capsys.readouterr()
    return out + err


@pytest.mark.parametrize(
    "argv",
    [["snapshot"], ["snapshot", "--json"], ["check"], ["check", "--json"], ["check", "-v"]],
    ids=" ".join,
)
def test_a_replayed_command_shows_each_url_without_its_credentials(old_recording, capsys, argv):
    before = old_recording.read_bytes()
    said = _said(capsys, *argv, "--replay", str(old_recording))
    assert SECRET not in said and "alice" not in said
    assert "http://gpu-host:8000" in said
    assert old_recording.read_bytes() == before


def test_the_replay_feed_s_samples_hold_no_credentials(old_recording):
    samples = list(RecordingReader(old_recording))
    last = ReplaySource(old_recording)
    texts = [s.model_dump_json() for s in [*samples, last.sample()]]
    assert samples and all(SECRET not in t and "http://gpu-host:8000" in t for t in texts)


def test_the_exporter_s_endpoint_label_holds_no_credentials(old_recording):
    with exporter("--replay", str(old_recording)) as url:
        labels = [labels for series in scrape(url).values() for labels, _ in series]
    endpoints = {each["endpoint"] for each in labels if each.get("endpoint")}
    assert endpoints == {"http://gpu-host:8000"}
    assert not any(SECRET in value for each in labels for value in each.values())
