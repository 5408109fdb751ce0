"""Streaming-SVE floating point (sw/arch/isa/sve_fp.py, sim/model/sve_fp.py) and the exact
reference with exceptions it applies (:class:`zatile.sim.fpref.FPArith`).

* The reference on values worked out by hand: each exception of ``FPProcessException`` where
  the Arm ARM raises it (docs/isa.md, "Floating-point exceptions"), NaN propagation, FZ/FZ16
  flushing, correctly rounded division and square root, the conversions.
"""

from __future__ import annotations

import pytest

from zatile.sim.fpref import BF16, FP16, FP32, FP64, FPArith, FPRounding
from zatile.sw.arch.constants import FpsrFlag

IOC, DZC, OFC, UFC, IXC, IDC = (FpsrFlag.IOC, FpsrFlag.DZC, FpsrFlag.OFC, FpsrFlag.UFC,
                                FpsrFlag.IXC, FpsrFlag.IDC)
FZ, FZ16, DN = 1 << 24, 1 << 19, 1 << 25
ONE, TWO, MAX, MIN_NORMAL = 0x3F800000, 0x40000000, 0x7F7FFFFF, 0x00800000
QNAN, SNAN, INF = 0x7FC00001, 0x7F800001, 0x7F800000


def _run(method: str, *args, fpcr: int = 0):
    arith = FPArith(fpcr)
    return getattr(arith, method)(*args), arith.flags


# --- the exact reference ----------------------------------------------------------------------

