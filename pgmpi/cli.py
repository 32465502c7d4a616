"""Command-line parsing for the examples: a bad flag fails at parse time on every rank, with
argparse's usage line and a message naming the flag printed once (by the root), and exit
status 2, before any rank starts training."""

from __future__ import annotations

import argparse

from pgmpi import mpi


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with help and errors printed by the root rank only.

    Every rank parses the same command line, so every rank exits at the same point."""

    def __init__(self, doc: str, **kwargs):
        super().__init__(
            description=doc, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs
        )

    def parse_args(self, args=None, namespace=None):
        """argparse's, plus ``--deadline``, which every example has: the watchdog's limit."""
        if "--deadline" not in self._option_string_actions:
            self.add_argument(
                "--deadline",
                type=non_negative_float,
                metavar="SECONDS",
                help="end the job (MPI_Abort, naming the ranks missing) if a rank waits this "
                "long in one collective; 0: no fixed limit (PGMPI_DEADLINE, else 1800)",
            )
        parsed = super().parse_args(args, namespace)
        if parsed.deadline is not None:
            mpi.set_deadline(parsed.deadline)
        return parsed

    def _print_message(self, message, file=None):
        if mpi.is_root():
            super()._print_message(message, file)


def positive_int(text: str) -> int:
    """An int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def positive_float(text: str) -> float:
    """A finite float > 0."""
    value = _number(text)
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite float >= 0."""
    value = _number(text)
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def fraction(text: str) -> float:
    """A number in [0, 1)."""
    value = _number(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value
