"""Interrupting a wait for a job stops the job: no jetbench thread outlives ``run()`` or ``join()``.

With real signals: SIGINT sent to a script blocked in ``jetbench.run(p)`` on an endless source,
and ``interrupt_kernel()`` on a Jupyter kernel blocked in a cell; in-process, an exception
raised inside the wait (what a signal handler does) and ``run(timeout=)``.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import jetbench
from jetbench import ExecutionService, Pipeline, sinks, sources
from jetbench.core.errors import JobTimeout
from jetbench.core.job import JobStatus


def endless_pipeline() -> Pipeline:
    p = Pipeline()
    p.read_from(sources.generator(1000)).map(lambda x: x).write_to(sinks.collect())
    return p


def jetbench_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jetbench.")]


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


# -- in-process: an exception raised inside the wait ----------------------------------------------


@pytest.fixture(autouse=True)
def sigint_raises_keyboard_interrupt():
    """Ctrl-C as a terminal delivers it, whatever this process inherited: a shell runs a command
    put in the background without job control with SIGINT ignored, and Python then keeps it
    ignored, so no KeyboardInterrupt would come (the test runner launched that way)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _sigint_as_by_default() -> None:
    """In a child before it runs Python: SIGINT's default action, so Python turns it into
    KeyboardInterrupt, as in a script started from a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_main_thread_after(delay: float) -> threading.Timer:
    """Raise KeyboardInterrupt in the main thread after ``delay`` s, as Ctrl-C would (a real
    SIGINT through the process's handler)."""
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_sigint_during_join_cancels_the_job_and_ends_its_threads():
    job = ExecutionService(cooperative_threads=2, metrics_interval_s=0.05).submit(endless_pipeline())
    timer = _interrupt_main_thread_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            job.join(timeout=20)
    finally:
        timer.join()
        status = job.status
        job.stop(timeout=10)  # should the wait fail otherwise, no endless job outlives this test
    assert status is JobStatus.CANCELLED
    assert job.live_threads() == []
    assert jetbench_threads() == []


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_sigint_during_run_leaves_no_thread():
    timer = _interrupt_main_thread_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            jetbench.run(endless_pipeline(), timeout=20, cooperative_threads=2)
    finally:
        timer.join()
    assert jetbench_threads() == []


def test_run_timeout_cancels_the_job():
    """run() hands out no handle, so its JobTimeout cancels the job (join(timeout) does not)."""
    with pytest.raises(JobTimeout):
        jetbench.run(endless_pipeline(), timeout=0.2)
    assert jetbench_threads() == []


def test_join_timeout_leaves_the_job_running_for_its_holder():
    job = ExecutionService().submit(endless_pipeline())
    try:
        with pytest.raises(JobTimeout):
            job.join(timeout=0.1)
        assert job.status is JobStatus.RUNNING and job.live_threads()
    finally:
        assert job.stop(timeout=10)
    assert job.status is JobStatus.CANCELLED


def test_stop_reports_a_thread_that_does_not_end():
    """A blocking processor stuck in a call cannot be ended: stop() says so instead of hanging."""
    release = threading.Event()
    p = Pipeline()
    p.read_from(sources.items([1])).map(lambda x: release.wait(30)).write_to(sinks.collect())
    job = ExecutionService().submit(p)
    try:
        time.sleep(0.1)
        assert job.stop(timeout=0.2) is False
        assert job.live_threads()
        assert job.status is JobStatus.CANCELLED
    finally:
        release.set()
    assert wait_until(lambda: not job.live_threads(), 10)


# -- a script, stopped with a real SIGINT -------------------------------------------------------

SCRIPT = textwrap.dedent(
    """
    import threading
    import jetbench
    from jetbench import Pipeline, sources, sinks

    p = Pipeline()
    p.read_from(sources.generator(1000)).map(lambda x: x).write_to(sinks.collect())
    print("running", flush=True)
    try:
        jetbench.run(p, cooperative_threads=2)
    except KeyboardInterrupt:
        print("threads:", sorted(t.name for t in threading.enumerate()), flush=True)
        raise
    """
)


@pytest.mark.slow
def test_sigint_stops_a_script_blocked_in_run(tmp_path):
    script = tmp_path / "endless.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, preexec_fn=_sigint_as_by_default)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "running"
        time.sleep(0.5)  # the job is running, run() is waiting
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode != 0
    # the interrupt says what became of the job, and its traceback ends at jetbench's wait (no
    # frames of the waiter's slices or of threading's lock)
    assert err.rstrip().splitlines()[-1].startswith("KeyboardInterrupt: job 'job-"), err
    assert err.rstrip().endswith("was cancelled: the wait for it was interrupted"), err
    assert "threading.py" not in err and "kernel_wait" not in err, err
    threads_line = [line for line in out.splitlines() if line.startswith("threads:")]
    assert threads_line == ["threads: ['MainThread']"], out


# -- a Jupyter kernel, interrupted as the Stop button does ---------------------------------------


def _execute(kc, code: str, timeout: float) -> tuple[str, list[dict]]:
    """Run ``code``; return its status ('ok' / 'error') and its iopub messages."""
    msg_id = kc.execute(code)
    messages = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s to {code!r}") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = _shell_reply(kc, msg_id, timeout)
    return reply["content"]["status"], messages


def _shell_reply(kc, msg_id: str, timeout: float) -> dict:
    """The shell reply to request ``msg_id``, skipping replies to earlier requests (a second
    kernel_info reply from ``wait_for_ready`` may still be queued)."""
    deadline = time.monotonic() + timeout
    while True:
        reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def _stdout(messages: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


@pytest.mark.slow
@pytest.mark.parametrize("wait", ["run", "join"])
def test_interrupting_the_kernel_cancels_the_job(wait):
    jupyter_client = pytest.importorskip("jupyter_client")
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        setup = textwrap.dedent(
            """
            import threading, jetbench
            from jetbench import ExecutionService, Pipeline, sources, sinks
            p = Pipeline()
            p.read_from(sources.generator(1000)).map(lambda x: x).write_to(sinks.collect())
            svc = ExecutionService(cooperative_threads=2)
            jobs = []
            """
        )
        assert _execute(kc, setup, 60)[0] == "ok"
        if wait == "run":
            code = "jetbench.run(p, cooperative_threads=2)"
        else:
            code = "jobs.append(svc.submit(p)); jobs[0].join()"
        msg_id = kc.execute(code)
        # wait until the cell is busy in the wait, then press Stop
        deadline = time.monotonic() + 30
        busy = False
        while not busy and time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=30)
            busy = (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "busy")
        assert busy
        time.sleep(1.0)
        km.interrupt_kernel()
        reply = _shell_reply(kc, msg_id, 30)
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        check = textwrap.dedent(
            """
            print(sorted(t.name for t in threading.enumerate() if t.name.startswith("jetbench.")))
            print([j.status.value for j in jobs])
            """
        )
        # a request that reaches the kernel while it still aborts the queue behind the failed cell
        # is answered "aborted" (ipykernel's stop_on_error): ask again
        for _ in range(10):
            status, messages = _execute(kc, check, 30)
            if status != "aborted":
                break
            time.sleep(0.2)
        assert status == "ok"
        threads, statuses = _stdout(messages).splitlines()
        assert threads == "[]"
        assert statuses == ("[]" if wait == "run" else "['cancelled']")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
