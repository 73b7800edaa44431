"""Hill climbing with BIC (pgmpy), run with a Python that has pgmpy.

Called by ``experiments/bn_learn.py`` in a subprocess:

    python _pgmpy_hillclimb.py RECORDS.csv STATES.json MAX_INDEGREE OUT.json

RECORDS.csv holds one column per variable (state names); STATES.json {variable: [states]}
gives every variable's full state list (states never seen still count in the BIC's
parameter count). Writes {"edges": [[parent, child], ...], "seconds": the search's wall
time, "pgmpy": version} to OUT.json.
"""

import json
import sys
import time
import warnings

warnings.simplefilter("ignore")

import pandas as pd  # noqa: E402
import pgmpy  # noqa: E402
from pgmpy.estimators import BIC, HillClimbSearch  # noqa: E402


def main() -> None:
    records, states, indegree, out = sys.argv[1:5]
    with open(states) as fh:
        names = json.load(fh)
    data = pd.read_csv(records, dtype=str, keep_default_na=False)
    for column in data.columns:
        data[column] = pd.Categorical(data[column], categories=names[column])
    started = time.perf_counter()
    search = HillClimbSearch(data, state_names=names)
    dag = search.estimate(scoring_method=BIC(data, state_names=names),
                          max_indegree=int(indegree), show_progress=False)
    seconds = time.perf_counter() - started
    with open(out, "w") as fh:
        json.dump({"edges": [list(e) for e in dag.edges()], "seconds": seconds,
                   "pgmpy": pgmpy.__version__}, fh)


if __name__ == "__main__":
    main()
