"""`--config` names a model directory as `vllm serve DIR` does (its served_model_name defaults to the path
given: the launch line's), whether the directory or its config.json is given; a lone file by its config's
`_name_or_path`, else the file's directory, never the shell's. It serves a directory (vLLM cannot serve a
config.json) with a note where no weights lie beside the file, and says errors against the file given."""

import json
import struct

import pytest

from gpumem_tui.cli import main
from tests.configs import SMALL_LLAMA


def plan(capsys, config: str, *more: str) -> tuple[int, dict | str]:
    code = main(["plan", "--config", config, "--gpu", "h100", *more])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if "--json" in more and code == 0 else out.err)


def weights_beside(folder) -> None:
    """A small valid safetensors file: its 8-byte header length, the header, the data."""
    header = json.dumps({"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_lone_file_is_named_by_its_directory_and_never_served_itself(tmp_path, capsys, monkeypatch, engine):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "fp8.json").write_text(json.dumps(SMALL_LLAMA))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the shell's directory names nothing
    code, data = plan(capsys, str(tmp_path / "x" / "fp8.json"), "--engine", engine, "--json")
    assert code == 0 and data["model"] == "x"
    launch = data["launch"]
    assert not any(word.endswith(".json") for word in launch["argv"])
    assert str(tmp_path / "x") in launch["argv"]
    assert "has no weights beside it" in launch["notes"][0] and "as config.json" in launch["notes"][0]


def test_a_lone_file_that_names_its_model_serves_that_id(tmp_path, capsys):
    (tmp_path / "named.json").write_text(json.dumps(dict(SMALL_LLAMA, _name_or_path="lab/small-8b")))
    code, data = plan(capsys, str(tmp_path / "named.json"), "--engine", "vllm", "--json")
    assert code == 0 and data["model"] == "lab/small-8b"
    assert data["launch"]["argv"][:3] == ["vllm", "serve", "lab/small-8b"]
    assert "from the Hugging Face Hub" in data["launch"]["notes"][0]


@pytest.mark.parametrize("given", ["my-8b", "./my-8b/", "my-8b/config.json", "ABS", "ABS/config.json"])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_model_directory_has_one_name_however_it_is_given(tmp_path, capsys, monkeypatch, given, engine):
    """The directory named `my-8b`, the file named by its stale `_name_or_path`: one checkpoint, two names.
    Now the served directory, as the launch gives it, in the text, `--json` and the launch line."""
    folder = tmp_path / "my-8b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(SMALL_LLAMA, _name_or_path="/home/someone/old-path")))
    weights_beside(folder)
    monkeypatch.chdir(tmp_path)
    ref = given.replace("ABS", str(folder))
    code, data = plan(capsys, ref, "--engine", engine, "--json")
    assert code == 0 and data["model"] == str(folder)
    assert data["launch"]["argv"][2 if engine == "vllm" else 4] == str(folder)
    assert not any("weights beside" in note for note in data["launch"]["notes"])
    assert main(["plan", "--config", ref, "--gpu", "h100", "--engine", engine]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{folder}: ") and "old-path" not in text


def test_a_model_directory_without_weights_is_named_as_its_file_is(tmp_path, capsys):
    """No weights: the directory and its config.json alike serve the Hub id the file names, with the note."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(json.dumps(dict(SMALL_LLAMA, _name_or_path="lab/small-8b")))
    for ref in (tmp_path / "cfg", tmp_path / "cfg" / "config.json"):
        code, data = plan(capsys, str(ref), "--engine", "vllm", "--json")
        assert code == 0 and data["model"] == "lab/small-8b"
        assert data["launch"]["argv"][2] == "lab/small-8b" and "from the Hugging Face Hub" in data["launch"]["notes"][0]


def test_an_error_names_the_file_given(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    bad = tmp_path / "x" / "bad.json"
    bad.write_text(json.dumps(dict(SMALL_LLAMA, hidden_size="wide")))
    code, err = plan(capsys, str(bad))
    assert code == 2 and err.startswith(f"gpumem-tui: {bad}: cannot read it") and "config.json for" not in err


def test_a_linked_model_directory_is_named_by_the_link_given(tmp_path, capsys):
    """`--config llama` where llama links into a store of hashes: the model is the link, as the launch line serves,
    not the link's target."""
    store = tmp_path / "store" / "7f3a9c"
    store.mkdir(parents=True)
    (store / "config.json").write_text(json.dumps(SMALL_LLAMA))
    weights_beside(store)
    (tmp_path / "llama").symlink_to(store)
    code, data = plan(capsys, str(tmp_path / "llama"), "--engine", "vllm", "--json")
    assert code == 0 and data["model"] == str(tmp_path / "llama")
    assert data["launch"]["argv"][:3] == ["vllm", "serve", str(tmp_path / "llama")]
