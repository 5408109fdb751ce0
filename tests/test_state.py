"""Architectural state, sparse memory and the .npz snapshot format."""

import numpy as np
import pytest

from zatile.sim.state import ArchState, Memory, MemoryFault, SnapshotError


def random_state(svl=256, seed=0):
    rng = np.random.default_rng(seed)
    svl_b = svl // 8
    return ArchState(svl=svl, svcr=3, za=rng.integers(0, 256, (svl_b, svl_b)),
                     z=rng.integers(0, 256, (32, svl_b)), p=rng.integers(0, 256, (16, svl_b // 8)),
                     ffr=rng.integers(0, 256, svl_b // 8), fpcr=0x01C00000, fpsr=0x9F,
                     x=rng.integers(0, 2**63, 31, dtype=np.uint64), sp=0x8000,
                     memory=Memory({0x1000: rng.integers(0, 256, 64, dtype=np.uint8)}))


def test_snapshot_round_trip(tmp_path):
    state = random_state()
    state.save(tmp_path / "s.npz")
    loaded = ArchState.load(tmp_path / "s.npz")
    for name in ("svl", "svcr", "fpcr", "fpsr", "sp"):
        assert getattr(loaded, name) == getattr(state, name)
    for name in ("za", "z", "p", "ffr", "x"):
        assert np.array_equal(getattr(loaded, name), getattr(state, name))
    assert loaded.memory == state.memory


def test_missing_keys_mean_zero(tmp_path):
    np.savez(tmp_path / "s.npz", svcr=np.array(2))
    state = ArchState.load(tmp_path / "s.npz", svl=128)
    assert state.svcr == 2 and state.za.shape == (16, 16) and not state.za.any()
    assert not state.memory.regions


@pytest.mark.parametrize("arrays, message", [
    (dict(za=np.zeros((4, 4), np.uint8)), "za must have shape"),
    (dict(svl=np.array(100)), "SVL must be a power of two"),
    (dict(bogus=np.zeros(1)), "unknown snapshot key 'bogus'"),
    (dict(mem_1000=np.zeros((2, 2), np.uint8)), "1-D uint8"),
    (dict(mem_1000=np.zeros(32, np.uint8), mem_1010=np.zeros(4, np.uint8)), "overlaps"),
    (dict(svcr=np.zeros(3)), "one integer"),
])
def test_malformed_snapshots_give_one_line(tmp_path, arrays, message):
    np.savez(tmp_path / "s.npz", **arrays)
    with pytest.raises(SnapshotError, match=message) as error:
        ArchState.load(tmp_path / "s.npz", svl=None)
    assert "\n" not in str(error.value)


def test_unreadable_snapshot(tmp_path):
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(SnapshotError, match="not a readable"):
        ArchState.load(tmp_path / "bad.npz")
    with pytest.raises(SnapshotError, match="does not exist"):
        ArchState.load(tmp_path / "missing.npz")


def test_memory_faults_are_all_or_nothing():
    memory = Memory({0x100: np.arange(16, dtype=np.uint8)})
    with pytest.raises(MemoryFault) as fault:
        memory.write(0x10C, np.full(8, 0xFF, np.uint8))
    assert fault.value.address == 0x110 and fault.value.write
    assert np.array_equal(memory.read(0x100, 16), np.arange(16))
    with pytest.raises(MemoryFault, match="read fault at 0x00000000000000ff"):
        memory.read(0xFF, 2)
    memory.check(0x100, 16)
    assert memory.read(0x100, 0).size == 0
