"""Tier "hosts": two hosts made of Linux namespaces, ranks talking over real TCP.

Needs root, ``ip`` and ``unshare`` (iproute2, util-linux); skips with the reason otherwise.
Each host is a network + UTS namespace with its own hostname and a veth link to a bridge
(``tests/hosts/twohosts.sh``); hydra launches ranks into them in place of ssh.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pgmpi import ParallelPG
from tests.helpers.launch import run_mpi
from tests.helpers.launch_hosts import (
    HOSTS,
    link_bytes,
    run_hosts,
    start_hosts,
    two_hosts,
    unavailable,
)

WHY = unavailable()
if WHY is not None:  # printed as well as listed by -rs, so a CI log shows it
    print(f"skipped: two namespace hosts cannot be made here: {WHY}")
# Each test skips, rather than the module: a tier that collects nothing fails CI.
pytestmark = [
    pytest.mark.hosts,
    pytest.mark.skipif(WHY is not None, reason=f"two namespace hosts cannot be made here: {WHY}"),
]

H1, H2 = HOSTS
TWO_BY_TWO = {H1: 2, H2: 2}
PG = "tests/scripts/pg_run.py"
PONG = ["--env", "ALE/Pong-v5", "--slots", "3"]


@pytest.fixture  # fresh for each test: a fault test leaves its hosts broken
def hosts():
    with two_hosts() as names:
        yield names


NODE_SCRIPT = """
import socket, numpy as np
from pgmpi import mpi, threads
info = (socket.gethostname(), mpi.ranks_on_node(), threads.default_threads()[0])
big = mpi.allreduce_sum_(np.ones(1_000_000))  # 8 MB: must cross the link
rows = mpi.allgather_object(info)
if mpi.is_root():
    for r, (host, per_node, blas) in enumerate(rows):
        print("RANK", r, host, per_node, blas, int(big[0]))
"""


def test_ranks_per_node_and_blas_cap_are_counted_per_host(hosts):
    before = link_bytes(H2)
    proc = run_hosts({H1: 1, H2: 3}, ["-c", NODE_SCRIPT], timeout=120, env={"OMP_NUM_THREADS": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("RANK")]
    cores = os.cpu_count()
    assert rows == [
        ["0", H1, "1", str(cores), "4"],
        *[[str(r), H2, "3", str(max(1, cores // 3)), "4"] for r in (1, 2, 3)],
    ], proc.stdout
    # Rank 0's 8 MB went over H2's veth link, so the ranks talked over TCP.
    assert link_bytes(H2) - before > 8_000_000


def _hash(proc) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("HASH")][
        0
    ]


def _checkpoint(path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.parametrize("extra, updates", [([], 6), (PONG, 3)], ids=["cartpole", "pong"])
def test_parallel_pg_is_bit_identical_on_two_hosts_and_on_one(hosts, tmp_path, extra, updates):
    args = [PG, *extra, "--updates", str(updates), "--log-dir"]
    one = run_mpi(1, [*args, str(tmp_path / "one")], timeout=300)
    two = run_hosts(TWO_BY_TWO, [*args, str(tmp_path / "two")], timeout=300)
    assert _hash(two) == _hash(one)
    a, b = (_checkpoint(tmp_path / d / "checkpoint.npz") for d in ("one", "two"))
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key


GA_SCRIPT = """
import hashlib, sys
from pgmpi import PrunedGA, mpi
ga = PrunedGA(env="CartPole-v1", hidden_sizes=(4,), population_size=10,
              episodes_per_individual=2, seed=9, quiet=True)
ga.train(generations=3, checkpoint_path=sys.argv[1], checkpoint_every=1)
state = ga.optimizer.state()
digest = hashlib.sha256(b"".join(state[k].tobytes() for k in sorted(state))).hexdigest()
if mpi.is_root():
    print("HASH", digest, ga.steps)
