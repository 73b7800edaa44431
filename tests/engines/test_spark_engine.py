"""The Spark counting engine in local mode: the marginals and the fits of the in-memory
Dataset (skipped where PySpark or Java is missing)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from engine_helpers import synth_on_engines

from dpgm import Dataset, Domain
from dpgm.mechanisms import REGISTRY

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java", allow_module_level=True)
from dpgm.engines.spark import SparkTable  # noqa: E402

# the local[2] session: the ``spark`` fixture of conftest.py

pytestmark = pytest.mark.filterwarnings("ignore")
DOMAIN = Domain(["a", "b", "c"], [3, 4, 2])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(1)
    records = np.column_stack([rng.integers(k, size=2000) for k in DOMAIN.shape])
    weights = rng.uniform(0, 1, 2000)
    path = tmp_path_factory.mktemp("spark") / "records.csv"
    pd.DataFrame(records, columns=DOMAIN.attrs).assign(w=weights).to_csv(path, index=False)
    return path, Dataset(records, DOMAIN), Dataset(records, DOMAIN, weights)


def test_spark_marginals_are_the_in_memory_ones(spark, table):
    path, plain, weighted = table
    for weights, reference in ((None, plain), ("w", weighted)):
        engine = SparkTable(str(path), DOMAIN, weights=weights, session=spark)
        assert len(engine) == len(reference)
        assert engine.total == pytest.approx(reference.total, rel=1e-12)
        cliques = [("a",), ("c", "a"), ("a", "b", "c"), ()]
        for got, clique in zip(engine.marginals(cliques), cliques, strict=True):
            np.testing.assert_allclose(got, reference.marginal(clique), rtol=1e-12)


def test_mst_fits_the_same_model_on_spark(spark, table):
    path, plain, _ = table
    fitted = []
    for data in (plain, SparkTable(str(path), DOMAIN, session=spark)):
        mechanism = REGISTRY["mst"](1.0)
        mechanism.fit(data, rng=2)
        fitted.append(mechanism.synthetic_data(100, rng=3).records)
    assert np.array_equal(fitted[0], fitted[1])


def test_a_bad_code_is_refused(spark, tmp_path):
    from dpgm.errors import DataError

    path = tmp_path / "bad.csv"
    pd.DataFrame({"a": [0, 5], "b": [0, 1], "c": [0, 1]}).to_csv(path, index=False)
    with pytest.raises(DataError, match="column 'a' has value 5, outside its domain 0..2"):
        SparkTable(str(path), DOMAIN, session=spark)


def test_the_command_line_counts_with_spark(spark, table, tmp_path, capsys):
    import json

    path, _, _ = table
    (tmp_path / "domain.json").write_text(json.dumps(DOMAIN.to_dict()))
    outputs = synth_on_engines(path, ["--domain", str(tmp_path / "domain.json")],
                               ("numpy", "spark"), tmp_path, seed=4, rows=50)
    assert outputs[0] == outputs[1]
    assert "counted by spark" in capsys.readouterr().err


def test_a_raw_table_with_its_schema_on_the_command_line_as_in_memory(spark, tmp_path, capsys):
    import json

    rng = np.random.default_rng(3)
    # a count no progress line's iteration number can show
    frame = pd.DataFrame({"colour": rng.choice(["red", "green", None], size=811),
                          "age": np.round(rng.uniform(-5, 95, size=811), 1)})
    frame.to_csv(tmp_path / "raw.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps({"columns": {
        "colour": {"kind": "categorical", "labels": ["red", "green"], "nullable": True},
        "age": {"kind": "numeric", "lower": 0, "upper": 90, "bins": 9}}}))
    outputs = synth_on_engines(tmp_path / "raw.csv", ["--schema", str(tmp_path / "schema.json")],
                               ("numpy", "spark"), tmp_path, seed=2, rows=60)
    assert outputs[0] == outputs[1] and "green" in outputs[0]
    said = capsys.readouterr().err
    # the model's noisy total (released, rounded: it may land on the count) left out
    unreleased = "\n".join(line for line in said.splitlines() if "total≈" not in line)
    assert "encoding" in said and "811" not in unreleased


@pytest.mark.parametrize("name", [n for n in REGISTRY if n not in ("psgd", "mst")])
def test_every_other_mechanism_fits_the_same_model_on_spark(spark, table, name):
    """The rest of issue 15's second point on Spark (MST above): same synthetic records
    and ledger as in memory for a seed."""
    path, plain, _ = table
    fitted = []
    for data in (plain, SparkTable(str(path), DOMAIN, session=spark)):
        mechanism = REGISTRY[name](1.0)
        mechanism.fit(data, rng=3)
        fitted.append((mechanism.synthetic_data(200, rng=4).records,
                       [(e.label, e.epsilon, e.rho) for e in mechanism.budget.ledger]))
    assert np.array_equal(fitted[0][0], fitted[1][0])
    assert fitted[0][1] == fitted[1][1]
