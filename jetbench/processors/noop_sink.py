"""The no-op sink: discards every item."""

from __future__ import annotations

from ..core.inbox import Inbox
from ..core.processor import Processor


class NoopSinkP(Processor):
    """Discards every item."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()


def noop_sink() -> type[NoopSinkP]:
    """A sink that discards its input."""
    return NoopSinkP
