"""Architectural state, sparse memory and the .npz snapshot format."""

import numpy as np
import pytest

from zatile.sim.state import ArchState, Memory, MemoryFault, SnapshotError, check_user_space


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


@pytest.mark.parametrize("arrays, message", [
    (dict(svcr=np.array(7)), r"'svcr' = 0x7 sets reserved bits 0x4"),
    (dict(fpcr=np.array(2**40, np.uint64)), r"'fpcr' = 0x10000000000 sets reserved bits"),
    (dict(fpcr=np.array(1 << 3)),
     r"'fpcr' = 0x8 sets reserved bits 0x8 \(defined bits: 0x7ffbf07\)"),
    (dict(fpcr=np.array(1 << 14)), r"'fpcr' = 0x4000 sets reserved bits 0x4000"),
    (dict(fpsr=np.array(2**33, np.uint64)), r"'fpsr' = 0x200000000 sets reserved bits"),
    (dict(nzcv=np.array(0x10)), r"'nzcv' = 0x10 sets reserved bits 0x10"),
    (dict(sp=np.array(-8, np.int64)), r"'sp' must not be negative, not -8"),
    (dict(za=np.full((16, 16), 300, np.int16)), r"'za' holds values outside uint8 \(300 to 300\)"),
    (dict(x=np.full(31, -1, np.int64)), r"'x' holds values outside uint64"),
    (dict(z=np.zeros((32, 16), np.float32)), r"'z' must be uint8, not float32"),
    (dict(p=np.zeros((16, 2), bool)), r"'p' must be uint8, not bool"),
    (dict(ffr=np.zeros(3, np.uint8)), r"ffr must have shape \(2,\)"),
])
def test_snapshot_values_are_checked_and_the_key_named(tmp_path, arrays, message):
    np.savez(tmp_path / "s.npz", **arrays)
    with pytest.raises(SnapshotError, match=message) as error:
        ArchState.load(tmp_path / "s.npz", svl=128)
    assert str(error.value).startswith(f"snapshot '{tmp_path / 's.npz'}': ")


def test_every_defined_fpcr_field_and_svcr_value_loads(tmp_path):
    for svcr in range(4):
        np.savez(tmp_path / "s.npz", svcr=np.array(svcr), fpcr=np.array(0x07FF_BF07))
        state = ArchState.load(tmp_path / "s.npz", svl=128)
        assert (state.svcr, state.fpcr) == (svcr, 0x07FF_BF07)


@pytest.mark.parametrize("content, message", [
    (b"", "the file is empty"),
    (b"not a zip", "not a zip file of named arrays"),
    (b"PK\x03\x04 truncated zip", "not a readable .npz archive"),
])
def test_files_that_are_not_snapshots_give_one_line(tmp_path, content, message):
    (tmp_path / "bad.npz").write_bytes(content)
    with pytest.raises(SnapshotError, match=message) as error:
        ArchState.load(tmp_path / "bad.npz")
    assert "\n" not in str(error.value) and "pickle" not in str(error.value)


def test_a_single_npy_array_or_pickled_objects_are_not_snapshots(tmp_path):
    np.save(tmp_path / "za.npy", np.zeros((16, 16), np.uint8))
    with pytest.raises(SnapshotError, match="single .npy array"):
        ArchState.load(tmp_path / "za.npy")
    np.savez(tmp_path / "objects.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(SnapshotError, match="key 'x' holds Python objects, not numbers"):
        ArchState.load(tmp_path / "objects.npz")
    with pytest.raises(SnapshotError, match="cannot read snapshot"):
        ArchState.load(tmp_path)


@pytest.mark.parametrize("base, size, inside", [
    (0, 64, False), (0xFFF, 1, False), (0x1000, 64, True), (0x10000, 4096, True),
    ((1 << 47) - 0x2000, 0x1000, True), ((1 << 47) - 0x1000, 1, False),
    ((1 << 64) - 0x1000, 64, False),
])
def test_user_space_is_where_every_backend_maps_memory(base, size, inside):
    memory = Memory({base: np.zeros(size, np.uint8)})
    if inside:
        check_user_space(memory)
    else:
        with pytest.raises(ValueError, match=f"memory region at 0x{base:x} .* outside"):
            check_user_space(memory)


def test_a_region_past_the_64_bit_space_is_refused():
    with pytest.raises(ValueError, match="leaves the 64-bit space"):
        Memory({(1 << 64) - 8: np.zeros(16, np.uint8)})
    Memory({(1 << 64) - 8: np.zeros(8, np.uint8)})
