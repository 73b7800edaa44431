"""Names a package exports, imported on first use (PEP 562): ``import dpgm`` and
``dpgm --help`` stay fast, and a subpackage's heavy dependencies (scipy, pandas,
networkx, OpenDP) load only when something that needs them is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps each name to
    ``"module"`` (the name is that module) or ``"module:attribute"``."""

    def __getattr__(name: str) -> object:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        loaded = importlib.import_module(module)
        value = getattr(loaded, attribute) if attribute else loaded
        globals_of(package)[name] = value  # the next lookup is an ordinary one
        return value

    def __dir__() -> list[str]:
        return sorted({*globals_of(package), *exports})

    return __getattr__, __dir__


def globals_of(package: str) -> dict:
    """The namespace of an imported package."""
    import sys

    return vars(sys.modules[package])
