"""A socket guard: records (and refuses) every attempt to reach a non-loopback address.

``install()`` patches ``socket.socket.connect``/``connect_ex``, ``socket.create_connection``
and ``socket.getaddrinfo``; ``attempts`` lists what was tried. Loopback and Unix sockets pass.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

attempts: list[str] = []
_saved: dict[str, Any] = {}
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def is_local(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").split("%", 1)[0]
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check(what: str, address: Any) -> None:
    if isinstance(address, tuple) and address and not is_local(address[0]):
        attempts.append(f"{what} {address[0]}:{address[1] if len(address) > 1 else ''}")
        raise OSError(101, f"network access blocked by the test guard ({address[0]})")


def install() -> None:
    """Start guarding (idempotent)."""
    if _saved:
        return
    _saved.update(connect=socket.socket.connect, connect_ex=socket.socket.connect_ex,
                  create_connection=socket.create_connection, getaddrinfo=socket.getaddrinfo)

    def wrap_method(name: str) -> Callable[..., Any]:
        real = _saved[name]

        def guarded(self: socket.socket, address: Any) -> Any:
            if self.family in (socket.AF_INET, socket.AF_INET6):
                _check(name, address)
            return real(self, address)

        return guarded

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        _check("create_connection", address)
        return _saved["create_connection"](address, *args, **kwargs)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_local(host):
            attempts.append(f"getaddrinfo {host}")
            raise socket.gaierror(socket.EAI_NONAME, f"name lookup blocked by the test guard "
                                                     f"({host})")
        return _saved["getaddrinfo"](host, *args, **kwargs)

    socket.socket.connect = wrap_method("connect")  # type: ignore[method-assign]
    socket.socket.connect_ex = wrap_method("connect_ex")  # type: ignore[method-assign]
    socket.create_connection = create_connection  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def uninstall() -> None:
    if not _saved:
        return
    socket.socket.connect = _saved["connect"]  # type: ignore[method-assign]
    socket.socket.connect_ex = _saved["connect_ex"]  # type: ignore[method-assign]
    socket.create_connection = _saved["create_connection"]  # type: ignore[assignment]
    socket.getaddrinfo = _saved["getaddrinfo"]  # type: ignore[assignment]
    _saved.clear()
