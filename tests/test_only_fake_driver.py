"""The fake driver is the only fake NVML: nothing else answers NVML calls, so every test and the demo run the
real binding's code over it. A function named like an NVML call (`nvmlDeviceGetName`, `_nvmlInit_v2`) is
defined only in the fake driver, and no file still names the Python-level fake the driver replaced."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "gpumem_tui" / "demo" / "fake_driver.py"
NVML_CALL = re.compile(r"_?nvml[A-Z]")
OLD_FAKE = re.compile(r"Fake" + r"Nvml|fake_" + r"nvml|real_" + r"module\(")  # split: this file must not match


def _python_files() -> list[Path]:
    return sorted(p for d in ("gpumem_tui", "tests", "bench") for p in (ROOT / d).rglob("*.py"))


def test_only_the_fake_driver_defines_nvml_functions():
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        for path in _python_files()
        if path != DRIVER
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and NVML_CALL.match(node.name)
    ]
    assert found == []


def test_no_file_names_the_python_level_fake():
    texts = [*_python_files(), *ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "bench").glob("*.sh")]
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in texts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OLD_FAKE.search(line)
    ]
    assert found == []
