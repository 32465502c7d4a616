"""Tier 1: TensorBoard scalars (``pgmpi.tensorboard.ScalarWriter``), read back from the event
file by a small TFRecord reader of our own, which checks every record's checksums."""

import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from pgmpi.tensorboard import ScalarWriter


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1  # Castagnoli, reflected
        table.append(crc)
    return table


CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's checksum: CRC-32C rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path) -> list[bytes]:
    """The payloads of a TFRecord file: each record is its length (uint64), the length's
    masked CRC, the payload and the payload's masked CRC, all little-endian."""
    data, records, at = path.read_bytes(), [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked_crc(data[at : at + 8]), f"bad length checksum at {at}"
        payload = data[at + 12 : at + 12 + length]
        (payload_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert payload_crc == masked_crc(payload), f"bad payload checksum at {at}"
        records.append(payload)
        at += 12 + length + 4
    assert at == len(data)  # no torn record at the end
    return records


def read_scalars(log_dir) -> tuple[list[str], list[tuple[str, int, float]]]:
    """The file versions and the (tag, step, value) of every scalar in ``log_dir``'s one
    event file, in the order written."""
    from tensorboardX.proto.event_pb2 import Event

    (path,) = log_dir.glob("events.out.tfevents.*")
    versions, scalars = [], []
    for record in read_records(path):
        event = Event.FromString(record)
        if event.HasField("file_version"):
            versions.append(event.file_version)
        for value in event.summary.value:
            scalars.append((value.tag, event.step, value.simple_value))
    return versions, scalars


def test_crc32c_matches_the_standard_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C


def test_rows_come_back_as_scalars_named_by_their_keys(tmp_path):
    pytest.importorskip("tensorboardX")
    log_dir = tmp_path / "runs" / "seed0"  # made by the writer
    rows = [
        (100, {"episodes": 10, "charts/mean_return_100": 22.5, "perf/steps_per_s": 1234.5}),
        (250, {"episodes": 20, "charts/mean_return_100": np.float64(30.25), "note": "text"}),
        (400, {"generation": np.int64(3), "charts/running_reward": float("nan"), "ok": True}),
    ]
    with ScalarWriter(log_dir) as writer:
        written = [writer.write(row, step) for step, row in rows]
    assert written == [3, 2, 2]  # text and NaN are left out
    versions, scalars = read_scalars(log_dir)
    assert versions == ["brain.Event:2"]
    expected = [
        ("episodes", 100, 10.0),
        ("charts/mean_return_100", 100, 22.5),
        ("perf/steps_per_s", 100, 1234.5),
        ("episodes", 250, 20.0),
        ("charts/mean_return_100", 250, 30.25),
        ("generation", 400, 3.0),
        ("ok", 400, 1.0),
    ]
    assert [(tag, step) for tag, step, _ in scalars] == [(tag, step) for tag, step, _ in expected]
    assert [v for _, _, v in scalars] == pytest.approx([v for _, _, v in expected], rel=1e-6)


def test_scalars_reach_disk_within_flush_secs_before_close(tmp_path):
    pytest.importorskip("tensorboardX")
    writer = ScalarWriter(tmp_path, flush_secs=0.2)
    try:
        for step in (0, 1):
            writer.write({"charts/x": float(step)}, step)
            deadline, seen = time.monotonic() + 30, []
            while len(seen) <= step and time.monotonic() < deadline:
                time.sleep(0.05)
                try:
                    seen = read_scalars(tmp_path)[1]
                except (AssertionError, struct.error):  # caught mid-write: try again
                    pass
            assert seen == [("charts/x", s, float(s)) for s in range(step + 1)]
    finally:
        writer.close()


@pytest.mark.parametrize("step", [-1, 1.5, "3", True])
def test_a_bad_step_is_refused(tmp_path, step):
    pytest.importorskip("tensorboardX")
    with ScalarWriter(tmp_path) as writer, pytest.raises(ValueError, match="step must be"):
        writer.write({"charts/x": 1.0}, step)


def test_missing_library_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"pip install pgmpi\[tensorboard\]"):
        ScalarWriter(tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written


def test_import_pgmpi_does_not_import_the_writer():
    code = (
        "import sys, pgmpi, pgmpi.tensorboard; "
        "sys.exit('tensorboardX' in sys.modules or 'google.protobuf' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
