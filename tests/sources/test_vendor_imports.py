"""Each vendor library lives in one module: pynvml in sources/nvml.py, psutil in sources/host.py."""

from __future__ import annotations

from tests.test_import_rules import _importers


def test_pynvml_only_in_the_nvml_source():
    assert _importers("pynvml") == {"sources/nvml.py"}


def test_psutil_only_in_the_host_source():
    assert _importers("psutil") == {"sources/host.py"}
