"""The one memory guard: sizes from public facts, refused with the size, limit and option."""

from __future__ import annotations

import pytest

from dpgm.errors import ModelTooLargeError, command_line_spelling
from dpgm.memory import (
    DEFAULT_MAX_MEMORY,
    cells,
    check_cells,
    check_memory,
    format_bytes,
    physical_memory,
    table_bytes,
)


def test_byte_helpers():
    assert table_bytes(1.6e10) == pytest.approx(1.28e11)
    assert format_bytes(1.28e11) == "128 GB"
    assert format_bytes(512) == "512 B"
    assert format_bytes(8 * 2**70) == "9.44e+06 PB"


def test_sizes_are_exact_integers_whatever_their_size():
    assert cells([2**70, 3]) == 3 * 2**70  # no int64 overflow
    assert cells([]) == 1


def test_default_limit_is_half_the_machine():
    found = physical_memory()
    assert DEFAULT_MAX_MEMORY == (found // 2 if found else 4 * 2**30)


def test_refusal_names_the_size_the_limit_and_the_option():
    check_memory("a small table", 100, 1000)  # within the limit: nothing happens
    with pytest.raises(ModelTooLargeError) as info:
        check_memory("the marginal on ('a',)", 8e12, 2e9, alternative="use smaller cliques")
    message = str(info.value)
    assert "the marginal on ('a',) would need 8 TB" in message
    assert "over the memory limit of 2 GB (set by max_memory=)" in message
    assert message.endswith("; use smaller cliques")
    with command_line_spelling({"max_memory": "--max-memory"}), pytest.raises(
        ModelTooLargeError, match=r"set by --max-memory\)"
    ):
        check_memory("a table", 8e12, 2e9)


def test_cell_caps():
    check_cells("the tree", 10, 10)
    with pytest.raises(ModelTooLargeError, match=r"needs 11 cells, over max_cells=10$"):
        check_cells("the tree", 11, 10)
    with command_line_spelling({"max_cells": "--max-cells"}), pytest.raises(
        ModelTooLargeError, match="over --max-cells 10"
    ):
        check_cells("the tree", 11, 10.0)
