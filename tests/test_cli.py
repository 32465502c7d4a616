"""Tier 1: the command-line argument types (pgmpi/cli.py)."""

import argparse

import pytest

from pgmpi import cli


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
        (cli.fraction_or_none, "0.03", 0.03),
        (cli.fraction_or_none, "1", None),
        (cli.frame_skip, "4", 4),
        (cli.frame_skip, "2-4", [2, 4]),
        (cli.frame_skip, "0", None),
        (cli.frame_skip, "2-", None),
        (cli.frame_skip, "two", None),
    ],
)
def test_command_line_types(parse, text, ok):
    if ok is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == ok


def test_none_turns_a_setting_back_to_its_adaptive_value():
    assert cli.fraction_or_none("none") is None and cli.fraction_or_none("None") is None
