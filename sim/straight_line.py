"""The simplest CPU: straight-line code issued to an engine, with X0-X30 and SP of its own.

The model, QEMU and RTL backends run the same straight-line programs; on the RTL this is the
code that runs in the cocotb bridge thread (:mod:`zatile.tb.rtl_backend`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from zatile.sw.arch.engine import Engine, Status
from zatile.sw.arch.isa import read_operands, write_result

__all__ = ["execute_program"]


@dataclass
class _Registers:
    x: np.ndarray
    sp: int


def execute_program(engine: Engine, words: Sequence[int], x: Sequence[int], sp: int,
                    nzcv: int = 0):
    """Run straight-line code on an :class:`~zatile.sw.arch.engine.Engine` the way a CPU would.

    Operands come from the CPU's registers (``x``, ``sp``); scalar results are written back, and
    the flags of an instruction that sets them become the CPU's NZCV, and the floating-point
    exceptions an instruction raised are ORed into the engine's FPSR. Execution continues after
    traps and faults, like the model backend.

    Returns
    -------
    (results, x, sp, nzcv)
        The engine's :class:`~zatile.sw.arch.engine.Result` per instruction and the final
        registers and flags.
    """
    registers = _Registers(np.array(x, np.uint64).copy(), int(sp))
    results = []
    for word in words:
        result = engine.issue(word, read_operands(word, registers))
        if result.status is Status.OK:
            write_result(word, result.scalar, registers)
            if result.nzcv is not None:
                nzcv = result.nzcv
            if result.fpsr_flags:
                engine.fpsr |= result.fpsr_flags
        results.append(result)
    return results, registers.x, registers.sp, nzcv
