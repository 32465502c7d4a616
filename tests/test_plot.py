"""Tier 1: ``pgmpi.plot`` draws every chart of a run's progress.csv."""


def test_plot_draws_every_chart(tmp_path):
    from pgmpi import ParallelPG
    from pgmpi.plot import plot

    ParallelPG(
        env="CartPole-v1", hidden_size=8, slots=2, steps_per_slot=1, log_dir=tmp_path, quiet=True
    ).train(episodes=6)
    out = plot(tmp_path)
    assert out == tmp_path / "progress.png" and out.read_bytes()[:4] == b"\x89PNG"
    assert out.stat().st_size > 10_000  # panels of lines, not an empty canvas
