"""The no-op sink: discards every item."""

from __future__ import annotations

from ..core.inbox import Inbox
from ..core.native import mypyc_attr
from ..core.processor import Processor
from .builder_kind import Kind


@mypyc_attr(allow_interpreted_subclasses=True)
class NoopSinkP(Processor):
    """Discards every item."""

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.clear()


def noop_sink() -> type[NoopSinkP]:
    """A sink that discards its input."""
    return NoopSinkP


BUILDER_KINDS = (
    Kind(id="noop", label="discard", category="sink", inputs=True, outputs=False, params=(),
         build=lambda p, f, ns: noop_sink(), code=lambda p, f: ("noop_sink()", {"from jetbench.processors import noop_sink"}),
         description="discards items", read=lambda s, r: {} if s is NoopSinkP else None),
)
