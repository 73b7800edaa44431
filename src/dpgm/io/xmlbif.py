"""Reader for Bayesian networks in XMLBIF 0.3 (Cozman's XML interchange format)::

    <BIF VERSION="0.3"><NETWORK><NAME>asia</NAME>
      <VARIABLE TYPE="nature"><NAME>smoke</NAME><OUTCOME>yes</OUTCOME><OUTCOME>no</OUTCOME>
      </VARIABLE> ...
      <DEFINITION><FOR>lung</FOR><GIVEN>smoke</GIVEN><TABLE>0.1 0.9 0.01 0.99</TABLE>
      </DEFINITION> ...
    </NETWORK></BIF>

A ``TABLE`` lists one distribution over the ``FOR`` variable per configuration of the
``GIVEN`` variables, the last ``GIVEN`` varying fastest: the CPD's C order with axes
``(*given, for)``. ``PROPERTY`` elements are ignored. Only discrete networks.
"""

from __future__ import annotations

from os import PathLike
from xml.etree import ElementTree

import numpy as np

from dpgm.errors import DataError
from dpgm.io.bif import _ROW_TOLERANCE, assemble, rounded_rows
from dpgm.models.bayesian_network import BayesianNetwork

__all__ = ["parse_xmlbif", "read_xmlbif"]


def _text(element, tag: str, origin: str, where: str) -> str:
    found = element.find(tag)
    if found is None or not (found.text or "").strip():
        raise DataError(f"{origin}: {where} has no <{tag}>")
    return found.text.strip()


def parse_xmlbif(text: str, origin: str = "<string>") -> BayesianNetwork:
    """Parse XMLBIF text; errors name ``origin`` and what is wrong."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise DataError(f"{origin}: not valid XML ({exc})") from None
    network = root if root.tag == "NETWORK" else root.find("NETWORK")
    if network is None:
        raise DataError(f"{origin}: no <NETWORK> element")
    name = (network.findtext("NAME") or "").strip()
    states: dict[str, list[str]] = {}
    for variable in network.findall("VARIABLE"):
        var = _text(variable, "NAME", origin, "a <VARIABLE>")
        if var in states:
            raise DataError(f"{origin}: variable {var!r} is declared twice")
        outcomes = [(o.text or "").strip() for o in variable.findall("OUTCOME")]
        if not outcomes or len(set(outcomes)) != len(outcomes):
            raise DataError(f"{origin}: variable {var!r} needs distinct <OUTCOME>s")
        states[var] = outcomes
    parents: dict[str, tuple[str, ...]] = {}
    cpds: dict[str, np.ndarray] = {}
    for definition in network.findall("DEFINITION"):
        child = _text(definition, "FOR", origin, "a <DEFINITION>")
        given = tuple((g.text or "").strip() for g in definition.findall("GIVEN"))
        unknown = [v for v in (child, *given) if v not in states]
        if unknown:
            raise DataError(f"{origin}: the definition of {child!r} names unknown {unknown}")
        if child in cpds:
            raise DataError(f"{origin}: a second definition for {child!r}")
        shape = (*(len(states[g]) for g in given), len(states[child]))
        raw = _text(definition, "TABLE", origin, f"the definition of {child!r}")
        try:
            values = np.array(raw.split(), dtype=np.float64)
        except ValueError:
            raise DataError(f"{origin}: the table of {child!r} holds a non-number") from None
        if values.size != int(np.prod(shape)):
            raise DataError(
                f"{origin}: the table of {child!r} has {values.size} probabilities, "
                f"expected {int(np.prod(shape))}"
            )
        cpd = values.reshape(shape)
        if not np.all(np.isfinite(cpd)) or (cpd < 0).any() or (
            np.abs(cpd.sum(axis=-1) - 1.0) > _ROW_TOLERANCE
        ).any():
            raise DataError(f"{origin}: a distribution of {child!r} does not sum to 1")
        parents[child], cpds[child] = given, rounded_rows(cpd)
    return assemble(origin, states, parents, cpds, name, "<DEFINITION>")


def read_xmlbif(path: str | PathLike[str]) -> BayesianNetwork:
    """Read a discrete Bayesian network from an XMLBIF (``.xml``, ``.xmlbif``) file."""
    with open(path, encoding="utf-8") as handle:
        return parse_xmlbif(handle.read(), str(path))
