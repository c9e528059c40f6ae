"""How commands talk: with --json exactly one JSON object on stdout, anything else on
stderr; a user error is one line, exit 2."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from capevolve import telemetry as otel
from capevolve.errors import CapevolveError, Interrupted

if TYPE_CHECKING:
    from capevolve.records import StopParse

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def clean(text: str) -> str:
    """Terminal escapes and control characters neutralised, for human output."""
    return _ESCAPES.sub(lambda m: repr(m.group(0))[1:-1], text)


class _Stdout:
    """The real stdout, set aside while a command runs."""

    stream: Any = None  # where the one JSON document (or the human result) goes
    fd: int | None = None  # the file descriptor redirected to stderr, if any
    saved: int | None = None  # a duplicate of the original descriptor
    keep_redirect = False  # console script: keep fd 1 on stderr until the process exits


def _protect_stdout() -> None:
    if _Stdout.stream is not None:
        return
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, io.UnsupportedOperation, ValueError):
        _Stdout.stream = sys.stdout  # in-memory stdout (tests): swap the Python object only
        sys.stdout = sys.stderr
        return
    _Stdout.fd, _Stdout.saved = fd, os.dup(fd)
    os.dup2(sys.stderr.fileno(), fd)  # native writes and subprocess output go to stderr too
    _Stdout.stream = os.fdopen(os.dup(_Stdout.saved), "w", encoding="utf-8")


def _restore_stdout() -> None:
    stream, _Stdout.stream = _Stdout.stream, None
    if stream is None:
        return
    if _Stdout.fd is None:
        sys.stdout = stream
        return
    stream.close()
    if not _Stdout.keep_redirect and _Stdout.saved is not None:  # in-process callers
        sys.stdout.flush()                                         # get their stdout back
        os.dup2(_Stdout.saved, _Stdout.fd)
        os.close(_Stdout.saved)
        _Stdout.fd = _Stdout.saved = None


def json_safe(value: Any) -> Any:
    """Non-finite floats as None, recursively (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def progress(message: str) -> None:
    """A progress line on stderr."""
    print(clean(message), file=sys.stderr, flush=True)


def emit(payload: dict[str, Any], as_json: bool, human: str, failed: bool = False) -> None:
    """Print the result: JSON on the real stdout, or the human text; then exit 1 if
    ``failed``."""
    stream = _Stdout.stream or sys.stdout
    if as_json:
        stream.write(json.dumps(json_safe(payload), sort_keys=True, default=str,
                                allow_nan=False) + "\n")
    else:
        stream.write(clean(human) + "\n")
    stream.flush()
    if failed:
        raise typer.Exit(1)


def exit_if_breaker(reason: str | None) -> None:
    """Exit 1 after the result when the circuit breaker stopped the evaluation."""
    if reason and reason.startswith("circuit breaker:"):
        fail(reason, code=1)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line on stderr and exit with ``code``."""
    sys.stderr.write(f"error: {clean(message)}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def os_error_line(exc: OSError) -> str:
    """One line for an OS error, naming the path it happened on."""
    what = exc.strerror or type(exc).__name__
    paths = [p for p in (exc.filename, exc.filename2) if p is not None]
    where = " -> ".join(os.fsdecode(p) if isinstance(p, bytes) else str(p) for p in paths)
    return f"{where}: {what}" if where else what


def _refuse_undecodable(kwargs: dict[str, Any]) -> None:
    """Refuse (exit 2, naming the option) a text or path argument that is not valid UTF-8."""
    for name, value in kwargs.items():
        if isinstance(value, (str, os.PathLike)):
            text = os.fspath(value)
            if not isinstance(text, str):
                continue
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                shown = text.encode("utf-8", "surrogateescape").decode("ascii",
                                                                      "backslashreplace")
                fail(f"--{name.replace('_', '-')} {shown!r}: not valid UTF-8 text")


def command(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command: stdout protected while it runs; a user error (CapevolveError, OSError,
    a non-UTF-8 argument) is one line, exit 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = kwargs.get("ctx")
        if getattr(ctx, "invoked_subcommand", None) is not None:
            return fn(*args, **kwargs)  # a group's callback: the subcommand protects stdout
        _protect_stdout()
        try:
            _refuse_undecodable(kwargs)
            with otel.command_span(fn.__name__):
                return fn(*args, **kwargs)
        except CapevolveError as exc:
            fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except OSError as exc:
            fail(os_error_line(exc))
        except KeyboardInterrupt as exc:  # Interrupted says how many rows are on disk
            fail(str(exc) if isinstance(exc, Interrupted) else "interrupted", code=130)
        finally:
            otel.flush()
            _restore_stdout()

    return wrapper


def fmt_mean(mean: float | None, stderr: float | None) -> str:
    """``0.675 ± 0.072``, or "not measured" when nothing was scored."""
    if mean is None:
        return "not measured"
    return f"{mean:.3f} ± {stderr:.3f}" if stderr is not None else f"{mean:.3f}"


def stop_line(stop: StopParse | None) -> str | None:
    """How the stop condition parsed: its predicates and every unparsed clause."""
    if not stop or not stop.text:
        return None
    means = "; ".join(p.means for p in stop.predicates) or "nothing"
    unparsed = (f"; NOT PARSED: {'; '.join(repr(u) for u in stop.unparsed)}"
                if stop.unparsed else "")
    return f"stop condition parsed as: {means}{unparsed}"
