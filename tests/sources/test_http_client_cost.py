"""What each request costs beyond the wire: httpcore imports `sniffio` on every request (to ask which async
library runs it); where it is not installed, the import must fail at once, not search every path entry."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from gpumem_tui.sources.http import Timeouts, async_client


def test_an_absent_sniffio_is_not_searched_for_on_each_request() -> None:
    if importlib.util.find_spec("sniffio") is not None:
        pytest.skip("sniffio is installed: each import is a lookup in sys.modules already")
    asyncio.run(async_client(Timeouts(), connections=1, headers={}).aclose())
    searched: list[str] = []

    class Watch:
        def find_spec(self, name, path=None, target=None):  # noqa: ARG002 - the finder protocol
            searched.append(name)

    sys.meta_path.insert(0, Watch())
    try:
        for _ in range(3):
            with pytest.raises(ImportError):
                import sniffio  # noqa: F401
    finally:
        sys.meta_path.pop(0)
    assert searched == []
