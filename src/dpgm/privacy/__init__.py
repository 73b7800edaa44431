"""The privacy layer: every use of sensitive data goes through here.

Neighbour relation: two datasets are neighbours when one is the other with one record
added or removed (unbounded DP). Every guarantee stated in dpgm is for this relation.

Sensitivities: one record (of weight at most 1) changes one cell of a marginal's count
vector by at most 1, so a marginal has L1 and L2 sensitivity 1; k marginals measured
together have L1 sensitivity k and L2 sensitivity √k.

Randomness: with ``rng=None`` (the default) noise and selections come from OpenDP's exact
samplers and are fit for a release. An integer seed or a ``numpy.random.Generator`` gives
NumPy randomness that is reproducible — for research and testing only, never for a
release (whoever knows the seed can remove the noise); it draws a ``SeedWarning`` once.
Which sampler runs depends on public facts only, never on the data.

Modules: :mod:`.accounting` (zCDP ↔ (ε, δ) conversions), :mod:`.budget` (the ledger),
:mod:`.noise` (Laplace / Gaussian noise), :mod:`.measure` (noisy marginals),
:mod:`.exponential` (private selection), :mod:`.amplification` (Poisson subsampling
and its amplified cost), :mod:`.frank_wolfe` (private Frank–Wolfe selections),
:mod:`.stability` (subsample and aggregate: the stable mode of block answers),
:mod:`.policy` (δ policy, parameter checks, seeds).
"""

from dpgm._lazy import lazy_exports

# imported on first use: the policy (DEFAULT_DELTA, checks) loads without the samplers
__getattr__, __dir__ = lazy_exports(__name__, {
    name: f"dpgm.privacy.{module}:{name}" for module, names in {
        "accounting": ("cdp_delta", "cdp_epsilon", "cdp_rho"),
        "amplification": ("amplified_epsilon", "poisson_subsample", "subsample_epsilon"),
        "budget": ("LedgerEntry", "PrivacyBudget"),
        "exponential": ("exponential_mechanism", "exponential_mechanism_rows"),
        "measure": ("gaussian_sigma", "laplace_scale", "measure_linear", "measure_marginals",
                    "measure_per_individual", "query_sensitivity"),
        "noise": ("gaussian_noise", "laplace_noise"),
        "policy": ("DEFAULT_DELTA", "check_delta"),
    }.items() for name in names})

__all__ = [
    "DEFAULT_DELTA",
    "amplified_epsilon",
    "poisson_subsample",
    "subsample_epsilon",
    "LedgerEntry",
    "PrivacyBudget",
    "cdp_delta",
    "cdp_epsilon",
    "cdp_rho",
    "check_delta",
    "exponential_mechanism",
    "exponential_mechanism_rows",
    "gaussian_noise",
    "gaussian_sigma",
    "laplace_noise",
    "laplace_scale",
    "measure_linear",
    "measure_marginals",
    "measure_per_individual",
    "query_sensitivity",
]
