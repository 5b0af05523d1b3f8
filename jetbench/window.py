"""Window definitions for ``Stage.window``; event time is in milliseconds.

>>> from jetbench.window import tumbling, sliding, session
>>> tumbling(1000), sliding(1000, 250), session(300)
(tumbling(1000), sliding(1000, 250), session(300))
"""

from .processors.window_definition import WindowDefinition, WindowResult, session, sliding, tumbling

__all__ = ["WindowDefinition", "WindowResult", "session", "sliding", "tumbling"]
