"""Before Qt starts: name the system libraries its X11 (xcb) platform plugin cannot load.

Without them Qt only says "Could not load the Qt platform plugin "xcb"" and aborts; this
check runs before ``QApplication`` exists and tells which Debian package to install.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Sequence

# Shared libraries Qt's xcb plugin (libqxcb.so + libQt6XcbQpa) links, and their Debian package.
XCB_LIBRARIES: dict[str, str] = {
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libEGL.so.1": "libegl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libdbus-1.so.3": "libdbus-1-3",
}


def qt_platform(argv: Sequence[str] = (), environ: dict[str, str] | None = None) -> str:
    """The platform plugin Qt will pick: ``-platform``, ``QT_QPA_PLATFORM``, else the session's."""
    env = os.environ if environ is None else environ
    args = list(argv)
    for index, arg in enumerate(args[:-1]):
        if arg in ("-platform", "--platform"):
            return args[index + 1].split(":")[0]
    if env.get("QT_QPA_PLATFORM"):
        return env["QT_QPA_PLATFORM"].split(":")[0].split(";")[0]
    if sys.platform != "linux":
        return sys.platform
    if env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE") == "wayland":
        return "wayland"
    return "xcb"


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_xcb_libraries(loads: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Library file -> Debian package, for each xcb plugin dependency that does not load."""
    loads = loads or _loads
    return {so: pkg for so, pkg in XCB_LIBRARIES.items() if not loads(so)}


def missing_libraries_message(missing: dict[str, str]) -> str:
    """What to tell the user (and the command that fixes it)."""
    names = ", ".join(sorted(missing))
    packages = " ".join(sorted(set(missing.values())))
    return (f"modrag-studio: the Qt X11 (xcb) platform plugin needs system libraries that are "
            f"not installed: {names}.\nInstall them with:\n  sudo apt-get install {packages}\n"
            f"(or run scripts/setup.sh as root; QT_QPA_PLATFORM=offscreen needs none of them).")


def check_platform(argv: Sequence[str] = (), environ: dict[str, str] | None = None,
                   loads: Callable[[str], bool] | None = None) -> str | None:
    """The message naming missing libraries when Qt would start on xcb, else None."""
    if qt_platform(argv, environ) != "xcb" or sys.platform != "linux":
        return None
    missing = missing_xcb_libraries(loads)
    return missing_libraries_message(missing) if missing else None
