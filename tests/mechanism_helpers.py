"""Helpers shared by the mechanisms' tests."""

from __future__ import annotations


class Untouchable:
    """Stands in for data: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"data was read ({name}) before the parameters were checked")
