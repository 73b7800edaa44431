"""Running ``dpgm synth`` on several counting engines, for the engine tests."""

from __future__ import annotations


def synth_on_engines(data, table_option: list[str], engines, tmp_path, *, seed: int,
                     rows: int, mechanism: str = "mst") -> list[str]:
    """What ``dpgm synth`` fits from ``data`` on each engine, with ``table_option``
    (``["--domain", path]`` or ``["--schema", path]``), as text to compare: the records
    that the saved model gives for one seed (decoded), the same wherever the model is.
    Spark draws the command's own records on its partitions, with their own seed
    streams; the model is what must not depend on the engine. ``mechanism``: MST unless
    named (the engines count; every mechanism reads its counts alike, and the default's
    Private-PGM iterations would only slow the comparison)."""
    import dpgm
    from dpgm.cli import main

    outputs = []
    for name in engines:
        out, model = tmp_path / f"{name}.csv", tmp_path / f"{name}.dpgm"
        status = main(["synth", str(data), *table_option, "--mechanism", mechanism,
                       "--epsilon", "1", "--seed",
                       str(seed), "--engine", name, "--out", str(out), "--rows", str(rows),
                       "--save-model", str(model), "--force"])
        assert status == 0
        assert out.exists()  # a file, or Spark's folder of part files
        fitted = dpgm.load(model)
        records = fitted.synthetic_data(rows, rng=seed)
        frame = records if fitted.schema is not None else records.to_pandas()
        outputs.append(frame.to_csv(index=False))
    return outputs
