"""The architectural reference model of the zatile engine, bit-exact to the Arm ARM.

Everything else (the RTL scoreboard, the QEMU comparison, the kernel-ABI model) checks against
this model. It executes one instruction word at a time on an :class:`~zatile.sim.state.ArchState`:
:mod:`.core` decodes and checks (docs/isa.md, "Trap order"), then the handler named after the
form's operation runs. The handlers work on whole vectors and tiles with numpy, grouped by
class: :mod:`.sme` (SVCR, ZA moves and loads/stores), :mod:`.outer` (outer products, whose
floating-point arithmetic is :mod:`zatile.sim.fp`), :mod:`.sve` (streaming SVE), :mod:`.sve_int`
(streaming-SVE integer arithmetic, logic and shifts), :mod:`.sve_pred` (compares, predicate
operations, counts and reductions), :mod:`.sve_fp` (streaming-SVE floating point, on the exact
reference :mod:`zatile.sim.fpref`), :mod:`.sve_perm` (element moves, permutes and MOVPRFX),
:mod:`.sve_mem` (replicating, sign-extending, structure and non-temporal loads and stores,
prefetches). :mod:`.mapping` holds the ZA and predicate views they share.

To add an operation: give its forms an ``op`` in the table (:mod:`zatile.sw.arch.isa`) and
write ``_op_<op>`` in the mixin of its class.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from zatile.sim.model.core import ModelCore, handler_name
from zatile.sim.model.mapping import active_elements, tile_elements
from zatile.sim.model.outer import OuterProductOps
from zatile.sim.model.sme import SmeOps
from zatile.sim.model.sve import StreamingSveOps
from zatile.sim.model.sve_fp import FloatingPointVectorOps
from zatile.sim.model.sve_int import IntegerVectorOps
from zatile.sim.model.sve_pred import PredicateCountReduceOps
from zatile.sim.model.sve_perm import PermuteOps
from zatile.sim.model.sve_mem import VectorMemoryOps
from zatile.sw.arch.isa import OPS

__all__ = ["ReferenceModel", "OP_HANDLERS", "tile_elements", "active_elements"]


class ReferenceModel(SmeOps, OuterProductOps, StreamingSveOps, IntegerVectorOps,
                     PredicateCountReduceOps, FloatingPointVectorOps, PermuteOps, VectorMemoryOps,
                     ModelCore):
    """Executes instructions of the table on an architectural state.

    Parameters
    ----------
    config : EngineConfig
        What the engine implements (features, supported SVLs).
    state : ArchState, optional
        The state to run on (used in place). Defaults to a zero state at ``config.max_svl``.
    sme_enabled : bool
        Control input (CPACR_EL1.SMEN and the higher-level enables): when False every
        instruction of the table traps with SMTC 0 and changes nothing.

    Attributes
    ----------
    state : ArchState
    sme_enabled : bool

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~zatile.sw.arch.config.EngineConfig`.
    ValueError
        If ``state.svl`` is not one of ``config.supported_svls``.
    """


#: Semantic operation (:data:`~zatile.sw.arch.isa.OPS`) to the method performing it.
OP_HANDLERS: Mapping[str, str] = MappingProxyType({op: handler_name(op) for op in OPS})
