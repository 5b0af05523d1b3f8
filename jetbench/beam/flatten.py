"""Beam's Flatten as a vertex with one inbound ordinal per input PCollection.

The translation's coder phase gives every input the output's coder, so chunks pass through as
they are (split into keyed pairs when the consumer groups). It keeps no state: at a snapshot
barrier it hands over what it has pending first.
"""

from __future__ import annotations

from typing import Any

from ..core.inbox import Inbox
from ..core.processor import Processor
from .routes import PCollectionRoutes, PendingOutput

__all__ = ["FlattenP"]


class FlattenP(Processor):
    """Forwards every chunk of every input to the consumers of the output PCollection."""

    def __init__(self, output_pcoll: str, routes: PCollectionRoutes):
        self.output_pcoll = output_pcoll
        self.routes = routes
        self._pending = PendingOutput()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        pending = self._pending
        while inbox:
            if not pending.flush(self.outbox):
                return
            chunk: Any = inbox.poll()
            pending.extend(self.routes.items(self.output_pcoll, chunk))
        pending.flush(self.outbox)

    def try_process(self) -> bool:
        return self._pending.flush(self.outbox)

    def complete(self) -> bool:
        return self._pending.flush(self.outbox)

    def save_to_snapshot(self) -> bool:
        """Nothing to save: what it has pending goes out before the barrier."""
        return self._pending.flush(self.outbox)
