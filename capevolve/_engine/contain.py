"""An exit, interrupt or fork inside an adapter call is that call's error, never the end (or a
copy) of the process that made it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, NoReturn

_REAL_EXIT = os._exit
_IN_CALL: ContextVar[tuple[str, int] | None] = ContextVar("capevolve_user_call", default=None)
"""``(where, pid)`` during a wrapped call."""


def _exit_of_user_code(status: int) -> NoReturn:
    call = _IN_CALL.get()
    if call is not None and call[1] == os.getpid():
        raise UserExit(f"{call[0]} called os._exit({status!r}): an exit of user code is an "
                       "error of the unit, not an outcome")
    _REAL_EXIT(status)


class UserExit(Exception):
    """User code exited or was interrupted; the message says how and where."""


def describe(exc: BaseException) -> str:
    """``Type: message``, or the type alone without a message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def exit_message(where: str, exc: BaseException) -> str:
    """Error text for an exit user code raised in ``where``."""
    if isinstance(exc, SystemExit):
        return (f"{where} called sys.exit({exc.code!r}) (SystemExit): an exit of user code "
                "is an error of the unit, not an outcome")
    return (f"{where} raised {type(exc).__name__}: an interrupt raised by user code is an "
            "error of the unit, not an outcome")


@contextlib.contextmanager
def _user_call(where: str) -> Iterator[None]:
    """The body as user code in ``where``: an exit raised is UserExit; a forked copy exits
    at the end."""
    pid = os.getpid()
    token = _IN_CALL.set((where, pid))
    try:
        yield
    except (SystemExit, KeyboardInterrupt) as exc:
        raise UserExit(exit_message(where, exc)) from None
    finally:
        _IN_CALL.reset(token)
        if os.getpid() != pid:
            _REAL_EXIT(0)


def contained(fn: Callable[..., Any], where: str) -> Callable[..., Any]:
    """``fn``, sync or async as it was, with exits raised as :class:`UserExit` and forked
    copies ended when they return."""
    os._exit = _exit_of_user_code  # idempotent; exits for real outside wrapped calls
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            with _user_call(where):
                return await fn(*args, **kwargs)
        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with _user_call(where):
            return fn(*args, **kwargs)
    return run


def end_forks_of(private_fds: tuple[int, ...]) -> None:
    """In every later fork, close ``private_fds`` and put ``/dev/null`` on stdin, so a fork
    of a worker never talks to the driver."""

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
