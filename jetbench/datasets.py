"""Small synthetic datasets generated on the spot (no downloads), deterministic per seed."""

from __future__ import annotations

import itertools
import random

_SYLLABLES = [
    "ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "vel", "dor", "an", "is", "qu", "zen", "bra",
    "tor", "el", "um", "fi", "gar", "ho", "ju", "ler", "mon", "sta", "tri", "ven", "wo", "xi", "yor",
]  # fmt: skip


def vocabulary(size: int, seed: int = 7) -> list[str]:
    """``size`` distinct made-up words of 1-4 syllables, most frequent first."""
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def corpus(lines: int = 200_000, vocabulary_size: int = 20_000, seed: int = 42, zipf_s: float = 1.1) -> list[str]:
    """Lines of text whose word frequencies follow Zipf's law (exponent ``zipf_s``).

    Words are mixed-case and separated by spaces and punctuation, so a word count must
    lower-case and split on non-word characters, as `jetbench.wordcount.tokenize` does.

    >>> corpus(2, vocabulary_size=50, seed=1)[0][:20]  # doctest: +SKIP
    'Kalo mine, ru ta ...'
    >>> len(corpus(3))
    3
    """
    rng = random.Random(seed)
    words = vocabulary(vocabulary_size, seed)
    cum_weights = list(itertools.accumulate(1.0 / (rank**zipf_s) for rank in range(1, vocabulary_size + 1)))
    separators = [" "] * 12 + [", ", ". ", "; ", " - ", "! "]
    out = []
    for _ in range(lines):
        n = rng.randint(4, 16)
        picked = rng.choices(words, cum_weights=cum_weights, k=n)
        seps = rng.choices(separators, k=n)
        text = "".join(w + s for w, s in zip(picked, seps, strict=True)).strip()
        out.append(text[:1].upper() + text[1:])
    return out
