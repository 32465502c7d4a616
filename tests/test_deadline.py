"""Tier 1: the watchdog's settings (PGMPI_DEADLINE*, set_deadline) and its deadline rule."""

import pytest

from pgmpi import mpi
from pgmpi.mpi.watchdog import Watchdog, deadline_from_env


def test_the_deadline_is_on_by_default_with_generous_limits(monkeypatch):
    for name in ("PGMPI_DEADLINE", "PGMPI_DEADLINE_FACTOR", "PGMPI_DEADLINE_FLOOR"):
        monkeypatch.delenv(name, raising=False)
    assert deadline_from_env() == (1800.0, 50.0, 300.0)


def test_environment_values_and_off(monkeypatch):
    monkeypatch.setenv("PGMPI_DEADLINE", "off")
    monkeypatch.setenv("PGMPI_DEADLINE_FACTOR", "7.5")
    monkeypatch.setenv("PGMPI_DEADLINE_FLOOR", "0")
    assert deadline_from_env() == (0.0, 7.5, 0.0)


@pytest.mark.parametrize("text", ["-1", "soon", "inf", "nan"])
def test_a_bad_environment_value_names_the_variable(monkeypatch, text):
    monkeypatch.setenv("PGMPI_DEADLINE_FLOOR", text)
    with pytest.raises(mpi.ConfigError, match=f"PGMPI_DEADLINE_FLOOR must be .* got '{text}'"):
        deadline_from_env()


def test_the_deadline_is_the_smaller_rule_and_the_floor_holds():
    w = Watchdog()
    w.limit, w.factor, w.floor = 100.0, 10.0, 5.0
    assert w.deadline()[0] == 100.0  # no intervals seen yet: the limit alone
    w.recent.extend([0.1, 0.3, 0.2])
    seconds, why = w.deadline()
    assert seconds == pytest.approx(5.0) and "at least 5 s" in why  # 10 x 0.3 < floor
    w.recent.append(2.0)
    assert w.deadline()[0] == pytest.approx(20.0)
    w.recent.append(50.0)
    assert w.deadline()[0] == 100.0 and "PGMPI_DEADLINE)" in w.deadline()[1]
    w.limit = w.factor = 0.0
    assert w.deadline() == (None, "")


def test_set_deadline_checks_its_values_and_keeps_the_others():
    w = mpi.init()
    saved = (w.limit, w.factor, w.floor)
    try:
        mpi.set_deadline(12.0)
        assert (w.limit, w.factor, w.floor) == (12.0, saved[1], saved[2])
        with pytest.raises(mpi.ConfigError, match="factor must be a finite number >= 0, got -1"):
            mpi.set_deadline(factor=-1)
    finally:
        w.limit, w.factor, w.floor = saved
