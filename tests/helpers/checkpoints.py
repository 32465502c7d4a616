"""Rewrite a checkpoint's metadata in place, as an older pgmpi or a user with an editor would."""

import json

import numpy as np
import pytest

from pgmpi import ConfigError


def rewrite_meta(path, **changes) -> None:
    """Replace top-level metadata fields of the checkpoint at ``path`` with ``changes``."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(arrays["__meta__"].tobytes()) | changes
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(path, **arrays)


def with_config(path, **changes) -> None:
    """Replace settings of the checkpoint at ``path`` with ``changes``."""
    with np.load(path, allow_pickle=False) as data:
        config = json.loads(data["__meta__"].tobytes())["config"]
    rewrite_meta(path, config=config | changes)


def assert_refused_unchanged(load, path, match: str) -> None:
    """``load(path)`` raises one ConfigError matching ``match`` and leaves the file as it was."""
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=match):
        load(path, quiet=True)
    assert path.read_bytes() == before
