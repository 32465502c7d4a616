"""The benchmarks' tests: benchmarks/ is put on ``sys.path`` once, by this folder's conftest."""