@pytest.mark.parametrize("method, args, fpcr, result, flags", [
    ("div", (ONE, 0, FP32), 0, INF, DZC),                        # 1/0
    ("div", (0, 0, FP32), 0, 0x7FC00000, IOC),                    # 0/0
    ("div", (INF, 0, FP32), 0, INF, 0),                           # inf/0: no DZC
    ("div", (ONE, 0x40400000, FP32), 0, 0x3EAAAAAB, IXC),         # 1/3 rounds up
    ("div", (ONE, 0x40400000, FP32), 3 << 22, 0x3EAAAAAA, IXC),   # toward zero
    ("mul", (MAX, TWO, FP32), 0, INF, OFC | IXC),
    ("mul", (MAX, TWO, FP32), 3 << 22, MAX, OFC | IXC),           # toward zero: max normal
    ("mul", (MIN_NORMAL, 0x3F000001, FP32), 0, 0x00400000, UFC | IXC),   # tiny and inexact
    ("mul", (MIN_NORMAL, 0x3F000000, FP32), 0, 0x00400000, 0),    # tiny but exact: no UFC
    ("mul", (MIN_NORMAL, 0x3F000000, FP32), FZ, 0, UFC),          # flushed: UFC, not IXC
    ("mul", (0x007FFFFF, ONE, FP32), FZ, 0, IDC),                 # input flushed: IDC
    ("mul", (0x03FF, 0x3C00, FP16), FZ16, 0, 0),                  # FZ16 input flush: no IDC
    ("mul", (0x0400, 0x3800, FP16), FZ16, 0, UFC),                # FZ16 output flush: UFC
    ("mul", (INF, 0, FP32), 0, 0x7FC00000, IOC),                  # inf * 0
    ("mul", (INF, 0, FP32, True), 0, TWO, 0),                     # FMULX: 2.0
    ("add", (SNAN, QNAN, FP32), 0, 0x7FC00001, IOC),              # sNaN first, quietened
    ("add", (QNAN, SNAN, FP32), 0, 0x7FC00001, IOC),              # a sNaN wins over a qNaN
    ("add", (QNAN | 0x80000000, ONE, FP32), 0, 0xFFC00001, 0),    # payload and sign kept
    ("add", (QNAN, ONE, FP32), DN, 0x7FC00000, 0),                # DN: default NaN
    ("add", (INF, INF | 1 << 31, FP32), 0, 0x7FC00000, IOC),      # inf - inf
    ("add", (ONE, ONE | 1 << 31, FP32), 2 << 22, 0x80000000, 0),  # exact zero toward -inf
    ("add", (ONE, QNAN | 1 << 31, FP32, True), 0, 0xFFC00001, 0), # FSUB: a NaN op2 keeps its sign
    ("mul_add", (QNAN, INF, 0, FP32), 0, 0x7FC00000, IOC),        # qNaN + inf*0 is invalid
    ("mul_add", (ONE, 0x3F800001, 0x3F7FFFFF, FP32), 0, TWO, IXC),    # one rounding
    ("sqrt", (TWO, FP32), 0, 0x3FB504F3, IXC),
    ("sqrt", (0x40800000, FP32), 0, TWO, 0),
    ("sqrt", (0xBF800000, FP32), 0, 0x7FC00000, IOC),
    ("sqrt", (0x80000000, FP32), 0, 0x80000000, 0),               # sqrt(-0) = -0
    ("max", (0, 0x80000000, FP32), 0, 0, 0),                      # +0 above -0
    ("max", (0, 0x80000000, FP32, True), 0, 0x80000000, 0),
    ("max", (QNAN, ONE, FP32), 0, QNAN, 0),                       # FMAX propagates
    ("max_num", (QNAN, ONE, FP32), 0, ONE, 0),                    # FMAXNM: the number
    ("max_num", (SNAN, ONE, FP32), 0, 0x7FC00001, IOC),           # but not past a sNaN
    ("round_int", (0x3FC00000, FP32, FPRounding.TIEEVEN, False), 0, TWO, 0),
    ("round_int", (0x40200000, FP32, FPRounding.TIEEVEN, True), 0, TWO, IXC),   # FRINTX 2.5
    ("round_int", (0x40200000, FP32, FPRounding.TIEAWAY, False), 0, 0x40400000, 0),
    ("round_int", (0xBF000000, FP32, FPRounding.POSINF, False), 0, 0x80000000, 0),  # -0
    ("convert", (0x7FF0000000000001, FP64, FP32), 0, 0x7FC00000, IOC),
    ("convert", (0x7FF8000000000000 | 0xABC << 29, FP64, FP32), 0, 0x7FC00ABC, 0),
    ("convert", (0x7FFF, FP16, FP32), 0, 0x7FFFE000, 0),
    ("convert", (0x0001, FP16, FP32), FZ | FZ16, 0x33800000, 0),  # fp16 inputs never flush
    ("convert", (0x477FF000, FP32, FP16), 0, 0x7C00, OFC | IXC),  # 65520 rounds to inf
    ("convert", (0x7C00, FP16, FP32), 1 << 26, 0x47800000, 0),    # AHP: 2^16
    ("convert", (0x7F800000, FP32, FP16), 1 << 26, 0x7FFF, IOC),  # AHP: inf saturates
    ("convert_bf16", (0x3F808000,), 0, 0x3F80, IXC),              # tie to even
    ("convert_bf16", (0x3F818000,), 0, 0x3F82, IXC),
    ("convert_bf16", (0x7F800001,), 0, 0x7FC0, IOC),
    ("from_integer", (2 ** 64 - 1, FP32), 0, 0x5F800000, IXC),
    ("from_integer", (65520, FP16), 0, 0x7C00, OFC | IXC),
    ("to_integer", (0x4F000000, FP32, 32, False), 0, 2 ** 31 - 1, IOC),   # 2^31 saturates
    ("to_integer", (QNAN, FP32, 32, False), 0, 0, IOC),
    ("to_integer", (0xBFC00000, FP32, 32, False), 0, -1, IXC),    # -1.5 toward zero
    ("to_integer", (0xBFC00000, FP32, 32, True), 0, 0, IOC),      # unsigned: saturates to 0
    ("to_integer", (0xBF000000, FP32, 32, True), 0, 0, IXC),      # -0.5 -> 0 is in range
    ("scale", (ONE, 2 ** 62, FP32), 0, INF, OFC | IXC),
    ("scale", (ONE, -149, FP32), 0, 1, 0),
])
def test_the_reference_raises_the_exceptions_of_the_pseudocode(method, args, fpcr, result,
                                                               flags):
    assert _run(method, *args, fpcr=fpcr) == (result, flags)


@pytest.mark.parametrize("condition, operands, expected, flags", [
    ("eq", (QNAN, QNAN), False, 0), ("eq", (SNAN, ONE), False, IOC),
    ("ne", (QNAN, ONE), True, 0), ("un", (QNAN, ONE), True, 0), ("un", (ONE, SNAN), True, IOC),
    ("ge", (QNAN, ONE), False, IOC), ("gt", (ONE, 0), True, 0),
    ("eq", (0, 0x80000000), True, 0), ("ge", (INF, MAX), True, 0),
])
def test_comparisons_raise_invalid_for_signalling_nans_and_ordered_ones_for_any(
        condition, operands, expected, flags):
    assert _run("compare", *operands, FP32, condition) == (expected, flags)


def test_bfloat16_rounding_uses_fz_not_fz16():
    assert _run("convert_bf16", 0x00400000, fpcr=FZ) == (0, IDC)
    assert _run("convert_bf16", 0x00400000, fpcr=FZ16) == (0x0040, 0)
    assert BF16.minimum_exp == -126 and FP64.minimum_exp == -1022
