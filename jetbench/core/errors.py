"""Exception types raised by jetbench. Every error a user can meet derives from `JetbenchError`."""

from __future__ import annotations


class JetbenchError(Exception):
    """Base class of every jetbench error."""


class DagError(JetbenchError, ValueError):
    """The DAG is malformed; the message names the vertex or edge at fault."""


class JobError(JetbenchError):
    """A job failed. The message names the vertex and instance; ``__cause__`` is the original error."""

    def __init__(self, message: str, vertex: str | None = None, instance: int | None = None):
        super().__init__(message)
        self.vertex = vertex
        self.instance = instance


class JobCancelled(JobError):
    """The job was cancelled before it completed."""


class JobTimeout(JetbenchError, TimeoutError):
    """``Job.join(timeout)`` ran out of time; the job keeps running (``run()`` cancels it)."""
