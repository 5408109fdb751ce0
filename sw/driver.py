"""The driver's view of an engine: the interface a CPU drives, and its in-process backend.

Every backend implements :class:`~zatile.sw.arch.engine.Engine`: :class:`ModelEngine` is the
reference model in-process; :class:`zatile.tb.engine.RtlEngine` is the Verilog under cocotb,
usable from a thread the RTL harness bridges. The kernel model (:mod:`zatile.sw.abi`) takes
either as its ``engine_class``. Program-level backends (straight-line programs on the model,
QEMU or the RTL) are in :mod:`zatile.sw.backends`.
"""

from __future__ import annotations

from zatile.sim.engine import ModelEngine
from zatile.sw.arch.engine import Engine, Result, Status
from zatile.sw.arch.isa import read_operands, write_result

__all__ = ["Engine", "ModelEngine", "Result", "Status", "read_operands", "write_result"]
