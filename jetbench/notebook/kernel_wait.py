"""Waiting for a job in a Jupyter kernel without going deaf to its widgets.

Jupyter hands a kernel's messages to its main thread one at a time: while a cell runs (for
instance waits in ``job.join()`` or ``jetbench.run()``, or Run All has more cells queued) the
dashboard's messages (Cancel, the idle sliders) wait behind it, and the job runs to its end. The
waiter registered with `jetbench.core.job_handle.register_waiter` (see `wait_for_job`) waits instead in
short slices (`SLICE_S`) and, between two slices, takes the messages that arrived for the main
shell (`KernelPump`): widget (comm) messages are handled at once, as the kernel would when idle;
anything else (the next cells' execute requests, completions...) is kept, in order, and handed
back to the kernel when the wait ends, before anything that arrives later, so it runs after the
cell as it would have.

This reads ipykernel's own queue and needs ipykernel 7 (its shell channel thread forwards the
main shell's messages over an in-process socket; ``Kernel.shell_main`` handles one).
`jupyter-ui-poll` does this for ipykernel 6 through ``Kernel.do_one_iteration``, which ipykernel 7
no longer has (there it silently does nothing). Elsewhere (another kernel, a wait on a thread
other than the main one, a wait inside a widget's own handler) the wait is a plain one, and a
dashboard whose command gets no acknowledgement says that the kernel is busy instead of
pretending.

>>> KernelPump.here() is None  # not in a kernel
True
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: How long one slice of a wait in a kernel lasts: the most a dashboard command waits to be read.
SLICE_S = 0.05
#: The messages handled during a wait: what widgets send.
COMM_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})

_state = threading.local()


def kernel_here() -> Any:
    """The running ipykernel ``Kernel`` if this is the main thread of one, else None."""
    if threading.current_thread() is not threading.main_thread() or "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.kernelapp import IPKernelApp
    except ImportError:  # pragma: no cover - a broken ipykernel
        return None
    if not IPKernelApp.initialized():
        return None
    return getattr(IPKernelApp.instance(), "kernel", None)


class KernelPump:
    """Handles the main shell's pending widget messages while the main thread is busy in a cell.

    `pump` reads every message waiting for the main shell, handles the comm ones and keeps the
    others; `release` gives the kept ones back to the kernel, in their order. Use it only on the
    kernel's main thread (`here` returns one only there).
    """

    def __init__(self, kernel: Any, socket: Any, stream: Any = None):
        self.kernel = kernel
        self.socket = socket
        #: the kernel's ZMQStream on ``socket``: kept messages go back through its callback
        self.stream = stream
        self.deferred: list[Any] = []
        #: widget messages handled (for tests and the report)
        self.handled = 0
        self.errors = 0

    @classmethod
    def here(cls) -> KernelPump | None:
        """A pump for this kernel, or None where none can work (see the module's docstring)."""
        kernel = kernel_here()
        if kernel is None or getattr(_state, "pumping", False):
            return None
        if not inspect.iscoroutinefunction(getattr(kernel, "shell_main", None)) or kernel.session is None:
            return None  # not ipykernel 7
        channel = getattr(kernel, "shell_channel_thread", None)
        if channel is not None:  # messages for the main shell come through an inproc socket pair
            pair = channel.manager.get_shell_channel_to_subshell_pair(None)
            socket, stream = pair.to_socket, getattr(pair, "to_stream", None)
        elif kernel.shell_stream is not None:  # no shell channel thread: straight from the router
            socket, stream = kernel.shell_stream.socket, kernel.shell_stream
        else:
            return None
        return cls(kernel, socket, stream)

    def pump(self) -> int:
        """Read every waiting message; handle the widget ones now, keep the rest. Returns the
        number handled."""
        import zmq

        session = self.kernel.session
        handled = 0
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return handled
            try:
                idents, rest = session.feed_identities(frames, copy=False)
                # a peek: content=False records no signature, so the kernel can read it again later
                header = session.deserialize(rest, content=False, copy=False)["header"]
                kind = header.get("msg_type")
            except Exception:
                kind = None
            # a comm message here is for the main shell whatever subshell its header names:
            # ipykernel routes a comm's messages to where the comm was made (JupyterLab 4.6
            # sends them with the id of a subshell of its own)
            if kind not in COMM_TYPES:
                self.deferred.append(frames)
                continue
            self._handle(idents, rest)
            handled += 1

    def _handle(self, idents: Any, rest: Any) -> None:
        """Handle one comm message as ``Kernel.dispatch_shell`` would, without disturbing the
        cell's parent message.

        Its busy and idle statuses are published as the kernel does: the widget front end counts
        a trait update as pending until the idle status of its message arrives, and sends no
        further update until then. The idle one also reads, to the front end, as the kernel's
        state: a busy status for the cell follows at once (the cell is still running)."""
        kernel = self.kernel
        saved = getattr(kernel, "_shell_context", None)  # what threads of the cell print under

        def handle() -> None:
            msg = kernel.session.deserialize(rest, content=True, copy=False)
            handler = kernel.shell_handlers.get(msg["header"]["msg_type"])
            kernel.set_parent(idents, msg, channel="shell")
            kernel._publish_status("busy", "shell")
            try:
                if handler is not None:
                    result = handler(kernel.shell_stream, idents, msg)
                    if inspect.isawaitable(result):  # not so in ipykernel 7 (comm handlers are plain)
                        close = getattr(result, "close", None)
                        if close is not None:
                            close()
            finally:
                kernel._publish_status("idle", "shell")

        try:
            contextvars.copy_context().run(handle)  # the parent set for it stays in that context
            self.handled += 1
        except Exception as exc:  # a widget's handler failed: the kernel would log it and go on
            self.errors += 1
            kernel.log.error("jetbench: a widget message failed during a wait: %r", exc)
        finally:
            if saved is not None:
                kernel._shell_context = saved
            kernel._publish_status("busy", "shell")  # under the cell's parent: still running

    def release(self) -> None:
        """Give the kept messages back to the kernel, in order, behind any it had already read
        and ahead of any that come later.

        Each goes through the kernel's own stream callback, as if read from the socket now. The
        kernel may have read the next cell's message before this wait began (Run All sends them
        all at once); that message then takes the callback's path to the shell's lock (a task
        that starts a task, in ipykernel 7), and a message handed straight to ``shell_main`` would
        reach the lock first and run before it. Through the same path, asyncio's first-in
        first-out order keeps them in the order they came."""
        deferred, self.deferred = self.deferred, []
        if not deferred:
            return
        stream = self.stream
        callback = getattr(stream, "_recv_callback", None)
        run = getattr(stream, "_run_callback", None)
        if callback is not None and run is not None:
            for frames in deferred:
                run(callback, frames)
            return
        try:  # a stream of another make: straight to the shell (later messages still queue behind)
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = asyncio.get_event_loop()
        for frames in deferred:
            loop.create_task(self.kernel.shell_main(None, frames))


def wait_slices(wait: Callable[[float | None], bool], timeout: float | None, slice_s: float,
                between: Callable[[], None]) -> bool:
    """``wait(timeout)`` in slices of at most ``slice_s`` seconds, calling ``between()`` after
    each slice that did not end it; True if the job ended."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = slice_s
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return wait(0)
            step = min(step, left)
        if wait(step):
            return True
        between()


def wait_for_job(job: Any, wait: Callable[[float | None], bool], timeout: float | None,
                 progress: bool | None) -> bool:
    """The waiter `Job.join` uses (registered by ``jetbench.runners``): in a kernel's main thread
    it lets widget messages through and shows the progress line; in a terminal it shows a tqdm
    bar; elsewhere, or with both off, it is ``wait(timeout)``."""
    from .progress import reporter_for

    pump = KernelPump.here()
    reporter = reporter_for(job, progress, in_kernel=kernel_here() is not None)
    if pump is None and reporter is None:
        return wait(timeout)
    finished = False
    _state.pumping = True
    try:
        def between() -> None:
            if pump is not None:
                pump.pump()
            if reporter is not None:
                reporter.tick()

        slice_s = SLICE_S if pump is not None else min(SLICE_S * 4, reporter.interval_s if reporter else 1.0)
        finished = wait_slices(wait, timeout, slice_s, between)
        return finished
    finally:
        _state.pumping = False
        if pump is not None:
            pump.release()
        if reporter is not None:
            reporter.close(finished)
