"""Tier 1: the logger (pgmpi/logger.py) writes progress.csv and truncates it on resume."""

import csv

import pytest

from pgmpi import ConfigError
from pgmpi.logger import Logger


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
    with pytest.raises(ConfigError, match="holds an earlier run .3 rows in progress.csv.: "
                       "continue it with --resume"):  # fmt: skip
        Logger(tmp_path)  # a new run does not replace an earlier one unasked
    assert len(list(csv.DictReader(open(tmp_path / "progress.csv")))) == 3
    Logger(tmp_path, overwrite=True)  # told to: a new run starts a new file
    assert not (tmp_path / "progress.csv").exists()


def test_a_log_dir_with_a_progress_csv_pgmpi_did_not_write_is_refused_even_with_overwrite(
    tmp_path,
):
    (tmp_path / "progress.csv").write_text("epoch,loss\n1,0.5\n")
    for overwrite in (False, True):
        with pytest.raises(ConfigError, match="holds a progress.csv that pgmpi did not write"):
            Logger(tmp_path, overwrite=overwrite)
    assert (tmp_path / "progress.csv").read_text() == "epoch,loss\n1,0.5\n"
