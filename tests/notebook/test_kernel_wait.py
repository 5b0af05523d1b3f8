"""Waiting in a real Jupyter kernel lets widget messages through (`jetbench.notebook.kernel_wait`).

A kernel started with jupyter_client plays the front end: one cell opens a dashboard (its comm),
the next blocks in ``job.join()`` with a third cell queued behind it, as Run All does; then
comm messages are sent as the browser would send them. The dashboard's idle bound and Cancel act
while the cell still waits, and the queued cell runs after it, as it would have.
"""

from __future__ import annotations

import queue
import textwrap
import time

import pytest

SETUP = textwrap.dedent(
    """
    import threading, jetbench
    from jetbench import ExecutionService, Pipeline, sources, sinks
    p = Pipeline()
    p.read_from(sources.generator(2000)).map(lambda x: x).write_to(sinks.collect())
    service = ExecutionService(cooperative_threads=2, min_idle_us=25, max_idle_us=500)
    job = service.submit(p, name="waited")
    dash = job.dashboard(interval_s=0.2)
    dash
    """
)


@pytest.fixture
def kernel():
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"], env={"JETBENCH_PROGRESS": "0"})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _execute_replies(kc, n: int) -> list[str]:
    """The requests the next ``n`` execute replies on the shell channel answer, in their order
    (a kernel_info reply left from `wait_for_ready`, which asks again when a reply is slow, is
    not one of them)."""
    replies = []
    while len(replies) < n:
        msg = kc.get_shell_msg(timeout=10)
        if msg["msg_type"] == "execute_reply":
            replies.append(msg["parent_header"]["msg_id"])
    return replies


def _until(kc, predicate, timeout: float = 30.0) -> list[dict]:
    """iopub messages up to and including the first for which ``predicate`` holds."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            shown = [(m["msg_type"], m["content"].get("execution_state") or m["content"].get("ename"),
                      m["parent_header"].get("msg_type")) for m in seen if m["msg_type"] != "comm_msg"]
            raise AssertionError(f"not seen within {timeout} s; saw {len(seen)} messages, besides comm_msg: {shown}") from None
        seen.append(msg)
        if predicate(msg):
            return seen


def _idle(msg_id):
    return lambda m: (m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                      and m["parent_header"].get("msg_id") == msg_id)


def _send_comm(kc, comm_id: str, data: dict, subshell_id: str | None = None) -> str:
    msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
    if subshell_id is not None:
        msg["header"]["subshell_id"] = subshell_id
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def _create_subshell(kc) -> str:
    msg = kc.session.msg("create_subshell_request", {})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    return reply["content"]["subshell_id"]


def _stdout(messages, msg_id) -> str:
    return "".join(m["content"]["text"] for m in messages
                   if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id)


@pytest.mark.slow
def test_dashboard_commands_act_while_a_cell_waits_in_join(kernel):
    kc = kernel
    setup = kc.execute(SETUP)
    seen = _until(kc, _idle(setup), 60)
    opens = [m for m in seen if m["msg_type"] == "comm_open"
             and m["content"]["data"]["state"].get("_model_name") == "AnyModel"]
    assert opens, [m["msg_type"] for m in seen]
    comm_id = opens[-1]["content"]["comm_id"]

    # stop_on_error=False: the cancelled cell's error would otherwise abort the queued one
    waiting = kc.execute("job.join()", stop_on_error=False)
    queued = kc.execute("print('QUEUED', job.status.value, service.idle.min_idle_us, dash.min_idle_us)")
    _until(kc, lambda m: m["msg_type"] == "execute_input" and m["parent_header"].get("msg_id") == waiting)
    time.sleep(0.5)

    # the min idle slider: the kernel applies it and echoes the new value while the cell waits
    # JupyterLab 4.6 sends widget messages naming a subshell of its own: the kernel routes a comm's
    # message to the shell that last published on the comm, here the main one, blocked in the cell
    update = _send_comm(kc, comm_id, {"method": "update", "state": {"min_idle_us": 2000.0}, "buffer_paths": []},
                        subshell_id=_create_subshell(kc))
    seen = _until(kc, lambda m: m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == update
                  and "min_idle_us" in m["content"]["data"].get("state", {}))
    assert not any(_idle(waiting)(m) for m in seen)  # the waiting cell is still running
    # its idle status (the widget front end sends no further update until it has it)
    _until(kc, _idle(update), 10)

    # Cancel: the waiting cell ends with JobCancelled, acknowledged first
    cancel = _send_comm(kc, comm_id, {"method": "custom", "content": {"cmd": "cancel", "id": 7}})
    seen = _until(kc, _idle(waiting))
    acks = [m for m in seen if m["msg_type"] == "comm_msg" and m["parent_header"].get("msg_id") == cancel
            and m["content"]["data"].get("content") == {"ack": 7}]
    assert acks
    errors = [m for m in seen if m["msg_type"] == "error" and m["parent_header"].get("msg_id") == waiting]
    assert errors and errors[0]["content"]["ename"] == "JobCancelled"

    # the cell queued behind it ran after it, and saw what the controls did
    seen = _until(kc, _idle(queued))
    assert "QUEUED cancelled 2000.0 2000.0" in _stdout(seen, queued)
    assert _execute_replies(kc, 3) == [setup, waiting, queued]


RUN_ALL = [
    "order = []",
    "job.join(); order.append('waited')",
    "order.append('a')",
    "order.append('b')",
    "order.append('c')",
    "print('ORDER', order)",
]


@pytest.mark.slow
def test_run_all_keeps_the_cells_in_order_after_a_wait(kernel):
    """Run All sends every cell's request at once: the kernel has read the next one before the
    wait begins and the pump takes the rest; all must still run in their order."""
    kc = kernel
    setup = kc.execute(SETUP.replace("sources.generator(2000)", "sources.generator(2000, count=1000)"))
    _until(kc, _idle(setup), 60)
    ids = [kc.execute(code) for code in RUN_ALL]
    seen = _until(kc, _idle(ids[-1]), 60)
    assert "ORDER ['waited', 'a', 'b', 'c']" in _stdout(seen, ids[-1])
    assert _execute_replies(kc, len(ids) + 1) == [setup, *ids]
