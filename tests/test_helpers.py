"""Tier 1: the small modules (BLAS cap, RNG streams, logger, plot, command-line types)."""

import argparse
import csv

import numpy as np
import pytest

from pgmpi import cli, rng, threads
from pgmpi.logger import Logger


def test_blas_cap_sets_the_thread_count(monkeypatch):
    before = threads.blas_info()["threads"]
    try:
        assert threads.cap_blas_threads(1)["threads"] == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        assert threads.default_threads() == 3
        monkeypatch.delenv("OMP_NUM_THREADS")
        assert threads.default_threads() >= 1
    finally:
        threads.cap_blas_threads(before)
    with pytest.raises(ValueError, match="blas_threads must be >= 1"):
        threads.cap_blas_threads(0)


def test_streams_are_keyed_by_purpose_not_by_order():
    a = rng.stream(7, rng.EPISODE, 3, 4).random(5)
    assert np.array_equal(a, rng.stream(7, rng.EPISODE, 3, 4).random(5))
    others = [
        rng.stream(7, rng.EPISODE, 4, 3),
        rng.stream(7, rng.EPISODE, 3, 5),
        rng.stream(8, rng.EPISODE, 3, 4),
        rng.stream(7, rng.EVALUATE, 3, 4),
    ]
    assert all(not np.array_equal(a, g.random(5)) for g in others)
    assert 0 <= rng.env_seed(rng.stream(0, 0)) < 2**31


def test_logger_writes_csv_and_truncates_on_resume(tmp_path, capsys):
    log = Logger(tmp_path)
    for i in range(4):
        log.log({"update": i, "charts/x": i * 0.5}, f"line {i}")
    assert "line 3" in capsys.readouterr().out
    Logger(tmp_path, resume=True).truncate(2)
    resumed = Logger(tmp_path, resume=True, quiet=True)
    resumed.log({"update": 9, "charts/x": 1.0}, "not printed")
    rows = list(csv.DictReader(open(tmp_path / "progress.csv")))
    assert [r["update"] for r in rows] == ["0", "1", "9"]
    assert "not printed" not in capsys.readouterr().out
    Logger(tmp_path)  # a new run starts a new file
    assert not (tmp_path / "progress.csv").exists()


def test_plot_draws_every_chart(tmp_path):
    from pgmpi import ParallelPG
    from pgmpi.plot import plot

    ParallelPG(
        env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, log_dir=tmp_path, quiet=True
    ).train(episodes=6)
    out = plot(tmp_path)
    assert out == tmp_path / "progress.png" and out.read_bytes()[:4] == b"\x89PNG"
    assert out.stat().st_size > 10_000  # panels of lines, not an empty canvas


@pytest.mark.parametrize(
    "parse, text, ok",
    [
        (cli.positive_int, "3", 3),
        (cli.positive_int, "0", None),
        (cli.positive_int, "x", None),
        (cli.positive_float, "0.5", 0.5),
        (cli.positive_float, "-1", None),
        (cli.positive_float, "inf", None),
        (cli.fraction, "0", 0.0),
        (cli.fraction, "1", None),
    ],
)
def test_command_line_types(parse, text, ok):
    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == ok
