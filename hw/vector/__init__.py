"""The streaming vector unit: a router (:mod:`.unit`) in front of execution units that share one
payload (:mod:`.common`)."""

from zatile.hw.vector.unit import VECTOR_OPS, VectorUnit

__all__ = ["VECTOR_OPS", "VectorUnit"]
