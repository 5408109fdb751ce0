"""The QEMU backend (sim/qemu.py): state round trips, known results, traps and errors.

Every test that runs QEMU takes the ``qemu`` fixture, so it skips without the oracles (and fails
with ZATILE_REQUIRE_TOOLS=1). One run costs about 20 ms.
"""

import numpy as np
import pytest

from zatile.sim.state import ArchState, Memory
from zatile.sw.arch.constants import FPSR_RESET_ON_SM_CHANGE
from zatile.sim.qemu import ProgramError, QemuError, qemu_cpu_option, run_qemu

#: FPCR/FPSR bits QEMU 10 keeps on MSR (measured): FPCR AHP..LEN, EBF, NEP/AH/FIZ;
#: FPSR NZCV, QC, IDC and the cumulative flags. Other bits read as zero.
QEMU_FPCR_BITS = 0x07FF2007
QEMU_FPSR_BITS = 0xF800009F

#: Nothing is mapped here in any test.
UNMAPPED = 0x5550000


def random_state(svl: int, svcr: int, seed: int) -> ArchState:
    """Every field random, FPCR/FPSR within the bits QEMU keeps, awkwardly placed memory.

    The regions share a page (0x400000 and 0x400100), span pages, sit where the harness
    executable would go by default (0x400000), and one ends exactly on a page boundary.
    """
    rng = np.random.default_rng(seed)
    svl_b = svl // 8

    def random_bytes(*shape):
        return rng.integers(0, 256, shape, dtype=np.uint8)

    memory = Memory({0x400000: random_bytes(100), 0x400100: random_bytes(5000),
                     0x7FFF0000 - 24: random_bytes(24)})
    return ArchState(svl=svl, svcr=svcr, za=random_bytes(svl_b, svl_b), z=random_bytes(32, svl_b),
                     p=random_bytes(16, svl_b // 8), ffr=random_bytes(svl_b // 8),
                     fpcr=int(rng.integers(0, 2**32)) & QEMU_FPCR_BITS,
                     fpsr=int(rng.integers(0, 2**32)) & QEMU_FPSR_BITS,
                     x=rng.integers(0, 2**64, 31, dtype=np.uint64),
                     sp=int(rng.integers(0, 2**64, dtype=np.uint64)), memory=memory)


def assert_same_state(final: ArchState, expected: ArchState, *, compare_za: bool = True) -> None:
    for name in ("svl", "svcr", "fpcr", "fpsr", "sp"):
        assert getattr(final, name) == getattr(expected, name), name
    for name in ("x", "z", "p", "ffr") + (("za",) if compare_za else ()):
        np.testing.assert_array_equal(getattr(final, name), getattr(expected, name), err_msg=name)
    assert final.memory == expected.memory


# ---------------------------------------------------------------------- state round trips
@pytest.mark.parametrize("svl", [128, 256, 512])
@pytest.mark.parametrize("svcr", [0, 1, 2, 3])
def test_empty_program_returns_the_initial_state(qemu, svl, svcr):
    initial = random_state(svl, svcr, seed=svl + svcr)
    result = run_qemu("", initial)
    assert result.trapped == {}
    assert result.za_valid == bool(svcr & 2)
    assert_same_state(result.state, initial, compare_za=result.za_valid)
    if not result.za_valid:
        assert not result.state.za.any()


@pytest.mark.parametrize("svcr", [0, 1, 2, 3])
def test_trapped_instructions_leave_every_register_as_it_was(qemu, svcr):
    # The signal frame must carry streaming Z/P/FFR, ZA, SVCR and FPSR back (QEMU restores
    # them on rt_sigreturn without the FPSR reset an SM change would cause).
    initial = random_state(512, svcr, seed=10 + svcr)
    initial.x[3] = UNMAPPED
    initial.fpsr = 0x0800001F  # differs from the 0x0800009f an SM change would leave
    result = run_qemu("udf #0\nldr x4, [x3]\nudf #1", initial)
    assert result.trapped == {0: "SIGILL", 1: "SIGSEGV", 2: "SIGILL"}
    assert_same_state(result.state, initial, compare_za=bool(svcr & 2))


# ---------------------------------------------------------------------- known results
def test_ld1w_horizontal_slices_match_numpy(qemu):
    svl = 256
    svl_b = svl // 8
    source = np.arange(2 * svl_b, dtype=np.uint8) + 1
    initial = ArchState(svl=svl, memory=Memory({0x10000: source}))
    initial.x[0] = 0x10000
    initial.x[1] = 0x10000 + svl_b
    initial.x[2] = 3  # active .s elements for WHILELT
    initial.x[12] = 1
    program = """
        smstart                                   // SM and ZA: ZA becomes zero
        ptrue p0.s
        ld1w {za1h.s[w12, 2]}, p0/z, [x0]         // slice (1+2) % 8 = 3 -> row 1 + 3*4
        whilelt p1.s, xzr, x2
        ld1w {za2h.s[w12, 0]}, p1/z, [x1]         // slice 1 -> row 2 + 1*4; 3 elements
    """
    result = run_qemu(program, initial)
    assert result.trapped == {} and result.za_valid and result.state.svcr == 3
    expected = np.zeros((svl_b, svl_b), np.uint8)
    expected[13] = source[:svl_b]
    expected[6, :12] = source[svl_b:svl_b + 12]
    np.testing.assert_array_equal(result.state.za, expected)
    np.testing.assert_array_equal(result.state.p[0], np.full(svl_b // 8, 0x11, np.uint8))
    assert result.state.fpsr == FPSR_RESET_ON_SM_CHANGE


@pytest.mark.parametrize("svl", [128, 512, 2048])
def test_rdsvl_reads_the_streaming_vector_length(qemu, svl):
    result = run_qemu("rdsvl x5, #2\nrdsvl x6, #-1", ArchState(svl=svl))
    assert result.state.x[5] == 2 * svl // 8
    assert result.state.x[6] == 2**64 - svl // 8


def test_smstop_sm_zeroes_z_p_ffr_and_resets_fpsr_but_keeps_za(qemu):
    initial = random_state(256, 3, seed=3)
    initial.fpsr = 0
    result = run_qemu("smstop sm", initial)
    final = result.state
    assert final.svcr == 2 and final.fpsr == FPSR_RESET_ON_SM_CHANGE
    assert not final.z.any() and not final.p.any() and not final.ffr.any()
    np.testing.assert_array_equal(final.za, initial.za)
    assert final.fpcr == initial.fpcr and final.memory == initial.memory


def test_stores_reach_memory(qemu):
    initial = ArchState(svl=128, svcr=3, memory=Memory({0x20000: np.zeros(32, np.uint8)}))
    initial.za[4] = np.arange(16, dtype=np.uint8) + 0xA0  # za0h.s[1] is row 4 at SVL 128
    initial.x[0] = 0x20000
    initial.x[12] = 1
    result = run_qemu("ptrue p0.s\nst1w {za0h.s[w12, 0]}, p0, [x0]", initial)
    expected = np.zeros(32, np.uint8)
    expected[:16] = initial.za[4]
    np.testing.assert_array_equal(result.state.memory.regions[0x20000], expected)


# ---------------------------------------------------------------------- traps
def test_zero_za_with_za_off_is_sigill_and_execution_continues(qemu):
    program = """
        mov x0, #1
        zero {za}        // ZA=0: SIGILL, skipped
        mov x1, #2
        smstart za
        zero {za}
    """
    result = run_qemu(program, ArchState(svl=128))
    assert result.trapped == {1: "SIGILL"}
    assert (result.state.x[0], result.state.x[1]) == (1, 2)
    assert result.state.svcr == 2 and result.za_valid and not result.state.za.any()


def test_loads_from_unmapped_addresses_are_sigsegv(qemu):
    initial = ArchState(svl=512, svcr=3, memory=Memory({0x30000: np.ones(4096, np.uint8)}))
    initial.za[:] = 0xAB
    initial.x[1] = UNMAPPED
    initial.x[2] = 0x30000 + 4096 - 32  # a 64-byte slice that runs off the mapped page
    program = """
        ldr x5, [x1]
        ptrue p0.s
        ld1w {za0h.s[w12, 0]}, p0/z, [x1]
        st1w {za0h.s[w12, 0]}, p0, [x2]
        mov x6, #7
    """
    result = run_qemu(program, initial)
    assert result.trapped == {0: "SIGSEGV", 2: "SIGSEGV", 3: "SIGSEGV"}
    assert result.state.x[5] == 0 and result.state.x[6] == 7
    assert (result.state.za == 0xAB).all()
    # QEMU checks every page before it stores: no byte of the faulting store was written.
    assert result.state.memory == initial.memory


@pytest.mark.parametrize("past_end", [0, 0x700, 0xFF00])
def test_an_access_past_a_page_aligned_region_faults_as_in_the_model(qemu, past_end):
    """The harness executable keeps clear of the space after a region (the SVL 2048 campaign
    seeds 4242 and 77 once loaded from it: ``ldr z9, [sp, #135, mul vl]`` read the harness)."""
    initial = ArchState(svl=2048, svcr=1, memory=Memory({0x400000: np.ones(0x10000, np.uint8)}))
    initial.x[1] = 0x410000 + past_end
    result = run_qemu("ldr z9, [x1]\nldr x5, [x1]\n", initial)
    assert result.trapped == {0: "SIGSEGV", 1: "SIGSEGV"}
    assert not result.state.z[9].any() and result.state.x[5] == 0


# ---------------------------------------------------------------------- errors
def test_assembler_errors_quote_the_line(qemu):
    with pytest.raises(ProgramError, match=r"line 3: .*W12-W15.*'ld1w \{za0h.s\[w11, 0\]\}"):
        run_qemu("nop\n// comment\nld1w {za0h.s[w11, 0]}, p0/z, [x0]\n", ArchState(svl=128))


@pytest.mark.parametrize("line", ["loop: nop", ".word 0"])
def test_labels_and_directives_are_refused(line):
    with pytest.raises(ProgramError, match="labels and directives"):
        run_qemu(f"nop\n{line}", ArchState(svl=128))


def test_a_hanging_program_times_out(qemu):
    with pytest.raises(QemuError, match="timed out"):
        run_qemu("b .", ArchState(svl=128), timeout=0.5)


def test_a_branch_out_of_the_body_is_reported(qemu):
    initial = ArchState(svl=128)
    initial.x[1] = UNMAPPED
    with pytest.raises(QemuError, match=f"signal 11 at pc 0x{UNMAPPED:x}.*outside the program"):
        run_qemu("nop\nbr x1", initial)


def test_memory_qemu_cannot_map_is_reported(qemu):
    initial = ArchState(svl=128, memory=Memory({1 << 56: np.zeros(16, np.uint8)}))
    with pytest.raises(QemuError, match="could not map memory 0x100000000000000"):
        run_qemu("nop", initial)


def test_svcr_must_hold_only_sm_and_za():
    with pytest.raises(ValueError, match="SVCR"):
        run_qemu("nop", ArchState(svl=128, svcr=4))


def test_cpu_option_sets_both_vector_lengths_in_bytes():
    assert qemu_cpu_option(512) == \
        "max,sme-default-vector-length=64,sve-default-vector-length=64"
    with pytest.raises(ValueError, match="power of two"):
        qemu_cpu_option(384)


def test_the_harness_image_keeps_a_guard_from_every_region():
    from zatile.sim.qemu import _IMAGE_GUARD, _image_base

    region = (0x400000, 0x410000)
    base = _image_base([region], 0x20000)
    assert base >= region[1] + _IMAGE_GUARD
    below = (base + 0x20000 + _IMAGE_GUARD // 2, base + 0x20000 + _IMAGE_GUARD)
    moved = _image_base([region, below], 0x20000)
    assert moved >= below[1] + _IMAGE_GUARD


def test_an_access_just_past_a_region_faults_as_in_the_model(qemu):
    """Found as campaign seed 4242, SVL 2048, program 23: ``ldr z9, [sp, #135, mul vl]`` reaches
    0x410700, past the 64 KiB data region; the harness image once sat there, so QEMU did not
    fault. Written out here, as the generator's programs change with its operations."""
    from zatile.sim.progen import DATA_BASE, DATA_SIZE
    from zatile.sw.arch.config import EngineConfig
    from zatile.sw.backends import compare

    initial = ArchState(svl=2048, svcr=1, sp=0x410700 - 135 * 256,
                        memory=Memory({DATA_BASE: np.zeros(DATA_SIZE, np.uint8)}))
    result = compare("ldr z9, [sp, #135, mul vl]\n", initial, ["model", "qemu"],
                     EngineConfig(max_svl=2048))
    assert result.agree, result.difference
    assert [(o.status, o.fault_address) for o in result.outcomes["model"].outcomes] == \
        [("fault", 0x410700)]
