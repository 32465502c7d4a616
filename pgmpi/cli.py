"""Command-line parsing for the examples: flags built from the settings dataclasses, so no
default is written twice, and the run options every example shares.

A bad flag fails at parse time on every rank, with argparse's usage line and a message
naming the flag printed once (by the root), and exit status 2, before any rank starts
training.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import textwrap
import types
import typing
from dataclasses import fields, is_dataclass, replace
from pathlib import Path

from pgmpi import mpi, options


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


def add_settings(parser: argparse.ArgumentParser, defaults, label: str = "") -> None:
    """A flag for each field of the settings dataclass ``defaults`` that has one
    (``--hidden-size``, ``--sticky-actions/--no-sticky-actions``, ...; :func:`flag`), its
    help the field's doc and ``defaults``' value (after ``label``, e.g. "fast preset: "). A
    flag not given is absent from the parsed arguments: :func:`settings_given` reads those
    that were."""
    docs = field_docs(type(defaults))
    hints = typing.get_type_hints(type(defaults))
    for f in fields(defaults):
        kwargs = flag(f.name, hints[f.name])
        if kwargs is None:
            continue
        value = getattr(defaults, f.name)
        shown = " ".join(map(str, value)) if isinstance(value, list) else value
        name = "--" + f.name.replace("_", "-")
        text = f"{docs.get(f.name, '')} ({label}{shown})".lstrip()
        parser.add_argument(name, help=text, default=argparse.SUPPRESS, **kwargs)


def flag(name: str, hint) -> dict | None:
    """How setting ``name``, annotated ``hint``, is parsed as a flag (argparse's keyword
    arguments), or None for no flag (:data:`NO_FLAG`): a ``Literal``'s values are its
    choices, a bool is ``--x/--no-x``, a list takes one value or more (``nargs="+"``); the
    type is the annotation's (``X | None``: X's), or the stricter parser of :data:`PARSERS`."""
    if name in NO_FLAG:
        return None
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: X
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is typing.Literal:
        return dict(type=str, choices=list(typing.get_args(hint)))
    if hint is bool:
        return dict(action=argparse.BooleanOptionalAction)
    if typing.get_origin(hint) is list:
        return dict(type=PARSERS.get(name, typing.get_args(hint)[0]), nargs="+")
    return dict(type=PARSERS.get(name, hint))


def field_docs(cls) -> dict[str, str]:
    """Each field's doc, by name: the string under it in the source of ``cls`` (or of a
    dataclass it derives from), as CleanRL's ``Args`` writes them, on one line; none for a
    class whose source cannot be read."""
    docs = {}
    for klass in reversed([c for c in cls.__mro__ if is_dataclass(c)]):
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        except (OSError, TypeError):  # defined where no source file is kept
            continue
        docs |= {
            a.target.id: " ".join(b.value.value.split())
            for a, b in zip(body, body[1:], strict=False)
            if isinstance(a, ast.AnnAssign) and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)
        }  # fmt: skip
    return docs


def settings_given(args: argparse.Namespace, defaults) -> dict:
    """The settings of ``defaults``' class given as flags, by name."""
    return {f.name: getattr(args, f.name) for f in fields(defaults) if hasattr(args, f.name)}


def add_run_flags(parser: argparse.ArgumentParser, log_dir: str, step: str, train) -> None:
    """The flags of a run that do not change its results: --log-dir, --checkpoint-every
    (default: ``train``'s, the algorithm's ``train`` method), --resume, --overwrite,
    --quiet, --trace and --tensorboard (``step``: "update" or "generation")."""
    every = inspect.signature(train).parameters["checkpoint_every"].default
    parser.add_argument(
        "--log-dir",
        type=Path,
        default=Path(log_dir),
        help=f"folder for progress.csv and checkpoint.npz ({log_dir})",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=positive_int,
        default=every,
        help=f"save a checkpoint every this many {step}s ({every})",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from LOG_DIR/checkpoint.npz: its settings win over the flags (those "
        "ignored are named); the limits and --checkpoint-every apply",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier run's logs and checkpoint in LOG_DIR (without it, a used "
        "log dir is refused: continue it with --resume)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the final line")
    parser.add_argument(
        "--trace",
        action="store_true",
        help=f"write LOG_DIR/trace.csv: each rank's seconds per {step} "
        "(python -m pgmpi.plot --timeline LOG_DIR)",
    )
    parser.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write every row as TensorBoard scalars in LOG_DIR (pip install "
        "pgmpi[tensorboard]; tensorboard --logdir LOG_DIR)",
    )


def make_agent(cls, parser: ArgumentParser, args: argparse.Namespace, env: str, defaults):
    """The example's agent: with ``--resume``, ``cls.load`` from LOG_DIR/checkpoint.npz
    (naming the settings flags it ignores); else a new one with ``defaults`` and the
    settings flags given. Collective: every rank must call this."""
    run = {k: v for k, v in vars(args).items() if k in options.NAMES}  # the run option flags
    given = settings_given(args, defaults)
    if not args.resume:
        return cls(env=env, config=replace(defaults, **given), **run)
    agent = cls.load(args.log_dir / "checkpoint.npz", env=env, **run)
    extra = {"preset"} & parser.given()  # a preset flag is always ignored on resume
    warn_ignored_on_resume(args, set(given) | extra, agent.config)
    return agent


def positive_int(text: str) -> int:
    """An int >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_int_or_none(text: str) -> int | None:
    """An int >= 1, or ``none`` (None: the setting is off)."""
    return None if text.lower() == "none" else positive_int(text)


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


def non_negative_float_or_none(text: str) -> float | None:
    """A finite float >= 0, or ``none`` (None: the setting is off)."""
    return None if text.lower() == "none" else non_negative_float(text)


def fraction(text: str) -> float:
    """A number in [0, 1)."""
    value = _number(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def fraction_or_none(text: str) -> float | None:
    """A number in [0, 1), or ``none`` (None: the setting's adaptive or off value)."""
    return None if text.lower() == "none" else fraction(text)


def frame_skip(text: str) -> int | list:
    """``4`` (every agent step 4 frames) or ``2-4`` (drawn from 2, 3, 4 at every step)."""
    try:
        low, dash, high = text.partition("-")
        value = [int(low), int(high)] if dash else int(low)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected N or LOW-HIGH, e.g. 4 or 2-4, got {text!r}"
        ) from None
    if min(value if isinstance(value, list) else [value]) < 1:
        raise argparse.ArgumentTypeError(f"frames must be >= 1, got {text}")
    return value


# Settings without a flag: the post's or the env's, or a switch kept for tests.
NO_FLAG = {"gamma", "whole_games", "batch_gradient", "max_episode_steps", "exact_reduction"}

# The settings a flag parses more strictly than their annotation's type, so that a value no
# run could use fails at parse time (exit status 2), naming the flag.
PARSERS = {
    **dict.fromkeys(["hidden_size", "hidden_sizes", "slots", "steps_per_slot", "population_size",
                     "episodes_per_individual", "noise_table_size", "entropy_steps",
                     "synapses"],
                    positive_int),
    **dict.fromkeys(["decay_rate", "elite_fraction", "prune_rate"], fraction),
    "mutation_rate": fraction_or_none,
    **dict.fromkeys(["entropy_bonus", "value_baseline", "average_half_life"],
                    non_negative_float),
    "entropy_final": non_negative_float_or_none,
    "learning_rate": positive_float,
    **dict.fromkeys(["lr_decay_steps", "noop_from"], positive_int_or_none),
    "frame_skip": frame_skip,
}  # fmt: skip
