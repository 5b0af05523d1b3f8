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


def _section(start: str, end: str) -> str:
    """The README's text from ``start`` up to the next ``end``."""
    begin = TEXT.index(start)
    return TEXT[begin:TEXT.index(end, begin + len(start))]


def test_the_command_line_paragraph_names_every_command_and_benchmark():
    """Derived from the parser, so a new command or benchmark cannot be left out."""
    import argparse

    from jetbench.cli import build_parser

    def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    commands = choices(build_parser())
    benchmarks = next(a.choices for a in commands["bench"]._actions if a.dest == "name")
    paragraph = _section("Command line: ", "\n\n")
    assert set(commands) >= {"demo", "lab", "bench", "nexmark", "version"}
    missing = [f"jetbench {c}" for c in commands if f"`jetbench {c}" not in paragraph]
    assert not missing, f"the README's command-line paragraph misses {missing}"
    bench = re.search(r"`jetbench bench\s+([\w|-]+)", paragraph)
    assert bench and set(bench.group(1).split("|")) == set(benchmarks), (bench, sorted(benchmarks))


def test_the_compiled_engine_paragraph_lists_every_compiled_module():
    from jetbench.core.compiled import COMPILED_MODULES

    section = _section("The engine's hot modules (", "\n\n")
    missing = [m for m in COMPILED_MODULES
               if f"`{m.split('.')[1]}`" not in section or f"`jetbench/{m.split('.')[0]}`" not in section]
    assert not missing, f"the README's compiled-modules list misses {missing}"


def test_the_set_up_list_is_one_list():
    start = "Both commands first run `scripts/setup.sh`, which:\n\n"
    steps = _section(start, "\nThe set-up is idempotent")[len(start):]
    items = [line for line in steps.splitlines() if line.startswith("- ")]
    assert len(items) >= 4 and "\n\n" not in steps.strip(), "a blank line splits the set-up list in two"
