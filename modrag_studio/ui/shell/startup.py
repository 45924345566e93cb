"""Start-up speed: what NodeGraphQt's import pulls in, trimmed before it is imported.

NodeGraphQt goes through Qt.py, which by default imports every PySide6 module it knows
(QML, multimedia, networking, ...) and touches all their members, and it imports
``distutils.version``, which setuptools' shim answers by importing all of setuptools. Both
cost about a second each at launch and neither is used by the canvas.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import warnings

# The PySide6 modules NodeGraphQt uses (``from Qt import QtCore, QtGui, QtSvg, QtWidgets``).
QT_MODULES_USED = frozenset({"QtCore", "QtGui", "QtWidgets", "QtSvg"})


def _keep_used_modules(members: dict[str, list[str]]) -> None:
    for name in list(members):
        if name not in QT_MODULES_USED:
            del members[name]


def limit_qt_py_modules() -> None:
    """Let Qt.py wrap only the modules NodeGraphQt uses (unless a QtSiteConfig exists)."""
    if "Qt" in sys.modules or "QtSiteConfig" in sys.modules:
        return
    if importlib.util.find_spec("QtSiteConfig") is not None:
        return  # the user's own site configuration wins
    site_config = types.ModuleType("QtSiteConfig")
    site_config.__doc__ = "Qt.py site configuration (see modrag_studio.ui.shell.startup)."
    site_config.update_members = _keep_used_modules  # type: ignore[attr-defined]
    sys.modules["QtSiteConfig"] = site_config


def preload_stdlib_distutils_version() -> None:
    """Import the standard library's ``distutils.version`` past setuptools' shim (< 3.12)."""
    if sys.version_info >= (3, 12) or "distutils" in sys.modules:
        return
    shims = [finder for finder in sys.meta_path
             if type(finder).__module__ == "_distutils_hack"]
    for finder in shims:
        sys.meta_path.remove(finder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import distutils.version  # noqa: F401
    except ImportError:
        pass
    finally:
        for finder in reversed(shims):
            sys.meta_path.insert(0, finder)


def prepare_canvas_imports() -> None:
    """Everything above, before NodeGraphQt is first imported."""
    limit_qt_py_modules()
    preload_stdlib_distutils_version()
