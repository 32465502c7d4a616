"""What this machine's memory holds: each check names the settings that would not fit and
what they would need, before anything big is made (:mod:`pgmpi.config`'s ``check()`` calls
them with the env's sizes).
"""

from __future__ import annotations

import os

from pgmpi import genomes, networks
from pgmpi.settings import must


def memory_bytes() -> int:
    """This machine's physical memory, in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


# The least memory one game takes on a rank (an env object, its observation and state): a
# lower bound, so that a slot count no machine could hold is named before it is made.
GAME_BYTES = 10_000


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def slots_problem(slots: int, ranks: int, local: int) -> str | None:
    """Why ``slots`` games shared over ``ranks`` ranks, ``local`` on the rank with the most,
    cannot fit in this machine's memory (at least :data:`GAME_BYTES` a game), or None.
    Checked before the games are listed or made; :func:`pg_problem` then checks the network
    and the steps kept."""
    need = local * GAME_BYTES
    if need <= memory_bytes():
        return None
    return (
        f"slots={slots} over {ranks} rank(s) is {local:,} games per rank, which need at "
        f"least {_gib(need)} per rank, more than this machine's {_gib(memory_bytes())} of "
        "memory: use fewer slots or more ranks"
    )


def ga_problem(probe, cfg) -> str | None:
    """Why a PrunedGA rank cannot fit in this machine's memory, naming the settings and what
    they would need, or None (also None without a ``probe``, the env's sizes). Per weight:
    each individual's mask (1 byte) and the float64 draws of a generation's pruning (8), the
    network's own weights and their activity (16); per episode of a generation: its steps,
    seconds and rank, and its slot on the board of units played ahead (64 bytes)."""
    if probe is None:
        return None
    sizes = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
    if cfg.genome == "signed-dag":  # every layer fed by all earlier ones
        weights = cfg.synapses * sum(a * b for a, b in genomes.dag_shapes(sizes))
    else:
        weights = sum(a * b for a, b in zip(sizes, sizes[1:], strict=False))
    P, E = cfg.population_size, cfg.episodes_per_individual
    need = 9 * P * weights + 16 * weights + 64 * P * E
    if need <= memory_bytes():
        return None
    return (
        f"hidden_sizes={list(cfg.hidden_sizes)} ({weights:,} connections with "
        f"{probe.n_inputs} inputs), population_size={P} and episodes_per_individual={E} need "
        f"about {_gib(need)} per rank (the population's masks, a generation's draws and its "
        f"episodes), more than this machine's {_gib(memory_bytes())} of memory"
    )


def pg_problem(n_inputs: int, n_actions: int, cfg, local_slots: int) -> str | None:
    """Why ParallelPG's rank cannot fit in this machine's memory, naming what it would need,
    or None (checked before anything big is made). Per parameter: float32 parameters and
    Adam's two moments, the int64 exact sum and the float32 gradient (24 bytes); per agent
    step kept for the gradient: its hidden layer and logits (float32) and some overhead."""
    h = cfg.hidden_size
    params = (n_inputs + n_actions) * h
    steps = cfg.steps_per_slot * local_slots
    need = 24 * params + steps * (4 * (h + n_actions) + 200)
    if need <= memory_bytes():
        return None
    what = f"hidden_size={h} with {n_inputs} inputs, steps_per_slot={cfg.steps_per_slot}"
    return (
        f"{what} needs about {need / 2**30:.1f} GiB per rank (parameters, optimizer state, "
        f"the exact sum and the steps kept for the gradient), more than this machine's "
        f"{memory_bytes() / 2**30:.1f} GiB of memory"
    )


def es_problem(probe, cfg, ranks: int) -> str | None:
    """Why ParallelES's noise table does not fit, or None (also None without a ``probe``): it
    must hold a perturbation (every parameter, biases included), and the ``ranks`` tables of
    a node (float32, one a rank) must fit in half its memory."""
    if probe is None:
        return None
    sizes = (probe.n_inputs, *cfg.hidden_sizes, probe.n_actions)
    n_params = sum(a * b for a, b in networks.mlp_shapes(sizes))
    size, gib = cfg.noise_table_size, 4 * cfg.noise_table_size * ranks / 2**30
    if size < n_params:
        return must("noise_table_size", size, f"at least a perturbation: {n_params} parameters")
    if gib > memory_bytes() / 2**31:
        return must("noise_table_size", size, f"small enough for {ranks} ranks' tables "
                    f"({gib:.1f} GiB) to fit in half this node's memory")  # fmt: skip
    return None