"""


def test_pruned_ga_is_bit_identical_on_two_hosts_and_on_one(hosts, tmp_path):
    one = run_mpi(1, ["-c", GA_SCRIPT, str(tmp_path / "one.npz")], timeout=300)
    two = run_hosts(TWO_BY_TWO, ["-c", GA_SCRIPT, str(tmp_path / "two.npz")], timeout=300)
    assert _hash(two) == _hash(one)
    a, b = _checkpoint(tmp_path / "one.npz"), _checkpoint(tmp_path / "two.npz")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a if k != "__meta__")
    assert _counts(a) == _counts(b)  # the metadata, but for the seconds the runs took


def _counts(arrays: dict) -> dict:
    """A checkpoint's metadata without the wall-clock seconds it keeps (PrunedGA's training
    time, and the time at which it found its best network), which no two runs share."""
    meta = json.loads(arrays["__meta__"].tobytes())
    for key in ("train_seconds", "train_core_seconds"):
        assert meta.pop(key) >= 0, key
    found = meta["best_found"]
    assert found.pop("seconds") >= 0 and found.pop("core_seconds") >= 0
    return meta


DEADLINE = 10.0
# hydra runs this "python -c" as each rank: it becomes a shell that runs the real rank and
# writes its exit status to DIR/exit.<rank> (a rank killed with its shell writes nothing).
EXEC_SH = "import os, sys; os.execv('/bin/sh', ['sh', *sys.argv[1:]])"
# Each rank runs under a shell that records its exit status in DIR/exit.<rank>.
RANK_WRAPPER = 'python "$@"; echo $? > "$PGMPI_TEST_DIR/exit.$PMI_RANK"'


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _named(err: str) -> set[int]:
    """The ranks the root's watchdog message names, missing or silent."""
    line = next((x for x in err.splitlines() if x.startswith("pgmpi: watchdog:")), "")
    return {int(r) for group in re.findall(r"rank\(s\) \[([\d, ]+)\]", line)
            for r in group.split(",")}  # fmt: skip


@pytest.mark.parametrize("fault", ["freeze", "cut", "freeze-root-host"])
def test_a_host_that_stops_answering_ends_the_job(hosts, tmp_path, fault):
    """Freeze a host's ranks (SIGSTOP) or cut host 2's link mid-run: the job ends."""
    args = [PG, "--updates", "100000", "--log-dir", str(tmp_path), "--pid-file"]
    shell = ["-c", RANK_WRAPPER.replace("python", sys.executable), "rank", *args]
    env = {"PGMPI_DEADLINE": str(DEADLINE), "PGMPI_TEST_DIR": str(tmp_path)}
    job = start_hosts(TWO_BY_TWO, ["-c", EXEC_SH, *shell], env=env)
    stopped = {"freeze": [2, 3], "cut": [], "freeze-root-host": [0, 1]}[fault]
    survivors = [r for r in range(4) if r not in stopped]
    try:
        deadline = time.monotonic() + 120
        while not ((tmp_path / "checkpoint.npz").exists() and (tmp_path / "pid.3").exists()):
            assert job.poll() is None, job.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the job did not start training"
            time.sleep(0.1)
        time.sleep(2.0)  # mid-training: a checkpoint every update
        pids = {r: int((tmp_path / f"pid.{r}").read_text()) for r in range(4)}
        for r in stopped:
            os.kill(pids[r], signal.SIGSTOP)
        if fault == "cut":
            subprocess.run(["ip", "link", "set", f"{H2}v", "down"], check=True)
        at = time.monotonic()
        _, err = job.communicate(timeout=DEADLINE + 60)
        ended = time.monotonic() - at
        # The survivors end too, by the launcher or by their own watchdog (a cut-off
        # host's ranks, which cannot hear from rank 0, after the deadline and the grace).
        while any(_alive(pids[r]) for r in survivors) and time.monotonic() - at < 60:
            time.sleep(0.2)
        gone = time.monotonic() - at
        alive = [r for r in survivors if _alive(pids[r])]
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
    print(
        f"{fault}: job ended {ended:.1f} s after the fault, every survivor gone after {gone:.1f} s"
    )
    assert job.returncode != 0
    late = DEADLINE if fault != "freeze-root-host" else DEADLINE * 1.1 + 5  # the others' grace
    assert ended < late + 5, ended
    assert not alive, f"ranks {alive} still running {gone:.0f} s after the fault"
    codes = {r: (tmp_path / f"exit.{r}").read_text().strip() for r in survivors
             if (tmp_path / f"exit.{r}").exists()}  # fmt: skip
    assert all(code != "0" for code in codes.values()), codes  # no file: killed by the launcher
    if fault == "freeze-root-host":
        assert "rank 0 is not answering" in err, err
    else:
        assert _named(err) == {2, 3}, err
    agent = ParallelPG.load(tmp_path / "checkpoint.npz", quiet=True)
    assert agent.update >= 1 and np.all(np.isfinite(agent.net.params))
