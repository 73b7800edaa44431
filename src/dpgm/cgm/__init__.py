"""Learning undirected models from noisy sufficient statistics (Bernstein et al. 2017).

Every method here is post-processing of noisy clique tables (the one ε-DP release, made
by :func:`dpgm.privacy.measure_marginals`): :mod:`.naive` fits the model by maximum
likelihood on the noisy (or simplex-projected) tables; :mod:`.em` by CGM-EM, which treats
the true tables as latent. A tying θ = M·w (:func:`shared_table_tying`: one table shared
by every clique, the paper's time-homogeneous wifi chain) ties parameters across cliques.
"""

from dpgm.cgm.em import EMTrace, cgm_em
from dpgm.cgm.naive import naive_mle, projected_targets
from dpgm.cgm.tables import shared_table_tying

__all__ = ["EMTrace", "cgm_em", "naive_mle", "projected_targets", "shared_table_tying"]
