"""The part of the instruction table the RTL engine performs (:data:`zatile.hw.engine.IMPLEMENTED_OPS`).

The engine's decoder makes every other form UNDEF, while the reference model performs it; so
everything that compares the RTL with the model draws its instructions from :data:`RTL_FORMS`.
:data:`PENDING_OPS` are the table's operations the RTL does not perform yet (a test lists them,
so the gap is never silent).
"""

from __future__ import annotations

from typing import Mapping

from zatile.hw.decoder import Op
from zatile.hw.engine import IMPLEMENTED_OPS
from zatile.sw.arch.isa import FORMS, OPS

__all__ = ["RTL_FORMS", "PENDING_OPS", "rtl_weights"]

#: The forms whose operation the RTL performs, in table order.
RTL_FORMS = tuple(form for form in FORMS if Op[form.op.upper()] in IMPLEMENTED_OPS)
#: Operations of the table the RTL does not perform yet.
PENDING_OPS = tuple(op for op in OPS if Op[op.upper()] not in IMPLEMENTED_OPS)


def rtl_weights(weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Operation weights for :func:`zatile.sim.progen.generate_program` that leave out
    :data:`PENDING_OPS` (on top of ``weights``)."""
    return {**(weights or {}), **{op: 0 for op in PENDING_OPS}}
