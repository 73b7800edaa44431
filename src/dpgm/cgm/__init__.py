"""Learning undirected models from noisy sufficient statistics (Bernstein et al. 2017).

Every method here is post-processing of noisy clique tables (the one ε-DP release, made
by :func:`dpgm.privacy.measure_marginals`): :mod:`.naive` fits the model by maximum
likelihood on the noisy (or simplex-projected) tables; :mod:`.em` by CGM-EM, which treats
the true tables as latent.
"""

from dpgm.cgm.em import EMTrace, cgm_em
from dpgm.cgm.naive import naive_mle, projected_targets

__all__ = ["EMTrace", "cgm_em", "naive_mle", "projected_targets"]
