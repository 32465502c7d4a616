"""Helpers shared by the tests, not tests themselves: ``launch`` runs scripts under mpirun in
a subprocess (tier 3), ``launch_hosts`` runs them over two namespace hosts (the hosts tier),
``checkpoints`` rewrites a checkpoint's metadata as an older pgmpi wrote it."""
