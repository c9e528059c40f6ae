"""The local engine's worker process: ``python -m capevolve._engine.child``.

Candidate code runs here, never in the driver. The driver writes one JSON request per line
on stdin (``init``, ``prepare``, ``exchange``) and reads one JSON reply per line on a
private channel (:mod:`capevolve._engine.channel`: whatever the agent prints cannot corrupt
the protocol). An exchange's reply carries the finished outcomes' keys, for the driver,
and the outcomes themselves as a payload line that the driver hands to a scorer process
unread. End of stdin (the driver closed it, or died) ends the process at once, and with it every
process candidate code forked or started in the worker's process group.
"""

from __future__ import annotations

import os
import signal
import socket

from capevolve._engine.channel import Replies, requests, run_child
from capevolve._engine.wire import dumps, job_from_wire, units_from_wire
from capevolve.errors import CapevolveError


async def _serve(replies: Replies) -> None:
    from capevolve._engine.worker import WorkerCore

    core: WorkerCore | None = None
    async for request, _ in requests():
        op = request.get("op")
        try:
            if op == "init":
                core = WorkerCore(request["project_root"], request["adapter_spec"],
                                  request["slots"], request["timeout_s"], request["retries"],
                                  worker_id=f"{request['name']}-{os.getpid()}",
                                  node_id=socket.gethostname(), isolation=request["isolation"])
                replies.send({"ok": True, "pid": os.getpid(), "worker_id": core.worker_id})
            elif op == "prepare" and core is not None:
                job = job_from_wire(request["job"])
                core.jobs.pop(job.eval_id, None)  # same eval id, maybe another run: replace
                core.prepare(job)
                replies.send({"ok": True})
            elif op == "exchange" and core is not None:
                outcomes = await core.exchange(request["eval_id"],
                                               units_from_wire(request["units"]),
                                               request["max_wait_s"], request.get("slots"))
                # the keys for the driver, the outcomes as a payload line only a scorer reads
                keys = [[o["task_id"], o["trial"]] for o in outcomes]
                replies.send({"ok": True, "keys": keys}, dumps(outcomes))
            else:
                replies.send({"error": f"unexpected request {op!r}"})
        except CapevolveError as exc:
            replies.send({"error": str(exc)})
        except KeyError as exc:
            replies.send({"error": f"KeyError: {exc}"})


def main() -> None:
    """Keep the reply channel private, then serve requests until stdin closes."""
    run_child(_serve, "worker", at_exit=_end_group)


def _end_group() -> None:
    """SIGTERM every other process of this worker's group (what candidate code forked or
    started), also when the driver died and cannot kill the group itself."""
    if os.getpgid(0) != os.getpid():
        return  # not a group leader (started by hand): the group is not ours
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(0, signal.SIGTERM)
    except OSError:
        pass


if __name__ == "__main__":
    main()
