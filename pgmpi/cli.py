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
        """argparse's, plus ``--deadline``, which every example has (the watchdog's limit:
        the example passes it to :func:`pgmpi.mpi.set_deadline`)."""
        if "--deadline" not in self._option_string_actions:
            self.add_argument(
                "--deadline",
                type=non_negative_float,
                metavar="SECONDS",
                help="end the job (MPI_Abort, naming the ranks missing) if a rank waits this "
                "long in one collective; 0: no fixed limit (PGMPI_DEADLINE, else 1800)",
            )
        return super().parse_args(args, namespace)

    def _print_message(self, message, file=None):
        if mpi.is_root():
            super()._print_message(message, file)

    def given(self, argv: list[str] | None = None) -> set[str]:
        """The names (``dest``) of the flags given on the command line, defaults aside."""
        saved = [(action, action.default) for action in self._actions]
        for action, _ in saved:
            action.default = argparse.SUPPRESS
        try:
            return set(vars(self.parse_args(argv)))
        finally:
            for action, default in saved:
                action.default = default


def warn_ignored_on_resume(args: argparse.Namespace, given: set[str], config: dict) -> None:
    """Print, on the root, the settings flags given with ``--resume`` that differ from the
    checkpoint's ``config`` (which wins); ``given``: the flags to check, among those given.
    A flag that is not a key of ``config`` (a preset) is always named."""
    ignored = [
        f"--{k.replace('_', '-')} {getattr(args, k)}"
        + (f" (the checkpoint's: {config[k]})" if k in config else "")
        for k in sorted(given)
        if k not in config or config[k] != getattr(args, k)
    ]
    if ignored and mpi.is_root():
        print(
            "warning: --resume continues with the checkpoint's settings; ignored: "
            + ", ".join(ignored),
            flush=True,
        )


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
