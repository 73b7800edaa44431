"""A junction tree compiled once for a fixed product of factors, answering every
variable's marginal under evidence with one calibration.

A Bayesian network's all-posteriors question ("given what we saw, how likely is every
other variable?") asks the same network again and again under new evidence. The tree,
the clique each factor lives in and the product of each clique's factors are computed
once; a query then enters its evidence by slicing (an observed variable leaves every
clique, a set of states keeps those), leaves out the factors it was told cannot matter,
calibrates only the smallest subtree that holds what is left, and reads each variable's
marginal off the smallest clique containing it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dpgm.domain import Domain
from dpgm.errors import DataError
from dpgm.inference.belief_propagation import LINEAR_RANGE, MessagePlan
from dpgm.inference.junction_tree import JunctionTree

_add = np.add.reduce


class ZeroProbability(DataError):
    """The evidence has probability zero under the model."""


class CompiledTree:
    """Factors ``tables[k]`` (non-negative, axes in ``scopes[k]`` order) on one junction
    tree over ``domain``, ready for :meth:`marginals` under any evidence."""

    def __init__(self, domain: Domain, scopes: Sequence[tuple[str, ...]],
                 tables: Sequence[np.ndarray], heuristic: str = "auto"):
        self.domain = domain
        self.tree = JunctionTree.build(domain, scopes, heuristic)
        cliques = self.tree.cliques
        self.owner = [self.tree.find(scope) for scope in scopes]  # clique of each factor
        self.assigned: list[list[int]] = [[] for _ in cliques]
        for k, i in enumerate(self.owner):
            self.assigned[i].append(k)
        # each factor with its axes in its clique's order, size 1 on the clique's others
        self.aligned = [_align(domain, table, scope, cliques[i])
                        for table, scope, i in zip(tables, scopes, self.owner)]
        self.shapes = [domain.project(c).shape for c in cliques]
        self.holder: dict[str, int] = {}  # the smallest clique holding each variable
        for i in sorted(range(len(cliques)), key=lambda i: -math.prod(self.shapes[i])):
            self.holder.update(dict.fromkeys(cliques[i], i))
        self.base = [self._product(i, self.assigned[i]) for i in range(len(cliques))]
        # linear-space messages are exact while no clique's product spans more than
        # LINEAR_RANGE (cells that matter cannot underflow); else they pass in log space
        with np.errstate(divide="ignore"):
            spans = [np.log(t.max()) - np.log(t[t > 0].min()) if (t > 0).any() else 0.0
                     for t in self.base]
        self.linear = max(spans, default=0.0) <= LINEAR_RANGE
        self._plans: dict[tuple, tuple[MessagePlan, list[int]]] = {}

    def _product(self, clique: int, factors: Iterable[int], spec: list | None = None
                 ) -> np.ndarray:
        """The product of ``factors`` (all assigned to ``clique``), evidence ``spec``
        entered."""
        table = _enter(np.ones(self.shapes[clique]), spec)
        for k in factors:
            table = table * _enter(self.aligned[k], spec)
        return table

    def marginals(self, targets: Iterable[str], evidence: Mapping[str, list[int]],
                  kept: Sequence[bool] | None = None) -> dict[str, np.ndarray]:
        """The marginal of each target variable given ``evidence`` (codes per variable;
        several codes mean "one of these"), as a normalised array (over the given codes
        for a target with evidence).

        ``kept[k]`` False leaves factor ``k`` out: the caller vouches that it cannot
        change the targets' marginals (a barren node's CPD). Raises
        :class:`ZeroProbability` where the evidence has probability zero under the
        factors kept.
        """
        targets = list(targets)
        tree = self.tree
        observed = {a for a, codes in evidence.items() if len(codes) == 1}
        cliques = [tuple(a for a in c if a not in observed) for c in tree.cliques]
        kept_by_clique = [
            [k for k in ks if kept is None or kept[k]] for ks in self.assigned
        ]
        marked = {i for i, ks in enumerate(kept_by_clique) if ks}
        marked.update(self.holder[t] for t in targets if t not in observed)
        active = _steiner(tree, marked)
        key = (tuple(sorted((a, len(c)) for a, c in evidence.items())), tuple(active))
        if key not in self._plans:
            self._plans.clear()  # one plan kept: evidence sets rarely repeat their shape
            self._plans[key] = self._plan(cliques, active, evidence)
        plan, members = self._plans[key]
        position = {i: k for k, i in enumerate(members)}
        psi = []
        for i in members:
            spec = _evidence_spec(tree.cliques[i], evidence)
            if kept_by_clique[i] == self.assigned[i]:
                psi.append(_enter(self.base[i], spec))
            else:
                psi.append(self._product(i, kept_by_clique[i], spec))
        beliefs = None
        if self.linear:
            with np.errstate(under="ignore"):
                found = plan._linear_marginals(psi, [0.0] * len(psi), 1.0)
            if found is not None:
                beliefs = plan.unpack(found[0])
        if beliefs is None:  # past the linear range, an underflow, or probability zero
            with np.errstate(divide="ignore"):
                cal = plan.calibrate([np.log(t) for t in psi], "sum")
            if not math.isfinite(cal.log_partition):
                raise ZeroProbability("the evidence has probability zero")
            beliefs = [np.exp(b - cal.log_partition) for b in cal.log_beliefs]
        out = {}
        for t in targets:
            if t in observed:
                out[t] = np.ones(1)
                continue
            i = position[self.holder[t]]
            belief = beliefs[i]
            axis = plan.cliques[i].index(t)
            others = tuple(k for k in range(belief.ndim) if k != axis)
            table = _add(belief, others) if others else belief
            out[t] = table / table.sum()
        return out

    def _plan(self, cliques: list[tuple[str, ...]], active: list[int],
              evidence: Mapping[str, list[int]]) -> tuple[MessagePlan, list[int]]:
        """The message plan of the ``active`` subtree with the observed variables sliced out
        (root first), and the original index of each of its cliques."""
        tree = self.tree
        members = [i for i in tree.order if i in set(active)]
        position = {i: k for k, i in enumerate(members)}
        parent = [position.get(tree.parent[i], -1) for i in members]
        attrs = [a for a in self.domain.attrs if any(a in cliques[i] for i in members)]
        sizes = [len(evidence[a]) if a in evidence else self.domain[a] for a in attrs]
        domain = Domain(attrs, sizes)
        sub = JunctionTree(domain, [cliques[i] for i in members], parent,
                           list(range(len(members))), tree.heuristic)
        return MessagePlan(sub), members


def _align(domain: Domain, table: np.ndarray, scope: tuple[str, ...],
           clique: tuple[str, ...]) -> np.ndarray:
    """``table`` (axes in ``scope`` order) with axes in ``clique`` order, size 1 where the
    clique has an attribute the scope lacks."""
    present = [a for a in clique if a in scope]
    moved = np.transpose(table, [scope.index(a) for a in present])
    return moved.reshape([domain[a] if a in scope else 1 for a in clique])


def _evidence_spec(clique: tuple[str, ...], evidence: Mapping[str, list[int]]) -> list | None:
    """Per axis of a table on ``clique``: None, the observed code, or the array of the
    given states; None where no evidence touches the clique."""
    if evidence.keys().isdisjoint(clique):
        return None
    spec: list = []
    for a in clique:
        codes = evidence.get(a)
        spec.append(None if codes is None else codes[0] if len(codes) == 1
                    else np.asarray(codes))
    return spec


def _enter(table: np.ndarray, spec: list | None) -> np.ndarray:
    """Evidence ``spec`` entered into ``table``: an observed variable's axis is dropped, a
    set of states keeps those (axes of size 1 stand for attributes the table lacks)."""
    if spec is None:
        return table
    for axis, x in enumerate(spec):
        if isinstance(x, np.ndarray) and table.shape[axis] > 1:
            table = np.take(table, x, axis=axis)
    index = tuple(slice(None) if x is None or isinstance(x, np.ndarray)
                  else (x if table.shape[axis] > 1 else 0) for axis, x in enumerate(spec))
    return table[index]


def _steiner(tree: JunctionTree, marked: set[int]) -> list[int]:
    """The cliques of the smallest subtree of ``tree`` joining the ``marked`` ones."""
    if not marked:
        return [tree.order[0]]
    below = [0] * len(tree.cliques)  # marked cliques in each subtree
    for i in reversed(tree.order):
        below[i] += i in marked
        if tree.parent[i] >= 0:
            below[tree.parent[i]] += below[i]
    total = len(marked)
    root = tree.order[0]
    while root not in marked:  # walk down while one child holds every marked clique
        inside = [c for c in tree.children[root] if below[c] == total]
        if not inside:
            break
        root = inside[0]
    keep = []
    stack = [root]
    while stack:
        i = stack.pop()
        keep.append(i)
        stack.extend(c for c in tree.children[i] if below[c] > 0)
    return keep
