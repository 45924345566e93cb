"""modrag-studio names the system libraries Qt's xcb plugin misses, before Qt starts."""

from __future__ import annotations

from pathlib import Path

from modrag_studio.ui.shell import app, platform_check
from modrag_studio.ui.shell.platform_check import check_platform, missing_xcb_libraries, qt_platform

ROOT = Path(__file__).resolve().parents[2]


def test_platform_follows_argument_then_environment_then_session() -> None:
    assert qt_platform(["-platform", "offscreen"], {"QT_QPA_PLATFORM": "xcb"}) == "offscreen"
    assert qt_platform([], {"QT_QPA_PLATFORM": "xcb:dpi=96"}) == "xcb"
    assert qt_platform([], {"WAYLAND_DISPLAY": "w-0", "XDG_SESSION_TYPE": "wayland"}) \
        == "wayland"
    assert qt_platform([], {"DISPLAY": ":0"}) == "xcb"


def test_missing_libraries_named_with_their_packages() -> None:
    absent = {"libxcb-icccm.so.4", "libxcb-keysyms.so.1"}
    missing = missing_xcb_libraries(lambda so: so not in absent)
    assert missing == {"libxcb-icccm.so.4": "libxcb-icccm4",
                       "libxcb-keysyms.so.1": "libxcb-keysyms1"}
    text = check_platform([], {"QT_QPA_PLATFORM": "xcb"}, lambda so: so not in absent)
    assert "libxcb-icccm.so.4" in text and "apt-get install libxcb-icccm4 libxcb-keysyms1" in text
    assert check_platform([], {"QT_QPA_PLATFORM": "offscreen"}, lambda so: False) is None
    assert check_platform([], {"QT_QPA_PLATFORM": "xcb"}, lambda so: True) is None


def test_studio_exits_with_the_message_instead_of_a_qt_abort(monkeypatch, capsys) -> None:
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(platform_check, "_loads", lambda so: so != "libxcb-keysyms.so.1")
    monkeypatch.setattr(app, "_running_app", lambda: None)
    assert app.main([]) == 3
    err = capsys.readouterr().err
    assert "libxcb-keysyms.so.1" in err and "libxcb-keysyms1" in err


def test_setup_script_installs_every_package_the_check_names() -> None:
    script = (ROOT / "scripts" / "setup.sh").read_text()
    for package in set(platform_check.XCB_LIBRARIES.values()) | {"graphviz"}:
        assert f" {package} " in script.replace("\\\n", " ").replace('"', " ")
