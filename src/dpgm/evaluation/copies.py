"""Privacy sanity checks of synthetic records against the records they came from: exact
copies, and the distance to the closest record, each compared with a holdout the
mechanism never saw (``dpgm split``).

These are checks, not a guarantee: differential privacy is what the ledger states. A
sound DP release can reproduce a common record, and a check that finds nothing proves
nothing; what the checks can show is a gap — synthetic records closer to the training
records than to unseen records of the same population — which a DP mechanism should not
produce and a leak would.

Distance: on the encoded domain (after the schema's binning), the number of attributes
in which two records differ (Hamming distance). Training and holdout references are
compared at equal size (the larger is subsampled), so that neither is closer only for
having more records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgm.dataset import Dataset
from dpgm.errors import DomainError
from dpgm.evaluation import sample_rows

#: synthetic records compared (a seeded sample where there are more)
SAMPLE = 2_000
#: significance of the tests that flag a gap
ALPHA = 0.01
_BLOCK_CELLS = 1 << 24  # (synthetic × reference × attribute) comparisons at a time


@dataclass(frozen=True)
class CopyChecks:
    """What the checks found (rates are shares of the synthetic records compared)."""

    compared: int
    exact_train: float
    exact_holdout: float
    distance_train: np.ndarray  # each compared record's distance to the closest training record
    distance_holdout: np.ndarray
    closer_to_train: float  # share strictly closer to training, ties counted half
    copies_flagged: bool
    distances_flagged: bool

    @property
    def flagged(self) -> bool:
        return self.copies_flagged or self.distances_flagged

    def summary(self) -> list[str]:
        """The findings in words."""
        lines = [
            f"exact copies of a record: {100 * self.exact_train:.3g}% of synthetic records "
            f"match a training record, {100 * self.exact_holdout:.3g}% a holdout record",
            f"distance to the closest record (attributes that differ): median "
            f"{np.median(self.distance_train):g} to training, "
            f"{np.median(self.distance_holdout):g} to holdout; "
            f"{100 * self.closer_to_train:.3g}% are closer to training (50% expected)",
        ]
        if self.copies_flagged:
            lines.append("FLAG: synthetic records copy training records more often than "
                         "unseen records: they may leak training records")
        if self.distances_flagged:
            lines.append("FLAG: synthetic records lie closer to training records than to "
                         "unseen ones: they may leak training records")
        if not self.flagged:
            lines.append("no gap between training and holdout records was found (a "
                         "sanity check, not a privacy guarantee)")
        return lines


def copy_checks(synthetic: Dataset, train: Dataset, holdout: Dataset,
                rng: np.random.Generator | int | None = 0, sample: int = SAMPLE) -> CopyChecks:
    """Exact copies and distances to the closest record, training against holdout."""
    if not synthetic.domain == train.domain == holdout.domain:
        raise DomainError("the synthetic, training and holdout records have different domains")
    rng = np.random.default_rng(rng)
    size = min(len(train), len(holdout))
    ours = _sample(synthetic, sample, rng)
    reference_train = _sample(train, size, rng)
    reference_holdout = _sample(holdout, size, rng)
    near_train = _closest(ours, reference_train)
    near_holdout = _closest(ours, reference_holdout)
    n = len(ours)
    exact_train = float(np.mean(near_train == 0)) if n else 0.0
    exact_holdout = float(np.mean(near_holdout == 0)) if n else 0.0
    closer = float(np.mean((near_train < near_holdout) + 0.5 * (near_train == near_holdout))
                   ) if n else 0.5
    return CopyChecks(
        compared=n, exact_train=exact_train, exact_holdout=exact_holdout,
        distance_train=near_train, distance_holdout=near_holdout, closer_to_train=closer,
        copies_flagged=_more(near_train == 0, near_holdout == 0),
        distances_flagged=_closer(near_train, near_holdout),
    )


def _sample(data: Dataset, count: int, rng: np.random.Generator) -> np.ndarray:
    records = np.asarray(data.records)
    return records[sample_rows(len(records), count, rng)]


def _closest(records: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """For each record, the fewest attributes in which it differs from a reference one."""
    best = np.full(len(records), records.shape[1] if records.ndim == 2 else 0, dtype=np.int64)
    if not len(reference) or not len(records):
        return best
    step = max(1, _BLOCK_CELLS // max(1, len(reference) * records.shape[1]))
    for start in range(0, len(records), step):
        block = records[start:start + step]
        differ = (block[:, None, :] != reference[None, :, :]).sum(axis=2)
        best[start:start + step] = differ.min(axis=1)
    return best


def _more(train_hits: np.ndarray, holdout_hits: np.ndarray) -> bool:
    """Whether exact matches with training records outnumber those with holdout ones
    beyond chance (on the records that match one only)."""
    return _excess(int(np.sum(train_hits & ~holdout_hits)),
                   int(np.sum(holdout_hits & ~train_hits)))


def _closer(train: np.ndarray, holdout: np.ndarray) -> bool:
    """Whether records are closer to training than to holdout beyond chance (on the
    records whose two distances differ)."""
    return _excess(int(np.sum(train < holdout)), int(np.sum(train > holdout)))


def _excess(wins: int, losses: int) -> bool:
    """An exact one-sided sign test at ``ALPHA``: more wins than a fair coin gives."""
    from scipy import stats

    if wins + losses == 0:
        return False
    return bool(stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
                < ALPHA)
