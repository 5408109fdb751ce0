"""The synchronous engine interface and its in-process reference-model backend."""

from __future__ import annotations

import numpy as np
import pytest

from zatile.sim.state import Memory, MemoryFault
from zatile.sw import driver
from zatile.sw.abi import constants as c
from zatile.sw.abi.kernel import Kernel
from zatile.sw.abi.program import Call, Executable, Syscall
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import destination_of, read_operands, write_result
from zatile.sw.driver import Engine, ModelEngine, Status

SMSTART = assemble_line("smstart")
RDSVL = assemble_line("rdsvl x3, #1")


def enabled_engine(config=None, memory=None) -> ModelEngine:
    engine = ModelEngine(config or EngineConfig(max_svl=512), memory)
    engine.sme_enabled = True
    return engine


def test_engine_is_an_abstract_interface():
    with pytest.raises(TypeError):
        Engine(EngineConfig())


def test_engine_comes_out_of_reset_disabled_at_the_smallest_svl():
    engine = ModelEngine(EngineConfig(max_svl=512))
    assert not engine.sme_enabled and engine.svl == 128 and engine.smcr_len == 0
    result = engine.issue(SMSTART)
    assert (result.status, result.smtc) == (Status.SME_TRAP, 0)
    assert engine.svcr == 0, "a trapped instruction changes nothing"


def test_state_control_and_svcr_read():
    engine = enabled_engine()
    assert engine.issue(SMSTART).status is Status.OK
    assert engine.svcr == 3
    result = engine.issue(assemble_line("mrs x7, svcr"))
    assert result.scalar == 3 and destination_of(assemble_line("mrs x7, svcr")).number == 7


@pytest.mark.parametrize("length, expected", [(0, 128), (1, 128), (2, 128), (3, 512), (15, 512)])
def test_smcr_len_selects_the_effective_svl(length, expected):
    engine = enabled_engine(EngineConfig(max_svl=512, supported_svls=(128, 512)))
    engine.smcr_len = length
    assert engine.smcr_len == length and engine.svl == expected
    assert engine.issue(RDSVL).scalar == expected // 8


def test_smcr_len_is_a_four_bit_field():
    with pytest.raises(ValueError):
        enabled_engine().smcr_len = 16


def test_operands_come_with_the_issue():
    memory = Memory({0x1000: np.zeros(256, np.uint8)})
    engine = enabled_engine(memory=memory)
    engine.smcr_len = 0
    engine.issue(assemble_line("smstart za"))
    row = np.arange(16, dtype=np.uint8) + 1
    memory.write(0x1000, row)
    load, store = assemble_line("ldr za[w13, 0], [x4]"), assemble_line("str za[w13, 0], [x4]")
    assert engine.issue(load, (5, 0x1000)).status is Status.OK
    assert engine.issue(store, (5, 0x1010)).status is Status.OK
    assert np.array_equal(memory.read(0x1010, 16), row)
    addsvl = assemble_line("addsvl sp, sp, #-2")
    assert engine.issue(addsvl, (0x8000,)).scalar == 0x8000 - 32


def test_the_engine_register_file_holds_only_the_current_operands():
    engine = enabled_engine()
    engine.issue(assemble_line("addsvl x0, x9, #1"), (0x1234,))
    model_state = engine._model.state
    assert not model_state.x.any() and model_state.sp == 0


def test_operand_count_must_match_the_instruction():
    engine = enabled_engine()
    with pytest.raises(ValueError, match="reads 2 register"):
        engine.issue(assemble_line("str za[w12, 0], [x0]"), (1,))


def test_faults_report_the_address():
    engine = enabled_engine(memory=Memory({0x1000: np.zeros(16, np.uint8)}))
    engine.issue(assemble_line("smstart za"))
    result = engine.issue(assemble_line("str za[w12, 0], [x0]"), (0, 0x1008))
    assert (result.status, result.fault_address) == (Status.FAULT, 0x1010)


def test_floating_point_control_and_status():
    engine = enabled_engine()
    engine.fpcr, engine.fpsr = 0x0300_0000, 0x1F
    assert (engine.fpcr, engine.fpsr) == (0x0300_0000, 0x1F)
    engine.issue(assemble_line("smstart sm"))
    assert engine.fpsr == c.FPSR_AFTER_SMSTOP, "a PSTATE.SM change resets FPSR"


