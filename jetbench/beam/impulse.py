"""Beam's Impulse as a jetbench source: one empty byte string in the global window.

Its vertex has one instance (``local_parallelism=1``): a second would impulse twice. In a job
with a processing guarantee its progress is what it still has to hand to its consumers (nothing
before it started, nothing once done), so a restore never impulses twice nor loses the impulse.
"""

from __future__ import annotations

from typing import ClassVar

from apache_beam.runners import common

from ..core.inbox import Inbox
from ..core.processor import Processor
from .routes import PCollectionRoutes, PendingOutput

__all__ = ["ImpulseP"]

_PROGRESS = "impulse"


class ImpulseP(Processor):
    """Emits Beam's encoded impulse element to every consumer of its PCollection."""

    snapshot_support: ClassVar[str] = "supported"

    def __init__(self, pcoll_id: str, routes: PCollectionRoutes):
        self.pcoll_id = pcoll_id
        self.routes = routes
        self._pending: PendingOutput | None = None

    def complete(self) -> bool:
        if self._pending is None:
            self._pending = PendingOutput()
            self._pending.extend(self.routes.items(self.pcoll_id, common.ENCODED_IMPULSE_VALUE))
        return self._pending.flush(self.outbox)

    def save_to_snapshot(self) -> bool:
        left = None if self._pending is None else self._pending.left()
        return self.outbox.offer_to_snapshot(_PROGRESS, left)

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        for _, left in inbox.take():
            if left is not None:
                self._pending = PendingOutput()
                self._pending.extend(left)
