"""pytest's doctest collection under the compiled engine (see `jetbench.core.compiled`).

Compiled, ``jetbench.core.queues`` (or any module of `COMPILED_MODULES`, in core, processors or
experiments) is loaded from ``queues.cpython-*.so`` while pytest collects
``queues.py``; pytest refuses that mismatch unless told the module may come from elsewhere. The
doctests it then finds in a compiled module run against the compiled code; the pure pass of
``scripts/test.sh`` runs them all interpreted.
"""

import os

from jetbench.core.compiled import build_info

if build_info().kind != "pure":
    os.environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
