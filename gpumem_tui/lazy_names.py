"""A package's names loaded when first asked for (PEP 562), so that importing one light module of a package
does not load the heavy ones its `__init__` names: the command line reads a constant or two from each to
write its help, and a command pays only for the modules it runs."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(package: str, module_of: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `module_of` imported from its submodule on first use and
    kept in the package, so it is looked up once (and a test may replace it there)."""
    namespace = importlib.import_module(package).__dict__

    def getattr_(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return getattr_
