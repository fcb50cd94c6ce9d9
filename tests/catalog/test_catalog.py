"""The catalog: every reference model and GPU present, counts computed from architecture, bad entries named."""

import json

import pytest

from gpumem_tui.catalog import CatalogError, LookupFailed, load_catalog
from gpumem_tui.planner.kv import kv_bytes_per_token
from gpumem_tui.planner.params import count_params
from gpumem_tui.units import MIB
from tests.datafiles import REFERENCE


@pytest.fixture(scope="module")
def reference():
    return json.loads(REFERENCE.read_text())


def test_every_researched_reference_model_is_in_the_catalog(catalog, reference):
    researched = [mid for mid, m in reference["models"].items() if "architecture" in m]
    assert len(researched) >= 26
    for mid in researched:
        assert catalog.model(mid).id == mid


def test_parameter_counts_match_the_reference_exactly(catalog, reference):
    for mid, ref in reference["models"].items():
        expected = ref.get("params_total_computed") or ref.get("params_total_computed_text_only_vocab262144")
        if expected:
            assert count_params(catalog.model(mid)).total == expected, mid


@pytest.mark.parametrize("model, total", [("llama-3.1-8b", 8_030_261_248), ("llama-3.1-70b", 70_553_706_496)])
def test_llama_counts_from_architecture(catalog, model, total):
    assert count_params(catalog.model(model)).total == total


def test_active_parameter_counts_match_the_reference(catalog, reference):
    for mid, ref in reference["models"].items():
        expected = ref.get("params_active_computed") or ref.get("params_active_computed_incl_embedding")
        if expected:
            assert count_params(catalog.model(mid)).active == expected, mid


def test_kv_bytes_per_token_match_the_reference(catalog, reference):
    for mid, ref in reference["models"].items():
        expected = ref.get("kv_cache_bytes_per_token_bf16") or ref.get(
            "kv_cache_bytes_per_token_bf16_if_all_layers_full"
        )
        if expected and catalog.model(mid).mla is None:
            assert kv_bytes_per_token(catalog.model(mid), "bf16") == expected, mid


def test_every_reference_gpu_is_in_the_catalog_with_its_reported_total(catalog, reference):
    assert len(reference["gpus"]) == 23
    for ref in reference["gpus"].values():
        spec = catalog.gpu_by_nvml_name(ref["nvml_name"])
        assert spec is not None, ref["nvml_name"]
        if ref["nvidia_smi_total_mib"]:
            assert spec.capacity_bytes == ref["nvidia_smi_total_mib"] * MIB
        assert spec.mem_bandwidth_gbps == ref["mem_bandwidth_gbps"]
        assert spec.bf16_tflops_dense == ref["bf16_tflops_dense"]


def test_h100_reports_81559_mib_and_is_found_by_nvml_name(catalog):
    h100 = catalog.gpu_by_nvml_name("nvidia h100 80gb hbm3")
    assert h100.key == "H100-SXM-80GB" and h100.total_mib == 81_559
    assert catalog.gpu_by_nvml_name("NVIDIA A100-PCIe-40GB").key == "A100-PCIe-40GB"


def test_mxfp4_gpt_oss_weights_match_the_reference(catalog):
    """Only expert matrices are MXFP4 (4.25 bits); the rest BF16: about 65.25 GB and 13.76 GB."""
    from gpumem_tui.planner.weights import weights_bytes

    mxfp4 = catalog.format("mxfp4")
    assert round(weights_bytes(count_params(catalog.model("gpt-oss-120b")), mxfp4) / 1e9, 2) == 65.25
    assert round(weights_bytes(count_params(catalog.model("gpt-oss-20b")), mxfp4) / 1e9, 2) == 13.76


def test_unknown_names_suggest_the_closest(catalog):
    with pytest.raises(LookupFailed) as err:
        catalog.model("llama-3.1-7b")
    assert "meta-llama/Llama-3.1-70B" in str(err.value) and "meta-llama/Llama-3.1-8B" in str(err.value)
    with pytest.raises(LookupFailed, match="closest: H100"):
        catalog.gpu("h10")


def test_short_ids_and_aliases_resolve(catalog):
    assert catalog.model("Llama-3.1-8B").id == "meta-llama/Llama-3.1-8B"
    assert catalog.model("LLAMA-3.1-8B").id == "meta-llama/Llama-3.1-8B"
    assert catalog.format("bfloat16").name == "bf16"


def test_a_user_directory_adds_and_overrides_entries(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text(
        '[gpus.H100-SXM-80GB]\ntotal_mib = 80000\nnvml_names = ["NVIDIA H100 80GB HBM3"]\n\n'
        '[gpus.my-card]\naliases = ["mine"]\ntotal_mib = 1024\n'
    )
    catalog = load_catalog([tmp_path])
    assert catalog.gpu("mine").capacity_bytes == 1024 * MIB
    assert catalog.gpu("H100-SXM-80GB").total_mib == 80000
    monkeypatch.setenv("GPUMEM_TUI_CATALOG", str(tmp_path))
    assert load_catalog().gpu("mine").key == "my-card"


@pytest.mark.parametrize(
    "text, where",
    [
        ('[models.bad]\narchitecture = "x"\nlayers = "many"\n', "models.bad.layers"),
        ("[gpus.nothing]\naliases = []\n", "gpus.nothing"),
        ("[formats.f]\nbits_per_param = -1\n", "formats.f.bits_per_param"),
        ("[widgets.x]\na = 1\n", "unknown section [widgets]"),
        ("[gpus.x\n", "mine.toml"),
    ],
)
def test_a_bad_entry_names_the_file_the_key_and_the_reason(tmp_path, text, where):
    (tmp_path / "mine.toml").write_text(text)
    with pytest.raises(CatalogError) as err:
        load_catalog([tmp_path])
    message = str(err.value)
    assert "mine.toml" in message and where in message and "\n" not in message


def test_missing_catalog_directory_is_an_error(tmp_path):
    with pytest.raises(CatalogError, match="not found"):
        load_catalog([tmp_path / "nope"])
