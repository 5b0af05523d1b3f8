"""The runners' errors: what `jetbench.run` and every runner (local, Spark) raise for a job they
cannot run or an option they do not take."""

from __future__ import annotations

from .core.errors import JetbenchError


class RunnerError(JetbenchError):
    """A runner cannot run this job shape; the message names the vertex or stage at fault."""


class RunnerOptionError(RunnerError, TypeError):
    """A keyword the chosen runner does not take (a `TypeError` too, as Python's own is)."""

    def __init__(self, runner: str, keyword: str, accepted: tuple[str, ...]):
        self.runner = runner
        self.keyword = keyword
        self.accepted = accepted
        super().__init__(f"the {runner} runner takes no option {keyword!r}; it takes {', '.join(accepted)}")


__all__ = ["RunnerError", "RunnerOptionError"]
