"""How jetbench's errors read where users meet them. In a real kernel (nbclient): a cell is named
as IPython names it (``Cell In[2], line 2``, never the kernel's temporary file), a `JobError`'s
failing inlined step carries its caret, and every other `JetbenchError` starts at the user's
cell line, then the message (not at IPython's ``run_code`` frame, not in jetbench's own files),
coloured as IPython colours its own tracebacks.
In a terminal: the failing inlined step's frame is printed once, and IPython is never imported."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    "import jetbench as jb",
    """\
p = jb.Pipeline()
p.read_from(jb.sources.items([1, 0])).map(lambda x: 10 // x).write_to(jb.sinks.collect())
jb.run(p, progress=False)""",
    """\
q = jb.Pipeline()
q.read_from(jb.sources.items([1])).window(jb.window.tumbling(10))""",
    """\
r = jb.Pipeline()
r.read_from(jb.sources.items([1])).write_to(jb.sinks.collect())
jb.run(r, bogus=1)""",
    """\
s = jb.Pipeline()
s.read_from(jb.sources.files("/nonexistent/dir/*.txt")).write_to(jb.sinks.collect())
jb.run(s, progress=False)""",
    """%colors nocolor
jb.run(r, bogus=1)""",
]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def errors(tmp_path_factory) -> dict[int, tuple[str, str]]:
    """Each failed cell's execution count: (ename, the traceback's text as the front end shows it,
    colours aside). The colours are checked here: IPython's own (exception type red, "Cell"
    cyan, "In[n], line n" green), none after ``%colors nocolor``."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("errors"))}}).execute()
    raw = {cell.execution_count: (out.ename, "\n".join(out.traceback))
           for cell in nb.cells for out in cell.outputs if out.output_type == "error"}
    assert "\x1b[31mjetbench.RunnerOptionError\x1b[39m: " in raw[4][1], raw[4][1]
    assert "\x1b[36mCell\x1b[39m \x1b[32mIn[4], line 3\x1b[39m, in <module>" in raw[4][1], raw[4][1]
    assert "\x1b[31mZeroDivisionError\x1b[39m" in raw[2][1], raw[2][1]
    assert raw[6][0] == "RunnerOptionError" and not ANSI.search(raw[6][1]), raw[6][1]
    return {count: (ename, ANSI.sub("", text)) for count, (ename, text) in raw.items()}


def test_a_job_error_names_the_cell_and_carets_the_inlined_step(errors):
    ename, text = errors[2]
    assert ename == "JobError"
    assert "ipykernel_" not in text and ".py:" not in text, text
    lines = text.splitlines()
    assert "  in <lambda>, Cell In[2], line 2" in lines, text  # the message
    frame = lines.index("  Cell In[2], line 2, in <lambda>")  # the user's frame, once
    assert lines.count("  Cell In[2], line 2, in <lambda>") == 1, text
    source, caret = lines[frame + 1], lines[frame + 2]
    assert source.strip().startswith("p.read_from(") and caret.strip() == "~~~^^~~", text
    assert caret.index("~") == source.index("10 // x"), text  # under the failing expression
    assert lines[-1] == "ZeroDivisionError: integer division or modulo by zero"


@pytest.mark.parametrize(("count", "ename", "line", "message"), [
    (3, "PipelineError", "q.read_from(jb.sources.items([1])).window(jb.window.tumbling(10))",
     "jetbench.PipelineError: stage 'items' has no timestamps"),
    (4, "RunnerOptionError", "jb.run(r, bogus=1)",
     "jetbench.RunnerOptionError: the local runner takes no option 'bogus'"),
    (5, "JetbenchError", 's.read_from(jb.sources.files("/nonexistent/dir/*.txt")).write_to(jb.sinks.collect())',
     "jetbench.JetbenchError: files source: no file matches '/nonexistent/dir/*.txt'"),
], ids=["PipelineError", "RunnerOptionError", "files-source"])
def test_other_errors_start_at_the_users_line_then_the_message(errors, count, ename, line, message):
    got, text = errors[count]
    assert got == ename
    lines = text.splitlines()
    assert lines[:3] == ["Traceback (most recent call last):", f"  Cell In[{count}], line {2 if count != 4 else 3}, in <module>",
                         f"    {line}"], text
    assert lines[-1].startswith(message), text
    assert "interactiveshell" not in text and "File " not in text, text  # no IPython or jetbench frame


def test_in_a_terminal_the_inlined_steps_frame_is_printed_once_and_ipython_is_not_imported(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""\
        import sys
        import jetbench as jb
        p = jb.Pipeline()
        p.read_from(jb.sources.items([1, 2, 0])).map(lambda x: 10 // x).write_to(jb.sinks.collect())
        try:
            jb.run(p, progress=False)
        except jb.JobError as e:
            print("IPython" in sys.modules, e.user_frame.lineno, file=sys.stderr)
            raise
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "JETBENCH_PROGRESS": "0"})
    err = done.stderr
    assert done.returncode == 1 and "False 4" in err, err
    cause = err.split("The above exception was the direct cause")[0]
    assert cause.count(f'File "{script}", line 4, in <lambda>') == 1, cause
    assert "~~~^^~~" in cause, cause
    assert f"in <lambda>, {script}:4" in err  # outside IPython a file is named by its path
