"""Tier 1: the docs' figures name runs in words (no tag in a legend), and the PrunedGA bars
are drawn from the kept recordings."""

import json

import common
import ga_figures
import numpy as np
import pytest
from ga_simulate import by_generation


def test_a_runs_tag_reads_as_words():
    assert common.run_label("s1536-b262k-v05-0") == (
        "1,536 slots, the 1,536-rank rule (171 steps a slot), "
        "the default before the entropy schedule, seed 0"
    )
    assert common.run_label("fast-sticky-ent-1") == (
        "sticky actions, the default before the baseline, seed 1"
    )


@pytest.mark.parametrize("kept", ["slots_to_score.json", "time_to_score.json"])
def test_every_kept_run_has_a_label_in_words(kept):
    for name in json.loads((common.RECORDINGS / kept).read_text()):
        label = common.run_label(name)
        *parts, seed = name.split("-")
        assert seed.isdigit() and label.endswith(f"seed {seed}"), name
        for part in parts:  # every part of the tag said in words, none left as it was
            assert part in common.WORDS or part[1:].isdigit(), (name, part)
            assert part not in label.split(", "), (name, label)


def test_the_bars_show_each_runs_whole_share_against_the_targets(tmp_path):
    costs = dict(np.load(ga_figures.recording("signedrun1")))
    idle = by_generation([costs])
    whole = ga_figures.whole_run(idle, "ahead", 128)
    rank_s = idle["rank_s"]["ahead"][128]
    assert whole == pytest.approx(np.sum(idle["ahead"][128] * rank_s) / rank_s.sum())
    assert 0 < whole < 0.10  # run 2 meets the 128-rank target with playing ahead
    out = ga_figures.plot_idle({"run 2: seed 1": idle}, tmp_path / "bars.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_a_figure_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    path = tmp_path / "figure.png"
    path.write_bytes(b"the figure before")
    fig = plt.figure()

    def killed(part, **kwargs):  # a run killed while writing: part of the file, then no more
        open(part, "wb").close()
        raise KeyboardInterrupt

    monkeypatch.setattr(fig, "savefig", killed)
    with pytest.raises(KeyboardInterrupt):
        common.save_figure(fig, path)
    assert path.read_bytes() == b"the figure before"
    monkeypatch.undo()
    assert common.save_figure(plt.figure(), path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]  # the part became it


def test_every_docs_figure_is_one_that_figures_py_draws():
    """Each PNG in docs/figures is named among what ``benchmarks/figures.py --docs`` writes
    (its docstring lists them, and the launch test checks the drawing), and each kept input
    the docstring names is tracked."""
    import re

    import figures

    drawn = set(re.findall(r"``(\w+\.png)``", figures.__doc__))
    drawn |= set(re.findall(r"``(ga_\w+\.png)``", ga_figures.__doc__ or ""))
    # seed_sweep-NAME.png: one for each Pong screen that seed_sweep.py --screen kept
    drawn |= {p.with_suffix(".png").name for p in common.RECORDINGS.glob("seed_sweep-*.json")}
    shown = {p.name for p in common.DOCS_FIGURES.glob("*.png")}
    assert shown - drawn == set(), sorted(shown - drawn)
    for kept in ("scaling", "throughput", "seed_sweep", "time_to_score", "slots_to_score"):
        assert (common.RECORDINGS / f"{kept}.json").exists(), kept
    assert (common.RECORDINGS / "timeline" / "trace.csv").exists()
