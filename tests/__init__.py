"""pgmpi's test suite, a package so that tests import their helpers as ``tests.helpers``.

pytest's default import mode puts the folder above this package (the repository root) on
``sys.path`` and imports each test as ``tests.test_NAME``; only tests/benchmarks/conftest.py
edits ``sys.path`` (it adds benchmarks/, whose scripts are not a package).
"""
