"""A head-to-head benchmark suite of DP synthesizers (issue 30; run by hand):
``python -m benchmarks.suite [--quick]``. See ``__main__.py``."""
