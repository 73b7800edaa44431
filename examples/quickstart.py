"""Measure Adult's marginals privately, estimate a model, and query it.

Run: .venv/bin/python examples/quickstart.py
"""

import numpy as np

import dpgm
from dpgm.evaluation import tv_distance
from dpgm.inference import queries

data = dpgm.datasets.load_adult()
domain = data.domain

# 1. Spend the budget: every one-way marginal and three pairs, with Gaussian noise (zCDP).
budget = dpgm.privacy.PrivacyBudget(epsilon=1.0, delta=1e-9)
cliques = [(a,) for a in domain] + [
    ("age", "income>50K"),
    ("education-num", "income>50K"),
    ("sex", "income>50K"),
]
# the release path: OpenDP's exact noise (rng=seed would make it reproducible, for research only)
measurements = dpgm.privacy.measure_marginals(data, cliques, rho=budget.total, budget=budget)
print(
    f"spent rho={budget.spent_rho:.4g} of {budget.total:.4g}; (eps, delta) = "
    f"{budget.spent_epsilon_delta()}"
)

# 2. Post-processing: estimate a graphical model from the noisy marginals.
model = dpgm.estimate(domain, measurements, iters=500)
print(model)

# 3. Answer new queries without touching the data again.
pair = ("age", "sex")  # never measured together
print(
    f"TV error on unmeasured {pair}: {tv_distance(data.marginal(pair), model.marginal(pair)):.4f}"
)
cdf = model.answer_linear({"age": queries.prefix(domain["age"]), "income>50K": queries.identity(2)})
print(
    "estimated share of >50K earners among those aged up to bin 40:",
    round(float(cdf[40, 1] / cdf[40].sum()), 3),
)
print("most likely record given sex=0:", model.map(evidence={"sex": 0}))
synthetic = model.synthetic_data(rng=1)
print(
    "synthetic records:",
    len(synthetic),
    "mean age code:",
    round(float(np.mean(synthetic.records[:, 0])), 2),
)
