"""A notebook cell's code named as IPython names it in a traceback: ``Cell In[5]``, not the
kernel's temporary file (``/tmp/ipykernel_<pid>/<hash>.py``). jetbench's error reports
(`jetbench.core.errors.location`) use it once ``jetbench/__init__.py`` has registered it.

IPython is asked only when it is already loaded (in a kernel or an IPython shell); this module
never imports it.

>>> cell_label("/no/such/file.py") is None
True
"""

from __future__ import annotations

import sys


def cell_label(filename: str) -> str | None:
    """``"Cell In[5]"`` when ``filename`` is the code of a cell of the running IPython (its
    compiler's cache maps the file to the execution count), else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    shell = ipython.get_ipython()
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is None:
        return None
    named = format_code_name(filename)
    return " ".join(named) if named else None
