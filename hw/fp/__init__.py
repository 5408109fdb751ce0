"""Floating-point units for the SME outer products, and the FP outer-product array.

Building blocks, one Component per file, each parameterized by an :class:`FpFormat`:
:class:`FpUnpack`, :class:`FpMultiply`, :class:`FpAlignAdd`, :class:`FpNormalize`,
:class:`FpRound`. Composed, pipelined units with stream interfaces: :class:`FpMulAdd`
(FMOPA .S/.D), :class:`FpDotAdd16` (widening FMOPA), :class:`BfDotAdd` (BFMOPA). The array that
applies them to a whole ZA tile is :class:`FpOuterProductArray`.
"""
