"""A notebook cell's code named as IPython names it in a traceback: ``Cell In[5]``, not the
kernel's temporary file (``/tmp/ipykernel_<pid>/<hash>.py``). jetbench's error reports
(`jetbench.core.errors.location`) use it once ``jetbench/__init__.py`` has registered it.

IPython is asked only when it is already loaded (in a kernel or an IPython shell); this module
never imports it.

>>> cell_label("/no/such/file.py") is None
True
>>> in_colour() if "IPython" not in sys.modules else False
False
"""

from __future__ import annotations

import sys


def _shell() -> object | None:
    ipython = sys.modules.get("IPython")
    return None if ipython is None else ipython.get_ipython()


def in_colour() -> bool:
    """Whether the running IPython colours its tracebacks (``%colors`` other than NoColor)."""
    shell = _shell()
    return shell is not None and str(getattr(shell, "colors", "nocolor")).lower() != "nocolor"


def cell_label(filename: str) -> str | None:
    """``"Cell In[5]"`` when ``filename`` is the code of a cell of the running IPython (its
    compiler's cache maps the file to the execution count), else None."""
    shell = _shell()
    format_code_name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if format_code_name is None:
        return None
    named = format_code_name(filename)
    return " ".join(named) if named else None
