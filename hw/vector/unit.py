"""The streaming vector unit: each instruction goes to the execution unit whose ``OPS`` hold its
operation, and the results come back in the order the instructions went in.

The units run independently, so a short instruction may finish inside while a long one is still
working; a queue of unit numbers (``ORDER_DEPTH`` deep) gives the results back in issue order.
The engine today sends one instruction at a time; the queue lets a dispatcher keep several in
flight.
"""

from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.lib.fifo import SyncFIFO

from zatile.hw.vector.alu import VectorAlu
from zatile.hw.vector.fp_arith import VectorFpArith
from zatile.hw.vector.fp_compare import VectorFpCompare
from zatile.hw.vector.fp_convert import VectorFpConvert
from zatile.hw.vector.multiply import VectorMultiplier
from zatile.hw.vector.permute import VectorPermuter
from zatile.hw.vector.predicate import VectorPredicateUnit
from zatile.hw.vector.shift import VectorShifter
from zatile.hw.vector.common import VectorExecutionUnit

__all__ = ["UNITS", "VECTOR_OPS", "VectorUnit"]

#: The execution units, by number.
UNITS = (VectorAlu, VectorShifter, VectorMultiplier, VectorPredicateUnit, VectorPermuter,
         VectorFpArith, VectorFpCompare, VectorFpConvert)
#: Every operation the vector unit performs.
VECTOR_OPS = tuple(op for unit in UNITS for op in unit.OPS)
#: How many instructions may be in flight.
ORDER_DEPTH = 4


class VectorUnit(VectorExecutionUnit):
    """The execution units behind one ``op``/``result`` stream pair (module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the vectors.

    Attributes
    ----------
    op : In(stream.Signature(VectorOpLayout)), an instruction of :data:`VECTOR_OPS`
    result : Out(stream.Signature(VectorResultLayout)), one per ``op``, in order

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    """

    def elaborate(self, platform):
        m = Module()
        units = []
        for unit_class in UNITS:
            unit = unit_class(self._config)
            m.submodules[unit_class.__name__] = unit
            units.append(unit)
        m.submodules.order = order = SyncFIFO(width=max(1, (len(units) - 1).bit_length()),
                                              depth=ORDER_DEPTH)

        target = Signal(range(len(units)))
        with m.Switch(self.op.payload.decoded.op):
            for number, unit_class in enumerate(UNITS):
                with m.Case(*unit_class.OPS):
                    m.d.comb += target.eq(number)
        accepting = Array(unit.op.ready for unit in units)[target]
        m.d.comb += [self.op.ready.eq(order.w_rdy & accepting),
                     order.w_en.eq(self.op.valid & self.op.ready),
                     order.w_data.eq(target)]

        head = order.r_data
        m.d.comb += [
            self.result.valid.eq(order.r_rdy & Array(unit.result.valid for unit in units)[head]),
            self.result.payload.eq(Array(unit.result.payload for unit in units)[head]),
            order.r_en.eq(self.result.valid & self.result.ready),
        ]
        for number, unit in enumerate(units):
            m.d.comb += [
                unit.op.payload.eq(self.op.payload),
                unit.op.valid.eq(self.op.valid & order.w_rdy & (target == number)),
                unit.result.ready.eq(self.result.ready & order.r_rdy & (head == number)),
            ]
        return m
