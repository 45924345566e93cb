"""The public API of a node family: the ``api`` module beside its node modules, whose names
the application (evaluation, commands, the studio, ...) imports instead of the family's
own modules.

An ``api`` module lists its names by home module and resolves each one when it is read
(PEP 562): importing the API imports none of the family's modules, so the light paths
(registration, a numpy-only query) stay light, and a name read from it is always the home
module's current attribute, the same object a direct import of that module would give.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def family_api(api_module: str, exports: Mapping[str, tuple[str, ...]]
               ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` of the family API ``api_module``;
    ``exports`` maps each module of the family (its name in the family) to the names the
    API re-exports from it."""
    family = api_module.rpartition(".")[0]
    home = {name: f"{family}.{module}" for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in home:
            raise AttributeError(f"module {api_module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home[name]), name)

    def __dir__() -> list[str]:
        return sorted(home)

    return sorted(home), __getattr__, __dir__
