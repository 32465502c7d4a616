"""What older checkpoints hold that today's settings do not: settings added since
(:data:`PG_BEFORE`, the value a run played before each existed) and settings screened, not
adopted, then removed (:data:`RETIRED`). :mod:`pgmpi.checkpoint` and the loaders use them so a
checkpoint of any version resumes as it ran, or is refused naming what is gone.
"""

from __future__ import annotations

# What ParallelPG did before each of these settings existed: a checkpoint written then lacks
# the setting, and resumes with this value (not today's default), so it plays on as it ran.
PG_BEFORE = dict(sticky_actions=False, frame_skip=4, lr_decay_steps=None, entropy_bonus=0.0,
                 average_half_life=0.0, value_baseline=0.0, decay_from=0,
                 entropy_final=None, standardise_over="game", noop=False,
                 noop_from=None)  # fmt: skip
# Settings screened, not adopted, then removed (docs/screens.md: each screen and the commit
# that ran it), with the value today's code plays: a checkpoint that holds one at that value
# loads as before; at another (PPO's epochs > 1, GAE's lambda, ...), code that is gone
# trained it. clip, PPO's, mattered only with epochs > 1.
PG_RETIRED = dict(gae_lambda=None, value_lr_scale=1.0, epochs=1, clip=0.2,
                  deterministic_games=0.0, frame_stack=0, paddle_column=False)  # fmt: skip
# PrunedGA's, the walker screens of issue 49: the signed weights' scale, a bias input, an
# operator giving connections back, the best re-evaluated, training episodes ended when they
# stall or charged for their actions, and one generation's individuals on common episodes.
GA_RETIRED = dict(weight_scale=1.0, bias=False, restore_rate=0.0, best_reevaluation=False,
                  stall_steps=None, action_cost=0.0, common_episodes=False)  # fmt: skip
RETIRED = PG_RETIRED | GA_RETIRED  # no name in both


def without_retired(config: dict) -> tuple[dict, str | None]:
    """``config`` (a checkpoint's settings) without :data:`RETIRED`'s, and the problem if
    one of them held another value than today's code plays (None if none did)."""
    changed = [f"{k}={config[k]!r}" for k, v in RETIRED.items()
               if k in config and k != "clip" and config[k] != v]  # fmt: skip
    kept = {k: v for k, v in config.items() if k not in RETIRED}
    if not changed:
        return kept, None
    return kept, (
        f"trained with {', '.join(changed)}: settings screened and removed "
        "(docs/screens.md names the commit that ran them)"
    )
