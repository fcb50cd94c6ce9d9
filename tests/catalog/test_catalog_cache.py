"""The catalog is read once per process and validated once for all processes (catalog/cache.py), and the cache
is never stale and never fails a load: a changed file, a corrupt or foreign cache file, a cache directory
that cannot be written, each falls back to parsing and validating."""

import os
import tomllib

import pytest

import gpumem_tui
from gpumem_tui.catalog import load_catalog, loader

GPU = '[gpus.my-card]\naliases = ["mine"]\ntotal_mib = {mib}\n'


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """An empty cache directory of this test's own, and no catalog kept by this process."""
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setattr(loader, "_LOADED", {})
    return home / "gpumem-tui"


@pytest.fixture
def parses(monkeypatch):
    """Counts the TOML files parsed from now on."""
    count = [0]
    real = tomllib.loads

    def counted(text, **options):
        count[0] += 1
        return real(text, **options)

    monkeypatch.setattr(tomllib, "loads", counted)
    return count


def _user_dir(tmp_path, mib: int):
    mine = tmp_path / "mine"
    mine.mkdir(exist_ok=True)
    (mine / "mine.toml").write_text(GPU.format(mib=mib), encoding="utf-8")
    return mine


def _new_process(monkeypatch):
    """What another process starts with: no catalog in memory, the cache directory as it is."""
    monkeypatch.setattr(loader, "_LOADED", {})


@pytest.mark.usefixtures("cache_home")
def test_a_process_reads_the_same_files_once(parses, tmp_path):
    first = load_catalog()
    assert load_catalog() is first and parses[0] == 3  # the three packaged files, parsed once
    mine = _user_dir(tmp_path, 1024)
    assert load_catalog([mine]) is not first and load_catalog([mine]).gpu("mine").total_mib == 1024


def test_the_next_process_reads_the_validated_catalog_from_the_cache(cache_home, parses, monkeypatch):
    first = load_catalog()
    assert [p.name.startswith("catalog-") for p in cache_home.iterdir()] == [True]
    _new_process(monkeypatch)
    parsed = parses[0]
    again = load_catalog()
    assert parses[0] == parsed and again is not first
    assert again.models == first.models and again.gpus == first.gpus and again.formats == first.formats
    assert again.model("llama-3.1-8b").id == "meta-llama/Llama-3.1-8B"


@pytest.mark.usefixtures("cache_home")
def test_a_changed_file_is_read_again_in_the_process_and_from_the_cache(tmp_path, monkeypatch):
    mine = _user_dir(tmp_path, 1024)
    assert load_catalog([mine]).gpu("mine").total_mib == 1024
    _user_dir(tmp_path, 2048)
    assert load_catalog([mine]).gpu("mine").total_mib == 2048
    _new_process(monkeypatch)
    _user_dir(tmp_path, 1024)
    assert load_catalog([mine]).gpu("mine").total_mib == 1024


@pytest.mark.usefixtures("cache_home")
def test_another_version_never_reads_this_ones_cache(parses, monkeypatch):
    load_catalog()
    _new_process(monkeypatch)
    monkeypatch.setattr(gpumem_tui, "__version__", "0.0.0-other")
    parsed = parses[0]
    load_catalog()
    assert parses[0] == parsed + 3


@pytest.mark.parametrize("spoil", ["corrupt", "others_may_write"])
def test_a_cache_file_that_cannot_be_trusted_is_not_read(cache_home, parses, monkeypatch, spoil):
    expected = load_catalog()
    [cached] = cache_home.iterdir()
    if spoil == "corrupt":
        cached.write_bytes(b"not a pickle")
    else:
        cached.chmod(0o666)
    _new_process(monkeypatch)
    parsed = parses[0]
    assert load_catalog().gpus == expected.gpus and parses[0] == parsed + 3


def test_a_cache_directory_that_cannot_be_written_fails_nothing(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(loader, "_LOADED", {})
    assert load_catalog().gpu("h100").key == "H100-SXM-80GB"
    assert blocked.is_file() and not os.path.isdir(blocked)
