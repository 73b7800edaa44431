"""The beat-AIM experiment's variants are AIM+RP's options, checked before any run."""

from __future__ import annotations

import argparse

import pytest

from dpgm import Domain
from dpgm.mechanisms import AIMResidual

beat_aim = pytest.importorskip("experiments.beat_aim")


@pytest.mark.parametrize("name", ["default", "no-denoise", "one-band", "share=0.7", "share=0",
                                  "one-shot", "three-way", "round_iters=300",
                                  "max_model_size=10"])
def test_every_variant_is_an_aim_rp(name):
    from dpgm.schema import Schema

    schema = Schema.from_json({"columns": {
        "a": {"kind": "numeric", "lower": 0, "upper": 1, "bins": 4},
        "b": {"kind": "categorical", "labels": ["x", "y"]},
        "c": {"kind": "categorical", "labels": ["u", "v", "w"]}}})
    mechanism, workload = beat_aim.variant(beat_aim.variant_name(name), 1.0, schema)
    assert isinstance(mechanism, AIMResidual)
    assert (workload is not None) == (name == "three-way")
    if name == "one-band":
        assert mechanism.ordered_attributes(Domain(["a"], [4])) == {}
    if name in ("no-denoise",):
        assert mechanism.denoise is False
    if name == "round_iters=300":
        assert mechanism._aim_options["round_iters"] == 300


@pytest.mark.parametrize("name", ["bogus", "share=1", "share=half", "share=-0.1",
                                  "round_iters=many", "colour=3"])
def test_an_unknown_variant_is_refused_before_any_run(name):
    with pytest.raises(argparse.ArgumentTypeError):
        beat_aim.variant_name(name)
