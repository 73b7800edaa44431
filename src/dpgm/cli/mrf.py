"""``dpgm mrf``: privately learning Markov random fields (Zhang et al. 2020) on the command
line — ``fit`` (Ising, pairwise or t-wise parameters, ρ-zCDP) and ``structure`` (the edge
set, (ε, δ)-DP). Both read sensitive data, check what they can first (options, output
paths, the domain's sizes), write a JSON model or edge list in attribute names and value
labels, and end with the ledger line.
"""

from __future__ import annotations

import argparse
import json

from dpgm.cli.common import say

MODELS = ("ising", "pairwise", "twise")
#: the library's parameters that ``mrf`` messages name by their flags
FLAGS = {"blocks": "--blocks", "method": "--method", "width": "--width",
         "min_edge_weight": "--min-edge-weight", "rho": "--rho"}



def _labels(domain) -> dict[str, list]:
    return {a: list(domain.labels.get(a, range(domain[a]))) for a in domain.attrs}


def model_json(model: str, estimate, domain) -> dict:
    """A learned model as JSON: attributes, each one's value labels (spin −1, +1 for the
    binary models: the first label is −1), and the parameters by name."""
    names = list(domain.attrs)
    out = {"model": model, "attributes": names, "labels": _labels(domain)}
    if model == "ising":
        out["convention"] = ("P(z) ∝ exp(Σ_{i<j} A_ij z_i z_j + Σ_i θ_i z_i), "
                             "z = -1 (first label) or +1")
        out["couplings"] = [
            {"pair": [names[i], names[j]], "value": float(estimate.model.A[i, j])}
            for i in range(len(names)) for j in range(i + 1, len(names))]
        out["fields"] = dict(zip(names, map(float, estimate.fields), strict=True))
    elif model == "pairwise":
        w = estimate.model.couplings
        out["convention"] = ("P(z) ∝ exp(Σ_{i<j} W_ij(z_i, z_j) + Σ_i θ_i(z_i)), "
                             "double-centred, θ up to a constant")
        out["couplings"] = [
            {"pair": [names[i], names[j]], "table": w[i, j].tolist()}
            for i in range(len(names)) for j in range(i + 1, len(names))]
        out["fields"] = {n: row.tolist() for n, row in zip(names, estimate.model.fields,
                                                           strict=True)}
    else:
        out["convention"] = "P(z) ∝ exp(Σ_I h(I) Π_{j∈I} z_j), z = -1 (first label) or +1"
        out["coefficients"] = [
            {"monomial": [names[i] for i in monomial], "value": float(value)}
            for monomial, value in sorted(estimate.model.coefficients.items(),
                                          key=lambda item: (len(item[0]), item[0]))]
    return out


def _outputs(args: argparse.Namespace):
    """The checked output paths (the model or edges, and the ledger or None)."""
    from dpgm.cli.common import prepare_outputs

    checked = prepare_outputs(args, (args.data, args.schema, args.domain))
    return checked["out"], checked["ledger"]


def _fit(args: argparse.Namespace) -> int:
    from dpgm.cli.common import load_records, mechanism_progress, public_inputs, report_spend
    from dpgm.errors import ParameterError, command_line_spelling
    from dpgm.files import atomic_write
    from dpgm.mechanisms import MRF_LEARNERS

    # everything knowable before reading the data is checked first
    if args.model != "twise" and (args.order is not None or args.goal is not None):
        raise ParameterError("--order and --goal apply to --model twise")
    if args.model == "twise" and args.order is None:
        raise ParameterError("--model twise needs --order (t, at least 2)")
    if args.model != "pairwise" and args.mode is not None:
        raise ParameterError("--mode applies to --model pairwise")
    out, ledger = _outputs(args)
    schema, domain = public_inputs(args)
    extra = {"pairwise": {"mode": args.mode or "tight"},
             "twise": {"order": args.order, "goal": args.goal or "l1"}}.get(args.model, {})
    with command_line_spelling(_flags()):
        learner = MRF_LEARNERS[args.model](rho=args.rho, delta=args.delta, width=args.width,
                                           progress=mechanism_progress(), **extra)
        learner.check(domain)  # the domain's sizes and the width, before the data
        data = load_records(args.data, schema, domain)
        say(f"read {args.data}: {len(domain)} attributes")  # the number of records is private
        learner.fit(data, rng=args.seed)
    estimate = learner.estimate
    with atomic_write(out) as handle:
        json.dump(model_json(args.model, estimate, domain), handle, indent=2,
                  ensure_ascii=False)
    say(f"wrote the private {args.model} model ({estimate.steps} Frank-Wolfe steps) to {out}")
    report_spend(learner.budget, ledger, out)
    return 0


