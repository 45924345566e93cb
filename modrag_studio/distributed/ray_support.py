"""Ray as an optional extra: is it installed, import it, or say how to install it."""

from __future__ import annotations

from typing import Any

from modrag_studio.engine.core.errors import ModragError

INSTALL_HINT = ("Ray is not installed: install the 'distributed' extra "
                "(pip install 'modrag-studio[distributed]', or pip install 'ray[data]==2.60.0')")


class RayUnavailable(ModragError):
    """Ray is not installed or the cluster cannot be joined (the message says what to do)."""


def ray_available() -> bool:
    """Whether Ray can be imported here (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


def require_ray() -> Any:
    """The ``ray`` module, or RayUnavailable with the install command."""
    try:
        import ray
        import ray.data  # noqa: F401  (the ingest pipeline needs Ray Data)
    except ImportError as exc:
        raise RayUnavailable(f"{INSTALL_HINT} ({exc})") from None
    return ray
