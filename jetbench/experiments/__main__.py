"""Run one idle-sweep point: ``python -m jetbench.experiments '{"rate": 1000, ...}'``."""

import sys

from .point import main

sys.exit(main())