def _structure(args: argparse.Namespace) -> int:
    from dpgm.cli.common import load_records, mechanism_progress, public_inputs, report_spend
    from dpgm.errors import command_line_spelling
    from dpgm.files import atomic_write
    from dpgm.mechanisms import StructureLearner
    from dpgm.mrf.structure import structure_blocks

    out, ledger = _outputs(args)
    schema, domain = public_inputs(args)
    with command_line_spelling(_flags()):
        learner = StructureLearner(args.epsilon, args.delta, width=args.width,
                                   min_edge_weight=args.min_edge_weight, method=args.method,
                                   blocks=args.blocks, progress=mechanism_progress())
        # binary attributes, and a release possible at all (for the default blocks too)
        learner.check(domain)
        blocks = structure_blocks(args.epsilon, args.delta, args.method, args.blocks)
        data = load_records(args.data, schema, domain)
        say(f"read {args.data}: {len(domain)} attributes")
        found = learner.fit(data, rng=args.seed)
    with atomic_write(out) as handle:
        json.dump({"method": args.method, "attributes": list(domain.attrs),
                   "released": found.edges is not None,
                   "edges": [list(e) for e in found.edges or ()]}, handle, indent=2)
    if found.edges is None:
        say(f"the blocks did not agree stably: no edge set released. What may help: "
             f"{_advice(args, blocks)}")
    else:
        say(f"wrote {len(found.edges)} edges to {out}")
    report_spend(learner.budget, ledger, out)
    return 0


def _flags() -> dict[str, str]:
    """The flags of ``dpgm`` and of ``mrf``, for messages that name options."""
    from dpgm.cli.common import FLAGS as COMMON

    return {**COMMON, **FLAGS}


def _advice(args: argparse.Namespace, blocks: int) -> str:
    """What could make a stability release come out, from the options alone (public):
    fewer blocks only where fewer are allowed."""
    from dpgm.privacy.stability import fewest_blocks

    hints = ["more records", "a larger --epsilon"]
    fewest = fewest_blocks(args.epsilon, args.delta, args.method)
    if fewest is not None and fewest < blocks:
        hints.append(f"fewer blocks (--blocks {fewest} at least; {blocks} now)")
    hints += [f"a larger --min-edge-weight, if every edge is stronger than "
              f"{args.min_edge_weight:g}", "or --method zcdp, which always releases an edge set"]
    return "; ".join(hints)


def add_commands(commands, *, real, seed, positive_count, delta_default) -> None:
    """Add ``mrf fit|structure`` to the ``dpgm`` parser's subcommands."""
    mrf = commands.add_parser(
        "mrf", help="Markov random fields: private parameters (zCDP) or structure ((eps, delta))")
    sub = mrf.add_subparsers(dest="mrf_command", required=True, parser_class=type(mrf))

    def common(parser) -> None:
        parser.add_argument("data", help="CSV of the records (.gz accepted)")
        parser.add_argument("--schema", default=None,
                            help="the public schema JSON of a raw table; or give --domain")
        parser.add_argument("--domain", default=None,
                            help="the public domain JSON of integer-coded records")
        parser.add_argument("--width", type=real, required=True,
                            help="a public upper bound on the model's width (lambda)")
        parser.add_argument("--seed", type=seed, default=None,
                            help="makes the run reproducible, for research only")
        parser.add_argument("--ledger", default=None, help="also write the ledger as JSON")
        parser.add_argument("--force", action="store_true", help="overwrite outputs")

    fit = sub.add_parser("fit", help="learn a model's parameters privately (rho-zCDP)")
    common(fit)
    fit.add_argument("--model", choices=MODELS, default="ising",
                     help="ising (binary, Alg. 2), pairwise (k values, Alg. 3) or twise "
                     "(binary, order t, Algs. 4-5) (default: ising)")
    fit.add_argument("--rho", type=real, required=True, help="the privacy budget rho (zCDP)")
    fit.add_argument("--delta", type=real, default=delta_default,
                     help=f"the delta at which the spend is also reported as (epsilon, delta) "
                     f"(default: {delta_default:g})")
    fit.add_argument("--order", type=positive_count, default=None, help="twise: the order t")
    fit.add_argument("--goal", choices=("l1", "linf"), default=None,
                     help="twise: all coefficients in l1 (Alg. 4) or the maximal monomials "
                     "(Alg. 5) (default: l1)")
    fit.add_argument("--mode", choices=("tight", "paper"), default=None,
                     help="pairwise: the budget split (default: tight)")
    fit.add_argument("--out", required=True, help="where to write the model (.json)")
    fit.set_defaults(run=_fit)

    structure = sub.add_parser("structure",
                               help="learn an Ising model's edges privately ((epsilon, delta))")
    common(structure)
    structure.add_argument("--epsilon", type=real, required=True, help="the budget epsilon")
    structure.add_argument("--delta", type=real, default=delta_default,
                           help=f"the budget delta (default: {delta_default:g})")
    structure.add_argument("--min-edge-weight", type=real, required=True,
                           help="a public lower bound on an edge's |coupling| (eta)")
    structure.add_argument("--method", choices=("ptr", "histogram", "zcdp"), default="ptr",
                           help="propose-test-release over blocks, a stable histogram, or "
                           "the zCDP parameter route (default: ptr)")
    structure.add_argument("--blocks", type=positive_count, default=None,
                           help="ptr and histogram: the number of blocks (default: the fewest "
                           "at which 90%% of them agreeing is released with probability 95%%)")
    structure.add_argument("--out", required=True, help="where to write the edges (.json)")
    structure.set_defaults(run=_structure)
