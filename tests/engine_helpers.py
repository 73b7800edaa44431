"""Running ``dpgm synth`` on several counting engines, for the engine tests."""

from __future__ import annotations


def synth_on_engines(data, table_option: list[str], engines, tmp_path, *, seed: int,
                     rows: int) -> list[str]:
    """The synthetic CSV text ``dpgm synth`` writes from ``data`` on each engine, with
    ``table_option`` (``["--domain", path]`` or ``["--schema", path]``)."""
    from dpgm.cli import main

    outputs = []
    for name in engines:
        out = tmp_path / f"{name}.csv"
        status = main(["synth", str(data), *table_option, "--epsilon", "1", "--seed",
                       str(seed), "--engine", name, "--out", str(out), "--rows", str(rows)])
        assert status == 0
        outputs.append(out.read_text())
    return outputs
