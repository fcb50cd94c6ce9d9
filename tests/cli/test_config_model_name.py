"""`--config` names the model by what the user gave (a directory by its name; a file by its config's
`_name_or_path`, else the file's directory, never the shell's), serves a directory (vLLM cannot serve a
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


@pytest.mark.parametrize("given", ["dir", "file"])
def test_a_model_directory_is_named_by_it_and_served(tmp_path, capsys, given):
    folder = tmp_path / "my-8b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(SMALL_LLAMA, _name_or_path="/home/someone/old-path")))
    weights_beside(folder)
    ref = str(folder) if given == "dir" else str(folder / "config.json")
    code, data = plan(capsys, ref, "--engine", "vllm", "--json")
    assert code == 0 and data["launch"]["argv"][:3] == ["vllm", "serve", str(folder)]
    assert data["launch"]["notes"] == []
    assert data["model"] == ("my-8b" if given == "dir" else "/home/someone/old-path")


def test_an_error_names_the_file_given(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    bad = tmp_path / "x" / "bad.json"
    bad.write_text(json.dumps(dict(SMALL_LLAMA, hidden_size="wide")))
    code, err = plan(capsys, str(bad))
    assert code == 2 and err.startswith(f"gpumem-tui: {bad}: cannot read it") and "config.json for" not in err


def test_a_linked_model_directory_is_named_by_the_link_given(tmp_path, capsys):
    """`--config llama` where llama links into a store of hashes: the model is `llama`, as the launch line serves,
    not the link's target."""
    store = tmp_path / "store" / "7f3a9c"
    store.mkdir(parents=True)
    (store / "config.json").write_text(json.dumps(SMALL_LLAMA))
    weights_beside(store)
    (tmp_path / "llama").symlink_to(store)
    code, data = plan(capsys, str(tmp_path / "llama"), "--engine", "vllm", "--json")
    assert code == 0 and data["model"] == "llama"
    assert data["launch"]["argv"][:3] == ["vllm", "serve", str(tmp_path / "llama")]
