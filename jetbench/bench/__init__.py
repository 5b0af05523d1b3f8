"""Benchmarks behind ``jetbench bench``: each runs a jetbench job and a plain-Python baseline
in the same process, checks the results are equal, and reports items/s and their ratio.

The figures, and the stand-alone measurement scripts that are not part of the package, live in
the checkout's ``benchmarks/`` folder (its README says which is which)."""
