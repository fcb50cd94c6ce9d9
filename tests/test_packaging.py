"""A plain, non-editable wheel carries the catalog: build it, install it apart, and plan from it."""

import os
import subprocess
import sys
import zipfile


def test_the_wheel_ships_the_catalog_and_plans_from_it(tmp_path, wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "gpumem_tui/_catalog/models.toml" in names and "gpumem_tui/_catalog/gpus.toml" in names
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("GPUMEM_TUI_CATALOG", None)
    code = (
        "import gpumem_tui.catalog.loader as l, sys; d = l.packaged_dir(); "
        "assert '_catalog' in str(d) and str(d).startswith(sys.argv[1]), d; "
        "from gpumem_tui.cli import main; "
        "raise SystemExit(main(['plan', '--model', 'llama-3.1-8b', '--gpu', 'h100']))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert run.returncode == 0, run.stderr
    assert "Fits on 1 x H100-SXM-80GB" in run.stdout
