"""A cluster address that answers, checked before Ray is imported or asked to join it."""

from __future__ import annotations

import socket

from capevolve.errors import EngineError


def refuse_unreachable(address: str) -> None:
    """An EngineError within seconds when nothing accepts connections at a ``host:port``
    address (Ray itself retries for minutes); other forms (``auto``) are Ray's to resolve."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3.0):
            return
    except OSError as exc:
        raise EngineError(f"Ray cluster {address}: nothing answers there "
                          f"({exc.strerror or type(exc).__name__}); start it first "
                          "(`ray start --head`) or leave the address out (--address, "
                          "RAY_ADDRESS, engine.address) for a local Ray") from None
