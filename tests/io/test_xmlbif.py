"""XMLBIF: the same network as its BIF, and one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
from bn_helpers import load, to_xmlbif

from dpgm.errors import DataError
from dpgm.io import parse_xmlbif, read_xmlbif


@pytest.mark.parametrize("name", ["asia", "child"])
def test_xmlbif_reads_the_same_network(name, tmp_path):
    network = load(name)
    path = tmp_path / f"{name}.xml"
    path.write_text(to_xmlbif(network))
    read = read_xmlbif(path)
    assert read.variables == network.variables and read.states == network.states
    assert read.parents == network.parents and read.name == network.name
    for v in network.variables:
        assert np.array_equal(read.cpds[v], network.cpds[v])


def test_the_last_given_varies_fastest():
    text = """<BIF><NETWORK><NAME>t</NAME>
      <VARIABLE><NAME>a</NAME><OUTCOME>0</OUTCOME><OUTCOME>1</OUTCOME></VARIABLE>
      <VARIABLE><NAME>b</NAME><OUTCOME>x</OUTCOME><OUTCOME>y</OUTCOME><OUTCOME>z</OUTCOME>
      </VARIABLE>
      <VARIABLE><NAME>c</NAME><OUTCOME>n</OUTCOME><OUTCOME>p</OUTCOME></VARIABLE>
      <DEFINITION><FOR>a</FOR><TABLE>0.5 0.5</TABLE></DEFINITION>
      <DEFINITION><FOR>b</FOR><TABLE>0.2 0.3 0.5</TABLE></DEFINITION>
      <DEFINITION><FOR>c</FOR><GIVEN>a</GIVEN><GIVEN>b</GIVEN>
        <TABLE>0.1 0.9  0.2 0.8  0.3 0.7  0.4 0.6  0.5 0.5  0.6 0.4</TABLE></DEFINITION>
    </NETWORK></BIF>"""
    network = parse_xmlbif(text)
    assert network.parents["c"] == ("a", "b")
    # (a=1, b=x) is the fourth configuration
    np.testing.assert_allclose(network.cpds["c"][1, 0], [0.4, 0.6])
    assert network.query(["c"], {"a": "1", "b": "z"})["p"] == pytest.approx(0.4)


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.replace("<TABLE>0.5 0.5</TABLE>", "<TABLE>0.5</TABLE>"), "expected 2"),
    (lambda t: t.replace("<TABLE>0.5 0.5</TABLE>", "<TABLE>0.5 0.6</TABLE>"), "sum to 1"),
    (lambda t: t.replace("<TABLE>0.5 0.5</TABLE>", "<TABLE>0.5 x</TABLE>"), "non-number"),
    (lambda t: t.replace("<FOR>a</FOR>", "<FOR>q</FOR>"), "unknown"),
    (lambda t: t.replace("</NETWORK>", ""), "not valid XML"),
])
def test_errors_say_what_is_wrong(change, message):
    text = ("<BIF><NETWORK><VARIABLE><NAME>a</NAME><OUTCOME>0</OUTCOME><OUTCOME>1</OUTCOME>"
            "</VARIABLE><DEFINITION><FOR>a</FOR><TABLE>0.5 0.5</TABLE></DEFINITION>"
            "</NETWORK></BIF>")
    parse_xmlbif(text).check()
    with pytest.raises(DataError, match=message):
        parse_xmlbif(change(text))
