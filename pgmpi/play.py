"""Watch a trained agent play and save it as an animated GIF.

    python -m pgmpi.play runs/pong/checkpoint.npz --gif pong.gif
    python -m pgmpi.play runs/walker/checkpoint.npz --gif walker.gif --every 2 --scale 0.5

Loads a ParallelPG, PrunedGA or ParallelES checkpoint (whichever wrote it), plays ``--episodes`` new
episodes of its env in one process, as trained (for Pong: with the run's sticky actions and
frame skip), rendering every frame (``render_mode="rgb_array"``; for Pong, the emulator's
screen after each agent step), and writes every ``--every``-th one, scaled by ``--scale``,
to the GIF with Pillow (``pip install pgmpi[play]``; it writes identical consecutive frames
as one that lasts as long). ParallelPG samples its actions from the policy, as in training
and in ``evaluate`` (``--greedy`` takes the most likely one); PrunedGA plays the best
network it has seen, ParallelES its current one. Episodes are seeded from ``--seed``.
Prints each episode's return (and, for Pong, the points won and lost), then the mean with
its 95% confidence interval and how the episodes were played. A missing, corrupt or
foreign checkpoint is one line on stderr and exit status 2, and so is a GIF that cannot be
written (checked before playing). Given a log dir, it plays the ``checkpoint.npz`` in it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pgmpi import checkpoint, noop, rng, rollout
from pgmpi.envs import PONG_ID, Game, make_gym
from pgmpi.evaluation import Evaluation
from pgmpi.pong import PongGame
from pgmpi.pong import protocol as pong_protocol
from pgmpi.rollout import sample

ALGORITHMS = ("ParallelPG", "PrunedGA", "ParallelES")


def _policy(agent, algorithm: str, stream: np.random.Generator, greedy: bool):
    """The agent's action for a game, as in training: ParallelPG samples from the policy it
    plays (``agent.policy``, the running average of its parameters unless it keeps none; or,
    ``greedy``, takes the most likely action); PrunedGA's best network acts, ParallelES's
    current one."""
    if algorithm in ("PrunedGA", "ParallelES"):
        return lambda game: agent.act(game.obs)

    def act(game):
        probs = agent.policy.forward([game.x])[0]
        return int(np.argmax(probs[0])) if greedy else sample(probs, [stream.random()])[0]

    return act


def load(path: Path):
    """(agent, algorithm name) from ``path``; ValueError naming what is wrong otherwise."""
    from pgmpi import ParallelES, ParallelPG, PrunedGA

    algorithm = str(checkpoint.read(path)[1].get("algorithm"))
    if algorithm not in ALGORITHMS:
        raise ValueError(
            f"checkpoint {str(path)!r} was written by {algorithm!r}, not {', '.join(ALGORITHMS)}"
        )
    cls = {"ParallelPG": ParallelPG, "PrunedGA": PrunedGA, "ParallelES": ParallelES}[algorithm]
    agent = cls.load(path, quiet=True, blas_threads=1)
    if agent.config["env"].startswith("custom"):
        raise ValueError(f"checkpoint {str(path)!r}: its env was made by a function, not an id")
    return agent, algorithm


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m pgmpi.play",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "checkpoint",
        type=Path,
        help="a ParallelPG, PrunedGA or ParallelES checkpoint.npz, or its log dir",
    )
    p.add_argument("--gif", type=Path, required=True, help="the animated GIF to write")
    p.add_argument("--episodes", type=int, default=1, help="episodes to play (1)")
    p.add_argument("--max-frames", type=int, help="stop once this many frames are kept (none)")
    p.add_argument("--fps", type=float, default=25.0, help="frames per second, to 1/100 s (25)")
    p.add_argument("--every", type=int, default=1, help="keep every N-th frame (1: all)")
    p.add_argument("--scale", type=float, default=1.0, help="scale frames by this (1.0)")
    p.add_argument("--greedy", action="store_true", help="ParallelPG: most likely action")
    p.add_argument("--seed", type=int, default=0, help="seed of the episodes (0)")
    args = p.parse_args(argv)
    if args.gif.is_dir():
        p.error(f"--gif {args.gif} is a folder: give the GIF file to write")
    for name in ("episodes", "max_frames", "every"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if not (0 < args.fps <= 100 and 0 < args.scale <= 4 and args.seed >= 0):
        p.error("--fps must be in (0, 100], --scale in (0, 4], --seed >= 0")
    try:
        from PIL import Image
    except ImportError:
        print("pgmpi.play: error: needs Pillow: pip install pgmpi[play]", file=sys.stderr)
        return 2
    if args.checkpoint.is_dir():  # a log dir: its checkpoint
        args.checkpoint = args.checkpoint / "checkpoint.npz"
    problem = checkpoint.unwritable(args.gif, f"--gif {args.gif}")  # before minutes of play
    if problem is not None:
        print(f"pgmpi.play: error: {problem}", file=sys.stderr)
        return 2
    try:
        agent, algorithm = load(args.checkpoint)
    except ValueError as e:  # ConfigError is one: every bad file is named, on one line
        print(f"pgmpi.play: error: {e}", file=sys.stderr)
        return 2

    kept: list[Image.Image] = []
    seen = 0

    def frames(image: np.ndarray) -> bool:
        nonlocal seen
        if seen % args.every == 0:
            img = Image.fromarray(np.asarray(image, dtype=np.uint8))
            if args.scale != 1.0:
                size = (
                    max(1, round(img.width * args.scale)),
                    max(1, round(img.height * args.scale)),
                )
                img = img.resize(size, Image.Resampling.NEAREST)
            kept.append(img)
        seen += 1
        return args.max_frames is None or len(kept) < args.max_frames

    returns = []
    env_id = agent.config["env"]
    pong = env_id == PONG_ID
    sticky = agent.config.get("sticky_actions", False)  # as trained; a PrunedGA run has none
    skip = agent.config.get("frame_skip", 4)
    with_noop = noop.due(agent.config, getattr(agent, "steps", 0))  # noop, or noop_from
    for e in range(args.episodes):
        stream = rng.stream(args.seed, rng.EVALUATE, 0, e)
        if pong:
            game = PongGame(sticky, frame_skip=skip, noop=with_noop)
        else:
            game = Game(lambda: make_gym(env_id, render_mode="rgb_array"))
        act = _policy(agent, algorithm, stream, args.greedy)
        rewards, finished = rollout.episode(game, act, stream, frames)
        game.close()
        ret = sum(rewards, 0.0)
        steps = len(rewards)
        won, lost = sum(r > 0 for r in rewards), sum(r < 0 for r in rewards)
        returns.append(ret)
        points = f", points {won}-{lost}" if pong else ""
        cut = "" if finished else " (cut by --max-frames: not finished)"
        print(f"episode {e + 1}: return {ret:+.1f} in {steps:,} steps{points}{cut}", flush=True)
        if not finished:
            break
    ms = 10 * max(1, round(100 / args.fps))  # GIF times frames in hundredths of a second
    try:
        kept[0].save(args.gif, save_all=True, append_images=kept[1:], duration=ms, loop=0)
    except OSError as e:  # checked before playing, but a disk can fill meanwhile
        print(
            f"pgmpi.play: error: cannot write --gif {args.gif}: {e.strerror or e}", file=sys.stderr
        )
        return 2
    protocol = pong_protocol(sticky, skip) if pong else "env"
    policy = {"PrunedGA": "best network", "ParallelES": "current network"}.get(
        algorithm, "greedy" if args.greedy else "sampled"
    )
    score = Evaluation(np.array(returns), f"{protocol}, {policy}")
    print(
        f"score {score}, {algorithm} on {env_id}; wrote {args.gif}: {len(kept)} frames of {ms} ms",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