def test_memory_port_and_id_register():
    config = EngineConfig(max_svl=256, features=frozenset({"I8I32", "F32F32"}))
    engine = ModelEngine(config, Memory({0x2000: np.zeros(8, np.uint8)}))
    engine.write_memory(0x2000, b"abcdefgh")
    assert engine.read_memory(0x2002, 3) == b"cde"
    with pytest.raises(MemoryFault):
        engine.read_memory(0x3000, 1)
    assert engine.id_aa64smfr0 == config.id_aa64smfr0 == (0xF << 36) | (1 << 32)


class Registers:
    def __init__(self, x, sp):
        self.x, self.sp = x, sp


def test_scalar_operands_resolve_w_x_sp_and_zero_registers():
    x = list(range(100, 131))
    x[12] = 0x1_0000_0005
    cpu, at_sp = Registers(x, 0), Registers(x, 0x7000)
    assert read_operands(assemble_line("str za[w12, 3], [sp, #3, mul vl]"), at_sp) == \
        (5, 0x7000)
    assert read_operands(assemble_line("whilelt p0.s, w3, w4"), cpu) == (103, 104)
    assert read_operands(assemble_line("st1w {za0h.s[w12, 0]}, p0, [x1]"), cpu) == (5, 101, 0)
    assert read_operands(assemble_line("msr svcr, xzr"), cpu) == (0,)
    assert read_operands(0x00000000, cpu) == ()


def test_scalar_results_go_to_the_destination_register_and_xzr_discards_them():
    cpu = Registers([0] * 31, 0x8000)
    write_result(assemble_line("rdsvl x9, #1"), 64, cpu)
    write_result(assemble_line("addsvl sp, sp, #-1"), 0x7fc0, cpu)
    write_result(assemble_line("mrs xzr, svcr"), 3, cpu)
    write_result(assemble_line("msr svcr, x0"), 5, cpu)        # writes no general register
    assert cpu.x[9] == 64 and cpu.sp == 0x7fc0
    assert cpu.x == [0] * 9 + [64] + [0] * 21


class RecordingEngine(Engine):
    """A second backend built only from the interface: proves the kernel needs nothing else."""

    def __init__(self, config, memory):
        super().__init__(config)
        self.inner = ModelEngine(config, memory)
        self.issued: list[int] = []

    def issue(self, word, operands=()):
        self.issued.append(word)
        return self.inner.issue(word, operands)

    sme_enabled = property(lambda self: self.inner.sme_enabled,
                           lambda self, value: setattr(self.inner, "sme_enabled", value))
    smcr_len = property(lambda self: self.inner.smcr_len,
                        lambda self, value: setattr(self.inner, "smcr_len", value))
    svl = property(lambda self: self.inner.svl)
    fpcr = property(lambda self: self.inner.fpcr,
                    lambda self, value: setattr(self.inner, "fpcr", value))
    fpsr = property(lambda self: self.inner.fpsr,
                    lambda self, value: setattr(self.inner, "fpsr", value))
    svcr = property(lambda self: self.inner.svcr)

    def _select_za_context(self, context):
        self.inner.za_context = context

    def read_memory(self, address, length):
        return self.inner.read_memory(address, length)

    def write_memory(self, address, data):
        self.inner.write_memory(address, data)


def test_the_kernel_runs_on_any_backend_of_the_interface():
    kernel = Kernel(EngineConfig(max_svl=256), engine_class=RecordingEngine)
    seen = {}
    kernel.install("/bin/t", Executable({"main": [
        "smstart za", "rdsvl x5, #1", "mrs x6, svcr",
        Call(lambda ctx: seen.update(x5=ctx.x[5], x6=ctx.x[6])),
        Syscall(c.NR_EXIT_GROUP, (0,))]}))
    process = kernel.spawn("/bin/t")
    kernel.run()
    assert process.exit_code == 0 and seen == {"x5": 32, "x6": 2}
    assert isinstance(kernel.engine, RecordingEngine)
    # Three user instructions, the first one twice (trapped, then re-executed).
    assert kernel.engine.issued.count(assemble_line("smstart za")) == 2


def test_driver_exports():
    assert {"Engine", "ModelEngine", "Result", "Status"} <= set(driver.__all__)


def test_the_rtl_engine_outside_cocotb_says_where_it_runs():
    from zatile.tb.engine import RtlEngine

    with pytest.raises(RuntimeError, match="RtlEngine runs only inside a cocotb test.*not on "
                                           "EngineConfig"):
        Kernel(EngineConfig(max_svl=128), engine_class=RtlEngine)
