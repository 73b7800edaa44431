"""Train on synthetic, test on real (TSTR): how well models fitted to the synthetic records
predict a target column of real records the mechanism never saw (not private: for the
data steward's own checks, like the rest of :mod:`dpgm.evaluation`).

The same two scikit-learn models are fitted twice, once to the real training records and
once to the synthetic ones, and both are scored on the holdout (``dpgm split``):

* a logistic regression (a ridge regression for a numeric target) on the one-hot
  encoded attributes;
* a histogram gradient-boosting model on the attributes' codes, the categorical ones
  declared as such.

Features are the encoded attributes (after the schema's binning), the same for both
tables. A categorical target is classified (accuracy; the area under the ROC curve, one
class against the rest averaged over the classes in the holdout for more than two); a
numeric target with its values at hand is regressed on its numbers (R²). Training sets
are a seeded sample of at most :data:`TRAIN_ROWS` records, so that the check takes
seconds at any size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import DomainError, ParameterError
from dpgm.evaluation import sample_rows

#: the most records a model is trained on (a seeded sample of larger tables)
TRAIN_ROWS = 100_000
#: the most holdout records scored
TEST_ROWS = 200_000
#: the most values of a categorical attribute the boosting model takes as categories
_MAX_CATEGORIES = 255


@dataclass(frozen=True)
class UtilityScore:
    """One model and one metric, trained on the real records and on the synthetic ones."""

    model: str
    metric: str
    real: float
    synthetic: float


@dataclass(frozen=True)
class Utility:
    """TSTR scores for one target column."""

    target: str
    task: str  # "classification" or "regression"
    scores: tuple[UtilityScore, ...]

    def summary(self) -> list[str]:
        """The scores in words."""
        lines = [f"train on synthetic, test on real: {self.task} of {self.target} on the "
                 "holdout"]
        for s in self.scores:
            lines.append(f"  {s.model}, {s.metric}: {s.synthetic:.4g} trained on synthetic, "
                         f"{s.real:.4g} on real")
        return lines


def tstr(
    train: Dataset,
    synthetic: Dataset,
    holdout: Dataset,
    target: str,
    *,
    numbers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    categorical: frozenset[str] | None = None,
    rng: np.random.Generator | int | None = 0,
) -> Utility:
    """TSTR scores of ``target`` (see the module docstring).

    ``numbers`` holds the target's values in the three tables (train, synthetic,
    holdout; NaN where missing) for a regression; without it the target's codes are
    classified. ``categorical`` names the attributes without an order (default: all).
    """
    if not train.domain == synthetic.domain == holdout.domain:
        raise DomainError("the training, synthetic and holdout records have different domains")
    domain = train.domain
    if target not in domain.attrs:
        raise ParameterError(f"--target {target!r} is not an attribute; the attributes are "
                             f"{', '.join(domain.attrs)}")
    if len(domain) < 2:
        raise ParameterError("--target needs at least one other attribute to predict from")
    features = [a for a in domain.attrs if a != target]
    categorical = frozenset(domain.attrs if categorical is None else categorical)
    rng = np.random.default_rng(rng)
    tables = []
    for index, (data, cap) in enumerate(((train, TRAIN_ROWS), (synthetic, TRAIN_ROWS),
                                         (holdout, TEST_ROWS))):
        rows = sample_rows(len(data), cap, rng)
        codes = np.asarray(data.project(features).records)[rows]
        if numbers is None:
            y = np.asarray(data.project([target]).records)[rows, 0]
        else:
            y = np.asarray(numbers[index], dtype=np.float64)[rows]
            keep = ~np.isnan(y)
            codes, y = codes[keep], y[keep]
        tables.append((codes, y))
    sizes = [domain[a] for a in features]
    unordered = np.array([a in categorical for a in features])
    task = "classification" if numbers is None else "regression"
    (x_real, y_real), (x_synth, y_synth), (x_test, y_test) = tables
    if len(y_test) == 0:
        raise ParameterError(f"the holdout has no records with {target} to score")
    scores = []
    for model in ("logistic regression" if task == "classification" else "ridge regression",
                  "gradient boosting"):
        seed = int(rng.integers(2**31))  # one for both fits: they differ by their data only
        fitted = [_fit(model, task, x, y, sizes, unordered, seed) for x, y in
                  ((x_real, y_real), (x_synth, y_synth))]
        for metric in (("accuracy", "AUC") if task == "classification" else ("R²",)):
            real, synth = (_score(metric, f, x_test, y_test, sizes) for f in fitted)
            scores.append(UtilityScore(model, metric, real, synth))
    return Utility(target, task, tuple(scores))


def _one_hot(codes: np.ndarray, sizes: list[int]):
    """The records as a sparse 0/1 matrix with one column per value of each attribute."""
    from scipy import sparse

    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    n, k = codes.shape
    columns = (codes.astype(np.int64) + offsets).ravel()
    rows = np.repeat(np.arange(n), k)
    return sparse.csr_matrix((np.ones(n * k), (rows, columns)), shape=(n, int(sum(sizes))))


@dataclass
class _Fitted:
    model: str
    estimator: object | None  # None: a constant prediction (one class or value only)
    constant: float


def _fit(model: str, task: str, x: np.ndarray, y: np.ndarray, sizes: list[int],
         categorical: np.ndarray, seed: int) -> _Fitted:
    from dpgm.privacy.quiet import on_records

    if len(y) == 0:
        return _Fitted(model, None, np.nan)
    if task == "classification" and len(np.unique(y)) < 2:
        return _Fitted(model, None, float(y[0]))
    with on_records():  # convergence warnings depend on the records
        if model == "gradient boosting":
            from sklearn.ensemble import (
                HistGradientBoostingClassifier,
                HistGradientBoostingRegressor,
            )

            mask = categorical & (np.array(sizes) <= _MAX_CATEGORIES)
            kind = (HistGradientBoostingClassifier if task == "classification"
                    else HistGradientBoostingRegressor)
            # scikit-learn's early stopping holds out a stratified split, which fails on a
            # class of one record (a synthetic table may have one): no early stopping there
            single = task == "classification" and np.unique(y, return_counts=True)[1].min() < 2
            estimator = kind(categorical_features=mask, random_state=seed,
                             early_stopping=False if single else "auto")
            estimator.fit(x, y)
        elif task == "classification":
            from sklearn.linear_model import LogisticRegression

            estimator = LogisticRegression(max_iter=1000).fit(_one_hot(x, sizes), y)
        else:
            from sklearn.linear_model import Ridge

            estimator = Ridge(alpha=1.0).fit(_one_hot(x, sizes), y)
    return _Fitted(model, estimator, np.nan)


def _score(metric: str, fitted: _Fitted, x: np.ndarray, y: np.ndarray, sizes: list[int]
           ) -> float:
    from sklearn.metrics import r2_score, roc_auc_score

    from dpgm.privacy.quiet import on_records

    inputs = x if fitted.model == "gradient boosting" else _one_hot(x, sizes)
    with on_records():
        if metric == "R²":
            if fitted.estimator is None:
                return float("nan")
            return float(r2_score(y, fitted.estimator.predict(inputs)))
        classes = np.unique(y)
        if fitted.estimator is None:  # one class seen in training: it is always predicted
            if metric == "accuracy":
                return float(np.mean(y == fitted.constant))
            return 0.5 if len(classes) > 1 else float("nan")
        if metric == "accuracy":
            return float(np.mean(fitted.estimator.predict(inputs) == y))
        if len(classes) < 2:
            return float("nan")
        # scores of every class in the holdout (0 for a class never seen in training)
        proba = fitted.estimator.predict_proba(inputs)
        known = {c: i for i, c in enumerate(fitted.estimator.classes_)}
        scores = np.zeros((len(y), len(classes)))
        for j, c in enumerate(classes):
            if c in known:
                scores[:, j] = proba[:, known[c]]
        if len(classes) == 2:
            return float(roc_auc_score(y == classes[1], scores[:, 1]))
        return float(np.mean([roc_auc_score(y == c, scores[:, j])
                              for j, c in enumerate(classes)]))
