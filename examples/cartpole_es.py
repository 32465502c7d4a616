"""ParallelES reaches CartPole-v1's maximum return, 500, sending only returns between ranks.

    python examples/cartpole_es.py
    mpirun -n 2 python examples/cartpole_es.py --seed 3

Evolution strategies with a shared noise table (Salimans et al., 2017): every rank builds
the same table of Gaussian noise, so a perturbation is an index into it, and each episode
sends only its return. Training stops once the unperturbed network's episodes of a
generation all reach 500; it then plays 100 new episodes. Prints "reached 500 in N
generations, S seconds; ..." (or "did not reach 500 ...") and exits 0 only if it got there.
Results depend on the seed, never on the number of ranks.
"""

import sys
import time
from dataclasses import replace

from pgmpi import ParallelES, mpi
from pgmpi.cli import ArgumentParser, add_run_flags, add_settings, make_agent, positive_int
from pgmpi.config import ESConfig

TARGET = 500.0  # CartPole-v1's time limit: the highest return there is
SETTINGS = replace(ESConfig(), hidden_sizes=[32], population_size=32, noise_table_size=1_000_000)


def main() -> int:
    p = ArgumentParser(__doc__)
    p.add_argument(
        "--generations", type=positive_int, default=100, help="give up after this many (100)"
    )
    add_settings(p, SETTINGS)
    add_run_flags(p, "runs/cartpole_es", "generation", ParallelES.train)
    args = p.parse_args()
    mpi.set_deadline(args.deadline)

    start = time.perf_counter()
    es = make_agent(ParallelES, p, args, "CartPole-v1", SETTINGS)
    rows = []
    es.train(
        generations=args.generations,
        target_return=TARGET,
        checkpoint_path=args.log_dir / "checkpoint.npz",
        checkpoint_every=args.checkpoint_every,
        callback=rows.append,
    )
    seconds = time.perf_counter() - start
    reached = bool(rows) and es.reached(rows[-1], TARGET)
    replay = es.evaluate(episodes=100)
    if mpi.is_root():
        print(
            f"{'reached' if reached else 'did not reach'} {TARGET:.0f} in {es.generation} "
            f"generation(s), {seconds:.1f} seconds, {es.steps} env steps; current network: "
            f"mean return {replay:.1f} over 100 new episodes",
            flush=True,
        )
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
