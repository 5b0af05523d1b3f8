"""Control items that travel through queues beside data: watermarks and the DONE marker.

Data moves through queues as plain lists (chunks); control items travel as single objects
between chunks, so one ``type(entry) is list`` check covers a whole chunk.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

#: Timestamp of the idle marker: a watermark this large means "this input is idle".
IDLE_TIMESTAMP = sys.maxsize


@dataclass(frozen=True, slots=True)
class Watermark:
    """An event-time watermark: no later item on this stream has a timestamp below ``timestamp``."""

    timestamp: int

    @property
    def is_idle_marker(self) -> bool:
        return self.timestamp == IDLE_TIMESTAMP

    def __repr__(self) -> str:
        return "Watermark(IDLE)" if self.is_idle_marker else f"Watermark({self.timestamp})"


#: Sent by a producer into a queue when it will offer nothing more.
IDLE_MESSAGE = Watermark(IDLE_TIMESTAMP)


class _Done:
    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"

    def __reduce__(self) -> str:
        return "DONE"


#: The end-of-stream marker a tasklet sends down every outbound queue once its processor completes.
DONE = _Done()
