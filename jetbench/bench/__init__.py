"""Benchmarks behind ``jetbench bench``: each runs a jetbench job and a plain-Python baseline
in the same process, checks the results are equal, and reports items/s and their ratio."""
