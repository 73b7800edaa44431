"""The raw-table path a steward copies from the README works on a real table (issue 26,
item 5): draft → kinds filled → discover → synth --schema → evaluate, on the Palmer
penguins, whose rare values partition selection leaves out (they land in "other")."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpgm.cli import main
from dpgm.datasets import penguins_paths

pytestmark = pytest.mark.filterwarnings("ignore::dpgm.errors.SeedWarning")

KINDS = {"species": "categorical", "island": "categorical", "clutch_completion": "categorical",
         "sex": "categorical", "date_egg": "datetime"}  # the rest are numbers


def test_draft_discover_synth_evaluate_on_a_real_table(tmp_path, capsys):
    data, _ = penguins_paths()
    schema = tmp_path / "schema.json"
    assert main(["schema", "draft", str(data), "--out", str(schema)]) == 0
    spec = json.loads(schema.read_text())
    for name, column in spec["columns"].items():  # public knowledge: what each column is
        column["kind"] = KINDS.get(name, "numeric")
    schema.write_text(json.dumps(spec))
    assert main(["schema", "discover", str(data), "--schema", str(schema), "--epsilon", "1",
                 "--out", str(schema), "--force", "--seed", "3"]) == 0
    learnt = json.loads(schema.read_text())["columns"]
    # 344 records at a small share of epsilon: most labels are too rare to be released,
    # and their values are coded "other" instead of stopping the run
    assert all(learnt[name]["other"] is True for name in ("species", "island", "sex"))
    synthetic = tmp_path / "synthetic.csv"
    assert main(["synth", str(data), "--schema", str(schema), "--epsilon", "1",
                 "--mechanism", "mst", "--out", str(synthetic), "--seed", "4"]) == 0
    real, fake = pd.read_csv(data), pd.read_csv(synthetic)
    assert list(fake.columns) == list(real.columns) and len(fake) > 0
    # numbers come back at the precision learnt (never invented digits)
    for name in ("flipper_length_mm", "body_mass_g"):
        column = learnt[name]
        if column.get("integer"):
            values = fake[name].dropna()
            assert (values == values.round()).all()
    report = tmp_path / "report"
    assert main(["evaluate", str(data), str(synthetic), "--schema", str(schema),
                 "--ways", "1", "--report", str(report)]) == 0
    assert "mean TV error over all 1-way marginals" in capsys.readouterr().out
