"""Shared fixtures: the packaged catalog, loaded once; the run's own temp directory."""

import tempfile

import pytest

from gpumem_tui.catalog import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session", autouse=True)
def own_temp_directory(tmp_path_factory):
    """Whatever the code under test writes to the temp directory (a crash's traceback file above all, also
    from child processes through TMPDIR) lands in pytest's own, which pytest clears: never in /tmp, and
    never left behind by a test that failed before removing it."""
    where = str(tmp_path_factory.mktemp("tempdir"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", where)
        patch.setattr(tempfile, "tempdir", where)
        yield where
