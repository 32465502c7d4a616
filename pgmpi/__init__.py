"""pgmpi: minimal MPI-parallel reinforcement learning in numpy.

``from pgmpi import ParallelPG`` (or PrunedGA, ParallelES); see README.md. Importing pgmpi
loads numpy, mpi4py and threadpoolctl only: gymnasium and ale-py are imported when an
environment is made.
"""

from pgmpi.es import ParallelES
from pgmpi.ga import PrunedGA
from pgmpi.mpi import CollectiveError, ConfigError, NonFiniteError, WriteError
from pgmpi.pg import ParallelPG
from pgmpi.version import __version__

__all__ = [
    "ParallelES",
    "ParallelPG",
    "PrunedGA",
    "CollectiveError",
    "ConfigError",
    "NonFiniteError",
    "WriteError",
    "__version__",
]
