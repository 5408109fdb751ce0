"""Helpers shared by the hw components (argument checks, byte-lane utilities)."""

from __future__ import annotations

from amaranth import Cat, Const, Value
from amaranth.lib import data

from sw.config import EngineConfig

__all__ = ["check_config", "row_layout", "byte_mask", "max_bytes"]


def check_config(owner: object, config: object) -> EngineConfig:
    """``config`` if it is an :class:`EngineConfig`, else ``TypeError`` quoting it.

    ``owner`` is the component being constructed: a rejected component is never elaborated, so its
    "created but never used" warning is silenced.
    """
    if not isinstance(config, EngineConfig):
        owner._MustUse__silence = True
        raise TypeError(f"config must be an EngineConfig, not {config!r}")
    return config


def max_bytes(config: EngineConfig) -> int:
    """MAXB, the largest SVL in bytes: rows and bytes per row of ZA, bytes of a Z register."""
    return config.max_svl // 8


def row_layout(config: EngineConfig) -> data.ArrayLayout:
    """A ZA row or Z register at the largest SVL: MAXB bytes, byte ``e`` in bits [8e+7:8e]."""
    return data.ArrayLayout(8, max_bytes(config))


def byte_mask(enables: Value) -> Value:
    """Expand one enable bit per byte into a bit mask (each bit replicated 8 times).

    ``enables`` should be a signal (or a slice of one): every output bit slices it, and slicing
    a compound expression makes the netlist builder emit the whole expression again per slice.
    """
    enables = Value.cast(enables)
    if len(enables) == 0:
        return Const(0, 0)
    return Cat(*(enables[i].replicate(8) for i in range(len(enables))))
