"""capevolve._engine.contain: exits of user code become UserExit inside a contained call
and stay real exits everywhere else (each case in a real subprocess)."""

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest

from capevolve._engine.contain import UserExit, contained


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60)


def _raise_interrupt():
    raise KeyboardInterrupt


EXITS = {"sys.exit": lambda: sys.exit(5), "os._exit": lambda: os._exit(6),
         "KeyboardInterrupt": _raise_interrupt}


@pytest.mark.parametrize("name", sorted(EXITS))
def test_exits_inside_a_contained_call_raise_user_exit(name):
    exit_now = EXITS[name]

    def target():
        exit_now()

    async def async_target():
        exit_now()

    with pytest.raises(UserExit, match="target"):
        contained(target, "target")()
    with pytest.raises(UserExit, match="target"):
        asyncio.run(contained(async_target, "target")())
    assert asyncio.iscoroutinefunction(contained(async_target, "target"))


def test_os_exit_outside_a_contained_call_still_exits_for_real():
    """Once os._exit is replaced, capevolve's own exits (and a thread user code started)
    still end the process with their status."""
    result = _python("""
        import os, threading
        from capevolve._engine.contain import contained
        contained(lambda: None, "noop")()  # installs the replacement
        def from_a_thread():
            os._exit(9)
        def target():
            threading.Thread(target=from_a_thread).start()
            threading.Event().wait(30)
        contained(target, "run_target")()
        os._exit(1)
    """)
    assert result.returncode == 9, result.stderr


def test_a_fork_inside_a_contained_call_ends_when_the_call_returns():
    """Only the process that made the call returns from it; the forked copy exits 0 at the
    end of the call, before any code after the call runs in it."""
    result = _python("""
        import os, sys
        from capevolve._engine.contain import contained
        def target():
            return os.fork()
        child = contained(target, "run_target")()
        assert child != 0, "the forked copy got past the call"
        _, status = os.waitpid(child, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
