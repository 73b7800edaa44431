"""dpgm: differentially private learning, estimation and inference with graphical models."""

from dpgm import _refit
from dpgm._lazy import lazy_exports
from dpgm._version import __version__ as __version__

# what ``dpgm.X`` names, imported on first use: ``import dpgm`` loads none of it
_EXPORTS = {
    **{name: f"dpgm.{name}" for name in ("datasets", "evaluation", "inference", "mechanisms",
                                         "models", "mrf", "privacy", "schema")},
    **{name: f"{module}:{name}" for module, names in {
        "dpgm.dataset": ("Dataset", "read_raw_table"),
        "dpgm.domain": ("Domain",),
        "dpgm.errors": ("BudgetExceededError", "DataError", "DomainError", "DpgmError",
                        "ModelTooLargeError", "PrivacyParameterError"),
        "dpgm.estimation": ("Measurement", "estimate"),
        "dpgm.factor": ("Factor",),
        "dpgm.mechanisms.cgm": ("fit_cgm",),
        "dpgm.models": ("MarkovRandomField", "load"),
        "dpgm.schema": ("Schema",),
        "dpgm.schema.draft": ("draft",),
    }.items() for name in names},
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def _private_pgm(*args, **options):
    """Private-PGM's estimate, imported when a model first estimates itself again."""
    from dpgm.estimation import estimate

    return estimate(*args, **options)


# the models layer re-estimates through the estimation layer above it by name (dpgm._refit)
_refit.ESTIMATORS["private-pgm"] = _private_pgm

__all__ = [
    "datasets",
    "evaluation",
    "inference",
    "mechanisms",
    "models",
    "mrf",
    "privacy",
    "schema",
    "BudgetExceededError",
    "DataError",
    "Dataset",
    "Domain",
    "DomainError",
    "DpgmError",
    "Factor",
    "fit_cgm",
    "MarkovRandomField",
    "load",
    "read_raw_table",
    "Measurement",
    "ModelTooLargeError",
    "PrivacyParameterError",
    "Schema",
    "draft",
    "estimate",
]
