"""Check a cluster address answers before Ray is asked to join it."""

from __future__ import annotations

import socket

from capevolve.errors import EngineError


def refuse_unreachable(address: str) -> None:
    """Raise EngineError fast when nothing listens at a ``host:port`` address (Ray would retry
    for minutes); other forms are left to Ray."""
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
