"""Shared fixtures: the packaged catalog, loaded once."""

import pytest

from gpumem_tui.catalog import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()
