"""Tier 1: the ParallelES projection (benchmarks/es_scaling.py) on known costs and on the
kept recording."""

import es_scaling
import numpy as np
import pytest
from es_scaling import buffer_bytes, measured, project, summarise


def _recording(seconds, population=4, ranks=2) -> dict:
    """A recording as es_scaling.py's worker writes it, of generations of known unit costs:
    no update time, an instant counter, CartPole's 4 observations."""
    seconds = np.asarray(seconds, dtype=float)
    rec = dict(
        seconds=seconds,
        tell_s=np.zeros(len(seconds)),
        fetch_s=0.0,
        ranks_count=ranks,
        population_size=population,
        obs_stat_fraction=0.01,
        obs_size=4,
    )
    rec["busy"] = np.array([[seconds[g].sum() / ranks] * ranks for g in range(len(seconds))])
    rec["wall"] = np.cumsum(seconds.sum(axis=1) / ranks)
    rec["bytes"] = np.array([buffer_bytes(rec, seconds.shape[1], population, ranks)] * len(seconds))
    return rec


def test_units_go_in_order_to_the_first_free_rank():
    # 3 s, then three of 1 s: on 2 ranks rank 1 plays the three short ones meanwhile, so the
    # generation takes 3 s and no rank waits; on 4 ranks it still takes 3 s, half of the
    # rank time idle; on 8, more ranks than units: 6 of 24 rank seconds worked.
    rec = _recording([[3.0, 1.0, 1.0, 1.0]])
    shares = summarise(project(rec, ranks=[1, 2, 4, 8]))
    assert [shares[n][0] for n in (1, 2, 4, 8)] == pytest.approx([0, 0, 0.5, 0.75], abs=1e-4)
    assert shares[2][1] == pytest.approx(2.0, rel=1e-3)  # 6 s of work in about 3 s
    # the long unit last: on 2 ranks, 1 + 1 s on one rank and 1 + 3 s on the other
    late = summarise(project(_recording([[1.0, 1.0, 1.0, 3.0]]), ranks=[2]))
    assert late[2][0] == pytest.approx(1 - 6 / 8, abs=1e-4)


def test_a_larger_population_is_drawn_from_the_recorded_units_and_keeps_the_unperturbed():
    rec = _recording([[2.0, 2.0, 2.0, 2.0, 5.0]], population=4)
    proj = project(rec, ranks=[1], population=100)
    work = proj[1][0][1]
    assert work == pytest.approx(100 * 2.0 + 5.0)  # 100 drawn units of 2 s, and the 5 s one
    assert project(rec, ranks=[4], population=100) == project(rec, ranks=[4], population=100)


def test_the_buffer_is_three_numbers_a_unit_the_statistics_and_one_a_rank():
    rec = _recording([[1.0] * 10], population=6)
    # CartPole: one unit's sums of 4 observations, their squares and the count
    assert buffer_bytes(rec, 10, 6, 2) == 8 * (3 * 10 + 9 + 2)  # tests/test_es.py's 2 ranks + 1
    assert buffer_bytes(rec, 204, 200, 128) == 8 * (3 * 204 + 2 * 9 + 128)


def test_the_measured_share_is_the_ranks_playing_time_against_the_busiest():
    rec = _recording([[1.0, 1.0]])
    rec["busy"] = np.array([[3.0, 1.0]])
    assert measured(rec)["idle"] == pytest.approx(1 - 4 / 6)


@pytest.mark.skipif(not es_scaling.KEPT.exists(), reason="no kept recording")
def test_the_kept_recording_is_whole_and_its_projection_bounded():
    rec = dict(np.load(es_scaling.KEPT))
    G, U = rec["seconds"].shape
    P = int(rec["population_size"])
    assert U == P + 4 and G >= 2 and np.all(rec["seconds"] > 0)
    assert set(np.unique(rec["ranks"])) == set(range(int(rec["ranks_count"])))
    # the buffer as the recorded run summed it, without the trace's seconds
    assert np.all(rec["bytes"] == buffer_bytes(rec, U, P, int(rec["ranks_count"])))
    shares = summarise(project(rec, ranks=[2, 128, 1536]))
    assert shares[2][0] < shares[128][0] < shares[1536][0]
    assert shares[1536][0] >= 1 - U / 1536  # at most U ranks have a unit
