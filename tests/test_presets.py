"""Presets (:mod:`jaxbandits.presets`): one kind of object, one place per paper, read by the
constructors; every setting names a field of its class."""
from __future__ import annotations

import dataclasses

import pytest

import jaxbandits.algorithms as A
from jaxbandits import presets
from jaxbandits.algorithms.fixed_confidence import fixed_weights, td_variants

CLASSES = {"LazyTrackAndStop": A.LazyTrackAndStop, "Oracle": A.Oracle, "GIFA": A.GIFA, "LinGame": A.LinGame,
           "FWS": A.FWS, "CumulativeRAGE": td_variants.CumulativeRAGE,
           "GlobalXYAdaptive": td_variants.GlobalXYAdaptive, "FixedWeightsOracle": fixed_weights.FixedWeightsOracle}


@pytest.mark.parametrize("preset", presets.PRESETS, ids=lambda p: f"{p.algorithm}: {p.name}")
def test_every_setting_is_a_field(preset):
    fields = {f.name for f in dataclasses.fields(CLASSES[preset.algorithm])}
    assert set(preset.settings) | set(preset.defaults) <= fields
    assert preset.source and preset.evidence


def test_constructors_read_the_presets():
    """Each preset constructor is its preset applied to the class (nothing else changes)."""
    def cfg(alg, preset, **extra):
        want = CLASSES[preset.algorithm](**preset.apply(**extra))
        assert alg == want, (alg, want)
        if "name" in extra:
            assert alg.name == want.name

    cfg(A.LazyTrackAndStop.paper(), presets.LTS_PAPER)
    assert A.LazyTrackAndStop.paper() == A.LazyTrackAndStop()  # the text is the default
    cfg(A.LazyTrackAndStop.released_code(), presets.LTS_RELEASED)
    cfg(A.LazyTrackAndStop.tirinzoni_degenne(), presets.TD_LTS)
    cfg(A.Oracle.released_code(), presets.ORACLE_RELEASED)
    cfg(A.FWS.tirinzoni_degenne(delta=0.05), presets.TD_FWS, delta=0.05)
    cfg(A.LinGame.tirinzoni_degenne(m=2), presets.TD_LINGAME, m=2, name="MisLid [Tirinzoni & Degenne]")
    cfg(A.LinGame.released_code(), presets.LINGAME_SEED003)
    cfg(A.GIFA.tirinzoni_degenne("LinGIFA", m=2), presets.TD_LINGIFA, m=2, name="LinGIFA [Tirinzoni & Degenne]")
    cfg(A.GIFA.tirinzoni_degenne(), presets.TD_LINGAPE, m=1, name="LinGapE [Tirinzoni & Degenne]")
    assert A.MLinGapE(2).released_code().stopping_pair == presets.GIFA_RELEASED.settings["stopping_pair"]
    assert A.FWS.tirinzoni_degenne().delta == 0.01 and A.FWS.tirinzoni_degenne(delta=0.1).delta == 0.1


def test_table_lists_every_preset():
    table = presets.table()
    assert table.count("\n") == len(presets.PRESETS) + 1
    for p in presets.PRESETS:
        assert f"| {p.algorithm} | {p.name} |" in table
    assert presets.for_algorithm("LazyTrackAndStop") == (presets.LTS_PAPER, presets.LTS_RELEASED, presets.TD_LTS)
