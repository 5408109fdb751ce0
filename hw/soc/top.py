"""The SoC wrapper: the engine behind an AXI4 manager for memory and an AXI4-Lite subordinate
for control, the form an FPGA SoC (a soft or hard CPU on an AXI interconnect) attaches.

=========  ====================================================================================
port       what
=========  ====================================================================================
``clk``    the engine clock; ``rst`` synchronous, active high
``m_axi``  AXI4 manager, 64-bit addresses, ``mem_data_width`` data (:mod:`.memory_master`)
``s_axil`` AXI4-Lite subordinate, 12-bit addresses, 32-bit data (:mod:`.control`,
           register map :mod:`.registers`)
``irq``    a result is waiting (when enabled)
=========  ====================================================================================
"""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from zatile.hw._common import ConfigComponent
from zatile.hw.engine import ZaTileEngine
from zatile.hw.library import ModuleLibrary
from zatile.hw.soc.axi import axi4_lite_signature, axi4_signature
from zatile.hw.soc.control import CONTROL_ADDRESS_WIDTH, AxiLiteControl
from zatile.hw.soc.memory_master import ADDRESS_WIDTH, AxiMemoryMaster

__all__ = ["ZaTileSoc", "soc_signature"]


def soc_signature(config) -> wiring.Signature:
    """The ports of :class:`ZaTileSoc` for ``config`` (but its clock and reset)."""
    return wiring.Signature({
        "m_axi": Out(axi4_signature(ADDRESS_WIDTH, config.mem_data_width)),
        "s_axil": In(axi4_lite_signature(CONTROL_ADDRESS_WIDTH)),
        "irq": Out(1),
    })


class ZaTileSoc(ConfigComponent):
    """The engine, its AXI4 memory manager and its AXI4-Lite control subordinate.

    Parameters
    ----------
    config : EngineConfig
    library : ModuleLibrary, optional
        Where the engine's repeated units are converted once (:mod:`zatile.hw.library`).

    Attributes
    ----------
    m_axi : Out(axi4_signature(64, mem_data_width))
    s_axil : In(axi4_lite_signature(12, 32))
    irq : Out(1)
    """

    @staticmethod
    def check_arguments(config, library: ModuleLibrary | None = None) -> None:
        ZaTileEngine.check_arguments(config, library)

    def __init__(self, config, library: ModuleLibrary | None = None):
        self._library = library
        super().__init__(config, soc_signature(config))

    def elaborate(self, platform):
        m = Module()
        config = self.config
        m.submodules.engine = engine = ZaTileEngine(config, self._library)
        m.submodules.memory = memory = AxiMemoryMaster(config)
        m.submodules.control = control = AxiLiteControl(config)
        wiring.connect(m, engine.mem_req, memory.mem_req)
        wiring.connect(m, memory.mem_resp, engine.mem_resp)
        wiring.connect(m, wiring.flipped(self.m_axi), memory.axi)
        wiring.connect(m, wiring.flipped(self.s_axil), control.axi)
        wiring.connect(m, control.issue, engine.issue)
        wiring.connect(m, engine.result, control.result)
        m.d.comb += [
            engine.smcr_len.eq(control.smcr_len), engine.sme_enable.eq(control.sme_enable),
            engine.fpcr.eq(control.fpcr), engine.debug_addr.eq(control.debug_addr),
            control.svcr.eq(engine.svcr), control.svl_bytes.eq(engine.svl_bytes),
            control.id_aa64smfr0.eq(engine.id_aa64smfr0), control.debug_data.eq(engine.debug_data),
            control.perf.eq(engine.perf), control.engine_idle.eq(engine.idle & memory.idle),
            self.irq.eq(control.irq),
        ]
        if config.za_contexts > 1:
            m.d.comb += engine.za_context.eq(control.za_context)
        return m
