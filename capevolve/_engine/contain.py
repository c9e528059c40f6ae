"""Containment of user code's exits: an exit, an interrupt or a fork of an adapter call is
an error of that call, never the end (or a copy) of the process that made it.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Any, NoReturn

_REAL_EXIT = os._exit
_IN_CALL: ContextVar[tuple[str, int] | None] = ContextVar("capevolve_user_call", default=None)
"""``(where, pid)`` while a wrapped call runs in this context."""


def _exit_of_user_code(status: int) -> NoReturn:
    call = _IN_CALL.get()
    if call is not None and call[1] == os.getpid():
        raise UserExit(f"{call[0]} called os._exit({status!r}): an exit of user code is an "
                       "error of the unit, not an outcome")
    _REAL_EXIT(status)


class UserExit(Exception):
    """User code raised SystemExit or KeyboardInterrupt (the message says which, where)."""


def exit_message(where: str, exc: BaseException) -> str:
    """The error text of an exit raised by user code in ``where``."""
    if isinstance(exc, SystemExit):
        return (f"{where} called sys.exit({exc.code!r}) (SystemExit): an exit of user code "
                "is an error of the unit, not an outcome")
    return (f"{where} raised {type(exc).__name__}: an interrupt raised by user code is an "
            "error of the unit, not an outcome")


def _leave(token: Token, pid: int) -> None:
    """End a wrapped call: its context variable back, and a forked copy ends here."""
    _IN_CALL.reset(token)
    if os.getpid() != pid:
        _REAL_EXIT(0)


def contained(fn: Callable[..., Any], where: str) -> Callable[..., Any]:
    """``fn`` (sync or async, and staying so) with exits turned into :class:`UserExit` and
    forked copies ended when they return (written out in each wrapper, not as a context
    manager: this runs once per rollout)."""
    os._exit = _exit_of_user_code  # idempotent; exits for real outside wrapped calls
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            pid = os.getpid()
            token = _IN_CALL.set((where, pid))
            try:
                return await fn(*args, **kwargs)
            except (SystemExit, KeyboardInterrupt) as exc:
                raise UserExit(exit_message(where, exc)) from None
            finally:
                _leave(token, pid)
        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        pid = os.getpid()
        token = _IN_CALL.set((where, pid))
        try:
            return fn(*args, **kwargs)
        except (SystemExit, KeyboardInterrupt) as exc:
            raise UserExit(exit_message(where, exc)) from None
        finally:
            _leave(token, pid)
    return run


def end_forks_of(private_fds: tuple[int, ...]) -> None:
    """In every process later forked from this one (``os.fork``), close ``private_fds``
    and put ``/dev/null`` on stdin before the fork returns: a fork of a worker never reads
    the driver's requests nor writes replies."""

    def in_child() -> None:
        for fd in private_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.close(null)

    os.register_at_fork(after_in_child=in_child)
