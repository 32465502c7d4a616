# The two commands a new user runs (see README): `make demo` and `make test`.
# Each creates .venv (with the mpich wheel, so mpirun works without a system MPI) if needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
MPIRUN := $(VENV)/bin/mpirun
RANKS ?= 2

.PHONY: demo test lint tier1 tier2 tier3 tier-hosts tier-slurm clean

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

# CartPole to a solved score on 2 ranks, then 3 minutes of Pong from pixels on 2 ranks.
demo: $(VENV)/.installed
	timeout 600 $(MPIRUN) -n $(RANKS) $(PY) examples/cartpole.py --log-dir runs/cartpole --overwrite
	timeout 600 $(MPIRUN) -n $(RANKS) $(PY) examples/pong.py --minutes 3 --log-dir runs/pong-demo --overwrite
	$(PY) -m pgmpi.plot runs/pong-demo --out runs/pong-demo/progress.png

# Lint, then the three test tiers, two hosts over TCP and a real Slurm; every mpirun is
# bounded by timeout.
test: $(VENV)/.installed lint tier1 tier2 tier3 tier-hosts tier-slurm

lint: $(VENV)/.installed
	$(VENV)/bin/ruff format --check pgmpi tests examples benchmarks
	$(VENV)/bin/ruff check pgmpi tests examples benchmarks

tier1: $(VENV)/.installed
	timeout 1200 $(PY) -m pytest -q -m "not mpi and not launcher and not hosts and not slurm" tests

tier2: $(VENV)/.installed
	timeout 600 $(MPIRUN) -n 1 $(PY) -m pytest -q -p no:cacheprovider -m mpi tests
	timeout 600 $(MPIRUN) -n 2 $(PY) -m pytest -q -p no:cacheprovider -m mpi tests

tier3: $(VENV)/.installed
	timeout 2400 $(PY) -m pytest -q -m launcher tests

# Two hosts from Linux namespaces, ranks over TCP (tests/hosts/twohosts.sh); needs root,
# ip and unshare, and skips with the reason printed where it cannot run.
tier-hosts: $(VENV)/.installed
	timeout 900 $(PY) -m pytest -q -rs -s -m hosts tests

# A one-host Slurm (apt's slurm-wlm and munge, tests/slurm/): sbatch, srun --mpi=pmi2, a
# refused plain srun, the BLAS cap. Prints "skipped: REASON" and passes where Slurm cannot run
# (not root, no apt, daemons that do not start); its daemons are stopped by PID.
tier-slurm: $(VENV)/.installed
	timeout 1200 tests/slurm/cluster.sh test $(PY)

clean:
	rm -rf $(VENV) runs *.egg-info
