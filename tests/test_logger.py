"""Tier 1: the logger (pgmpi/logger.py) writes progress.csv and truncates it on resume."""

import csv

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
    Logger(tmp_path)  # a new run starts a new file
    assert not (tmp_path / "progress.csv").exists()
