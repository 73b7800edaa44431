"""``--engine spark`` writes the synthetic records from the cluster (issue 27): each
partition draws its share from the broadcast model with its own seed stream, Spark writes
the part files, and a retried task neither loses nor duplicates a row (skipped where
PySpark or Java is missing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpgm import Domain, MarkovRandomField, Schema
from dpgm.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")
DOMAIN = Domain(["a", "b", "c"], [2, 3, 4], labels={"b": ["x", "y", "z"]})


def model(total: float = 5000.0) -> MarkovRandomField:
    rng = np.random.default_rng(0)
    return MarkovRandomField(DOMAIN, {("a", "b"): rng.normal(size=(2, 3)),
                                      ("b", "c"): rng.normal(size=(3, 4))}, total)


def read(folder) -> pd.DataFrame:
    parts = sorted(p for p in folder.iterdir() if p.name.startswith("part-"))
    if folder.name.endswith(".parquet"):
        return pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    return pd.concat([pd.read_csv(p) for p in parts], ignore_index=True)


def test_spark_writes_the_records_and_a_retry_neither_loses_nor_duplicates_one(
        spark, tmp_path):
    from dpgm.engines.spark import sample_to

    fitted = model()
    clean, retried = tmp_path / "clean.parquet", tmp_path / "retried.parquet"
    assert sample_to(fitted, str(clean), 2500, session=spark, seed=7, chunk_rows=400) == 2500
    sample_to(fitted, str(retried), 2500, session=spark, seed=7, chunk_rows=400,
              _fail_first_attempt=True)  # partition 1 fails once, and Spark retries it
    first, second = read(clean), read(retried)
    assert len(first) == len(second) == 2500
    key = list(first.columns)
    pd.testing.assert_frame_equal(first.sort_values(key).reset_index(drop=True),
                                  second.sort_values(key).reset_index(drop=True))
    assert set(first["b"]) <= {"x", "y", "z"}
    shares = first["b"].value_counts(normalize=True).sort_index().to_numpy()
    expected = fitted.marginal(["b"]) / fitted.total
    np.testing.assert_allclose(shares, expected, atol=0.05)


def test_partitions_draw_from_independent_streams(spark, tmp_path):
    from dpgm.engines.spark import sample_to

    out = tmp_path / "s.parquet"
    sample_to(model(), str(out), 800, session=spark, seed=1, chunk_rows=400)
    parts = [pd.read_parquet(p) for p in sorted(out.glob("part-*"))]
    sizes = sorted(len(p) for p in parts if len(p))
    assert sizes == [400, 400]
    full = [p for p in parts if len(p)]
    assert not full[0].reset_index(drop=True).equals(full[1].reset_index(drop=True))


def test_synth_with_the_spark_engine_writes_a_folder_of_csv_parts(spark, tmp_path, capsys):
    rng = np.random.default_rng(2)
    pd.DataFrame({"sex": rng.choice(["F", "M"], 600), "age": rng.integers(0, 90, 600)}
                 ).to_csv(tmp_path / "data.csv", index=False)
    schema = Schema.from_json({"columns": {
        "sex": {"kind": "categorical", "labels": ["F", "M"]},
        "age": {"kind": "numeric", "lower": 0, "upper": 90, "bins": 9, "integer": True}}})
    schema.save(tmp_path / "schema.json")
    out = tmp_path / "synthetic.csv"
    code = main(["synth", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"),
                 "--epsilon", "1", "--seed", "0", "--engine", "spark", "--rows", "700",
                 "--chunk-rows", "300", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.is_dir() and "privacy spent" in captured.out
    frame = read(out)
    assert len(frame) == 700 and list(frame.columns) == ["sex", "age"]
    assert set(frame["sex"]) <= {"F", "M"} and frame["age"].between(0, 90).all()
    # a second run without --force is refused before anything is read or spent
    again = main(["synth", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"),
                  "--epsilon", "1", "--engine", "spark", "--out", str(out)])
    assert again == 2 and "exists; pass --force" in capsys.readouterr().err


def test_standard_output_is_refused_with_the_spark_engine(tmp_path, capsys):
    from dpgm.cli.output import check_spark_output
    from dpgm.errors import OutputError

    with pytest.raises(OutputError, match="folder of part files"):
        check_spark_output("-")
    assert check_spark_output("hdfs:///census/synthetic.parquet") == \
        "hdfs:///census/synthetic.parquet"
