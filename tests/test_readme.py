"""Every Python block in the README runs as written and prints what the README shows under it.

The README follows each ```python block with a ```text block holding its output; the output is
compared as doctest compares it, with ``...`` matching what varies between runs (timings) and
runs of spaces counting as one.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text()
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```\n", flags=re.S | re.M)
#: a Python block and the text block right under it: (line number, code, expected output)
EXAMPLES = [
    (TEXT.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
    for m in re.finditer(r"^```python\n(.*?)^```\n```text\n(.*?)^```\n", TEXT, flags=re.S | re.M)
]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_every_python_block_shows_its_output():
    assert len(EXAMPLES) == len(PYTHON_BLOCK.findall(TEXT)) >= 3


@pytest.mark.parametrize(("line", "code", "want"), EXAMPLES, ids=[f"README.md:{e[0]}" for e in EXAMPLES])
def test_readme_block_prints_what_the_readme_shows(line, code, want, capsys):
    exec(compile(code, f"README.md, block at line {line}", "exec"), {"__name__": "readme"})
    got = capsys.readouterr().out
    checker = doctest.OutputChecker()
    if not checker.check_output(want, got, FLAGS):
        pytest.fail(checker.output_difference(doctest.Example(code, want), got, FLAGS), pytrace=False)


def test_the_comparison_is_not_vacuous():
    """A wrong number fails even where ``...`` stands for timings."""
    checker = doctest.OutputChecker()
    want = "sink#0  0  END  10  0  1  ...\n"
    assert checker.check_output(want, "sink#0 0 END 10 0 1 0.0 0\n", FLAGS)
    assert not checker.check_output(want, "sink#0 0 END 9 0 1 0.0 0\n", FLAGS)
