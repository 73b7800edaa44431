"""A junction tree compiled once for a fixed product of factors, answering every
variable's marginal under evidence with one calibration.

A Bayesian network's all-posteriors question ("given what we saw, how likely is every
other variable?") asks the same network again and again under new evidence. The tree,
the clique each factor lives in, the product of each clique's factors and the message
plan are computed once; a query then enters its evidence as a 0/1 vector on one clique
holding each observed variable (so that the plan serves every evidence set: on the
smaller benchmark networks, building a plan for the tree sliced by the evidence cost
more than its smaller cliques saved), reuses the evidence-free upward messages of the
subtrees that hold no evidence, leaves out the factors it was told cannot matter,
calibrates only the smallest subtree that holds what is left, passes downward messages
only towards the cliques it reads, and reads each variable's marginal off the smallest
clique holding it.
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
#: a tree this small is calibrated in well under a millisecond: searching the other
#: triangulation heuristics for a smaller one would cost more than it could save
_ENOUGH_CELLS = 20_000


class ZeroProbability(DataError):
    """The evidence has probability zero under the model."""


class CompiledTree:
    """Factors ``tables[k]`` (non-negative, axes in ``scopes[k]`` order) on one junction
    tree over ``domain``, ready for :meth:`marginals` under any evidence."""

    def __init__(self, domain: Domain, scopes: Sequence[tuple[str, ...]],
                 tables: Sequence[np.ndarray], heuristic: str = "auto"):
        self.domain = domain
        self.tree = JunctionTree.build(domain, scopes, heuristic, enough=_ENOUGH_CELLS)
        cliques = self.tree.cliques
        self.owner = [self.tree.find(scope) for scope in scopes]  # clique of each factor
        self.assigned: list[list[int]] = [[] for _ in cliques]
        for k, i in enumerate(self.owner):
            self.assigned[i].append(k)
        # each factor with its axes in its clique's order, size 1 on the clique's others
        self.aligned = [_align(domain, table, scope, cliques[i])
                        for table, scope, i in zip(tables, scopes, self.owner)]
        self.shapes = [domain.project(c).shape for c in cliques]
        self.holder = _holders(cliques, [math.prod(shape) for shape in self.shapes])
        self.base = [self._product(i, self.assigned[i]) for i in range(len(cliques))]
        # linear-space messages are exact while no clique's product spans more than
        # LINEAR_RANGE (cells that matter cannot underflow); else they pass in log space
        with np.errstate(divide="ignore"):
            spans = [np.log(t.max()) - np.log(t[t > 0].min()) if (t > 0).any() else 0.0
                     for t in self.base]
        self.linear = max(spans, default=0.0) <= LINEAR_RANGE
        self._plans: dict[tuple | None, tuple] = {}
        self._prior: list | None = None  # the evidence-free pass's upward messages

    def _product(self, clique: int, factors: Iterable[int]) -> np.ndarray:
        """The product of ``factors`` (all assigned to ``clique``) on the clique's axes."""
        table = np.ones(self.shapes[clique])
        for k in factors:
            table = table * self.aligned[k]
        return table

    def marginals(self, targets: Iterable[str], evidence: Mapping[str, list[int]],
                  kept: Sequence[bool] | None = None) -> dict[str, np.ndarray]:
        """The marginal of each target variable given ``evidence`` (codes per variable;
        several codes mean "one of these"), as a normalised array over its states.

        ``kept[k]`` False leaves factor ``k`` out: the caller vouches that it cannot
        change the targets' marginals (a barren node's CPD). Raises
        :class:`ZeroProbability` where the evidence has probability zero under the
        factors kept.
        """
        targets = list(targets)
        tree = self.tree
        if kept is None:
            kept_by_clique = self.assigned
            active = None  # the whole tree
        else:
            kept_by_clique = [[k for k in ks if kept[k]] for ks in self.assigned]
            marked = {i for i, ks in enumerate(kept_by_clique) if ks}
            marked.update(self.holder[t] for t in (*targets, *evidence))
            active = tuple(_steiner(tree, marked))
        if active not in self._plans:
            if len(self._plans) > 8:  # the whole tree's plan, and a few pruned ones
                self._plans = {None: self._plans[None]} if None in self._plans else {}
            self._plans[active] = self._plan(active)
        plan, members, holder, others = self._plans[active]
        psi = [self.base[i] if kept_by_clique[i] == self.assigned[i]
               else self._product(i, kept_by_clique[i]) for i in members]
        # evidence enters as a 0/1 vector on one clique holding its variable: the plan,
        # compiled once, serves every evidence set
        for attr, codes in evidence.items():
            i = holder[attr]
            axis = plan.cliques[i].index(attr)
            mask = np.zeros(self.domain[attr])
            mask[codes] = 1.0
            shape = [1] * len(plan.cliques[i])
            shape[axis] = mask.size
            psi[i] = psi[i] * mask.reshape(shape)
        beliefs = None
        if self.linear:
            known = None
            if active is None and evidence and kept_by_clique is self.assigned:
                known = self._prior_messages(plan, evidence, holder)
            wanted = [False] * len(members)
            for t in targets:
                wanted[holder[t]] = True
            with np.errstate(under="ignore"):
                found = plan._linear_marginals(psi, [0.0] * len(psi), 1.0, known,
                                               wanted=wanted)
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
            i = holder[t]
            rest = others[t]
            table = _add(beliefs[i], rest) if rest else beliefs[i]
            out[t] = table / table.sum()
        return out

    def _prior_messages(self, plan: MessagePlan, evidence: Mapping[str, list[int]],
                        holder: dict[str, int]) -> list | None:
        """The upward messages of the whole tree without evidence, for the cliques whose
        subtree holds none of ``evidence``'s indicators: their messages are unchanged.
        None where the evidence-free pass underflowed."""
        if self._prior is None:
            kept: list = []
            with np.errstate(under="ignore"):
                found = plan._linear_marginals(list(self.base), [0.0] * len(self.base), 1.0,
                                               keep=kept)
            self._prior = kept if found is not None else []
        if not self._prior:
            return None
        tree = plan.tree
        dirty = [False] * len(tree.cliques)
        for attr in evidence:  # the evidence cliques and their ancestors
            i = holder[attr]
            while i >= 0 and not dirty[i]:
                dirty[i] = True
                i = tree.parent[i]
        return [None if dirty[i] else self._prior[i] for i in range(len(dirty))]

    def _plan(self, active: tuple[int, ...] | None) -> tuple:
        """The message plan of the ``active`` subtree (None: the whole tree), the original
        index of each of its cliques, and for each variable in it the clique that holds
        it (a plan index) and the axes to sum out of that clique's belief."""
        tree = self.tree
        if active is None:
            plan, members = MessagePlan(tree), list(range(len(tree.cliques)))
        else:
            chosen = set(active)
            members = [i for i in tree.order if i in chosen]
            position = {i: k for k, i in enumerate(members)}
            parent = [position.get(tree.parent[i], -1) for i in members]
            sub = JunctionTree(self.domain, [tree.cliques[i] for i in members], parent,
                               list(range(len(members))), tree.heuristic)
            plan = MessagePlan(sub)
        holder = _holders(plan.cliques, plan.sizes)
        others = {a: tuple(x for x, b in enumerate(plan.cliques[k]) if b != a)
                  for a, k in holder.items()}
        return plan, members, holder, others


def _holders(cliques: Sequence[tuple[str, ...]], sizes: Sequence[int]) -> dict[str, int]:
    """Each variable with the index of the smallest clique holding it."""
    holder: dict[str, int] = {}
    for i in sorted(range(len(cliques)), key=lambda i: -sizes[i]):
        holder.update(dict.fromkeys(cliques[i], i))
    return holder


def _align(domain: Domain, table: np.ndarray, scope: tuple[str, ...],
           clique: tuple[str, ...]) -> np.ndarray:
    """``table`` (axes in ``scope`` order) with axes in ``clique`` order, size 1 where the
    clique has an attribute the scope lacks."""
    present = [a for a in clique if a in scope]
    moved = np.transpose(table, [scope.index(a) for a in present])
    return moved.reshape([domain[a] if a in scope else 1 for a in clique])


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
