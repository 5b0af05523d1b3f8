"""Beam's Impulse as a jetbench source: one empty byte string in the global window.

Its vertex has one instance (``local_parallelism=1``): a second would impulse twice.
"""

from __future__ import annotations

from apache_beam.runners import common

from ..core.processor import Processor
from .routes import PCollectionRoutes, PendingOutput

__all__ = ["ImpulseP"]


class ImpulseP(Processor):
    """Emits Beam's encoded impulse element to every consumer of its PCollection."""

    def __init__(self, pcoll_id: str, routes: PCollectionRoutes):
        self.pcoll_id = pcoll_id
        self.routes = routes
        self._pending: PendingOutput | None = None

    def complete(self) -> bool:
        if self._pending is None:
            self._pending = PendingOutput()
            self._pending.extend(self.routes.items(self.pcoll_id, common.ENCODED_IMPULSE_VALUE))
        return self._pending.flush(self.outbox)
