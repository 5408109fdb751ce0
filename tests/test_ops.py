"""The kernel library (sw/kernels) and the numpy operators on it (sw/ops).

* The floating-point GEMM kernels (fp32, fp64, fp16 and bf16 → fp32) give results
  bit-identical to :func:`zatile.sw.ops.matmul_reference` on the model at every SVL, for shapes
  with tails on every edge, K = 1 included; the integer kernels (int8 → int32 and int16 → int64;
  signed, unsigned, mixed) equal numpy's exact product wrapped to the result; the same kernel
  bytes give the same bits under QEMU 10 and on the RTL. The same holds with the fused
  epilogues: bias and clamp/ReLU for every type, and the int8 requantizing epilogue (per-column
  scale, ties to even, zero point, saturation) against :func:`zatile.sw.ops.requantize_reference`.
* The reference itself is checked against the exact Arm pseudocode (``sim/fpref.py``) element by
  element for each type, and is shown to tell a fused accumulation from an unfused one, and
  round-to-odd from round-to-nearest.
* ACLE C calls the kernels through their prototypes, from a caller with live ZA too (the
  lazy-save scheme), and the caller's ZA and callee-saved V8 survive, on the model and on QEMU.
* Bad operands raise TypeError/ValueError naming the argument.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tests.conftest import need_tool
from tests.test_real_programs import PROGRAMS, _need_zig, build_sources, run_oracle
from zatile.sim.fpref import bfdotadd, fdotadd_f16, fmla_f32, fmla_f64
from zatile.sw import toolchain
from zatile.sw.abi.runner import run_program
from zatile.sw.cli import main
from zatile.sw.kernels import library, library_source
from zatile.sw.kernels.gemm import GEMM_KERNELS, GemmKernel, gemm_kernel
from zatile.sw.kernels.gemm import outer_products as kernel_outer_products
from zatile.sw.bench import bench_gemm
from zatile.sw.ops import matmul, matmul_reference, requantize_reference

#: (M, N, K): K = 1, tails on every edge, and each blocking with several blocks at SVL 128
#: (1VL x 4VL: M <= VL; 4VL x 1VL: N <= VL).
SHAPES = [(1, 1, 1), (5, 3, 1), (19, 23, 7), (40, 9, 33), (16, 16, 16), (65, 2, 4),
          (3, 37, 5), (1, 70, 9)]


def _operands(m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scale = np.float32(2.0) ** rng.integers(-20, 20, (m, k))          # wide exponent range
    a = (rng.standard_normal((m, k)) * scale).astype(np.float32)
    return a, rng.standard_normal((k, n)).astype(np.float32)


def _bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint32)


@pytest.mark.parametrize("svl", [128, 256, 512])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_matmul_on_the_model_is_the_reference(m, n, k, svl):
    _need_zig()
    a, b = _operands(m, n, k, seed=m * 1000 + n * 10 + k)
    product = matmul(a, b, svl=svl)
    assert np.array_equal(_bits(product), _bits(matmul_reference(a, b)))
    exact, magnitude = a.astype(np.float64) @ b, np.abs(a.astype(np.float64)) @ np.abs(b)
    assert np.all(np.abs(product - exact) <= k * 2.0 ** -23 * magnitude + 2.0 ** -126)
    out = np.random.default_rng(svl).standard_normal((m, n)).astype(np.float32)
    expected = matmul_reference(a, b, out)
    assert matmul(a, b, out=out, accumulate=True, svl=svl) is out
    assert np.array_equal(_bits(out), _bits(expected))


#: The other floating-point types: the scale of their operands' exponents, and the result type.
FLOAT_TYPES = {np.float64: (500, np.float64), np.float16: (6, np.float32),
               ml_dtypes.bfloat16: (40, np.float32)}


def _typed_operands(dtype, m: int, n: int, k: int, seed: int):
    """Operands of ``dtype`` over a wide exponent range, with signed zeros, and a C to add to."""
    rng = np.random.default_rng(seed)
    spread, result = FLOAT_TYPES[dtype]

    def values(shape):
        scale = 2.0 ** rng.integers(-spread, spread, shape)
        array = (rng.standard_normal(shape) * scale).astype(dtype)
        array.flat[rng.integers(0, array.size, array.size // 8)] = dtype(-0.0)
        return array

    return values((m, k)), values((k, n)), rng.standard_normal((m, n)).astype(result)


def _same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and np.array_equal(np.ascontiguousarray(x).view(np.uint8),
                                                 np.ascontiguousarray(y).view(np.uint8))


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (19, 23, 7), (40, 9, 33), (65, 2, 4)])
@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda dtype: np.dtype(dtype).name)
def test_other_float_matmuls_on_the_model_are_the_reference(dtype, m, n, k, svl):
    _need_zig()
    a, b, out = _typed_operands(dtype, m, n, k, seed=m + n + k)
    assert _same_bits(matmul(a, b, svl=svl), matmul_reference(a, b))
    expected = matmul_reference(a, b, out)
    assert _same_bits(matmul(a, b, out=out, accumulate=True, svl=svl), expected)


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("dtype", [np.float32, *FLOAT_TYPES],
                         ids=lambda dtype: np.dtype(dtype).name)
def test_epilogue_on_the_model_is_the_reference(dtype, svl):
    """bias, clamp and both, with and without accumulation, with tails on every edge."""
    _need_zig()
    if dtype is np.float32:
        a, b = _operands(19, 23, 7, seed=12)
        out = np.random.default_rng(12).standard_normal((19, 23)).astype(np.float32)
    else:
        a, b, out = _typed_operands(dtype, 19, 23, 7, seed=12)
    scale = np.abs(matmul_reference(a, b)).max()
    bias = np.random.default_rng(13).standard_normal(23) * scale
    for keywords in ({"bias": bias}, {"clamp": (0, np.inf)},
                     {"bias": bias, "clamp": (-scale / 4, scale / 2)}):
        assert _same_bits(matmul(a, b, svl=svl, **keywords),
                          matmul_reference(a, b, **keywords)), keywords
        expected = matmul_reference(a, b, out, **keywords)
        assert _same_bits(matmul(a, b, out=out.copy(), accumulate=True, svl=svl, **keywords),
                          expected), keywords


def test_epilogue_clamps_zeros_as_arm_fmax_and_fmin_do():
    """-0 clamped to [+0, inf] is +0 (numpy's maximum may keep -0), +0 to [-inf, -0] is -0;
    an absent bias adds -0, which keeps a -0."""
    _need_zig()
    a, b = np.array([[-1.0]], np.float32), np.array([[0.0]], np.float32)
    negative_zero = np.array([[-0.0]], np.float32)                   # -1·0 + -0 = -0
    for clamp, sign in (((0, np.inf), 0), ((-np.inf, -0.0), 1), (None, 1)):
        result = matmul(a, b, out=negative_zero.copy() if sign else np.zeros((1, 1), np.float32),
                        accumulate=True, clamp=clamp, bias=None if clamp else [-0.0], svl=128)
        assert result[0, 0] == 0 and np.signbit(result[0, 0]) == sign, clamp
        expected = matmul_reference(a, b, negative_zero if sign else np.zeros((1, 1)),
                                    clamp=clamp, bias=None if clamp else [-0.0])
        assert _same_bits(result, expected), clamp


@pytest.mark.parametrize("svl", [1024, 2048])
def test_large_svls_give_the_reference(svl):
    """The same binary at the largest SVLs (VL = 32 and 64 fp32 elements): every blocking
    with tails."""
    _need_zig()
    for m, n, k in ((70, 150, 9), (5, 300, 3), (200, 3, 2)):
        a, b = _operands(m, n, k, seed=svl + m)
        assert _same_bits(matmul(a, b, svl=svl), matmul_reference(a, b)), (m, n, k)
    rng = np.random.default_rng(svl)
    a, b = _integers(np.int8, (130, 33), rng), _integers(np.uint8, (33, 70), rng)
    assert np.array_equal(matmul(a, b, svl=svl), a.astype(np.int32) @ b.astype(np.int32))


INTEGER_PAIRS = [(np.int8, np.int8), (np.uint8, np.uint8), (np.uint8, np.int8),
                 (np.int8, np.uint8), (np.int16, np.int16), (np.uint16, np.uint16),
                 (np.uint16, np.int16), (np.int16, np.uint16)]


def _integers(dtype, shape, rng) -> np.ndarray:
    limits = np.iinfo(dtype)
    return rng.integers(limits.min, limits.max + 1, shape).astype(dtype)


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (19, 23, 7), (33, 17, 13), (8, 40, 64)])
@pytest.mark.parametrize("a_type, b_type", INTEGER_PAIRS,
                         ids=[f"{a.__name__}x{b.__name__}" for a, b in INTEGER_PAIRS])
def test_integer_matmul_on_the_model_is_exact(a_type, b_type, m, n, k, svl):
    _need_zig()
    rng = np.random.default_rng(m + n + k + svl)
    a, b = _integers(a_type, (m, k), rng), _integers(b_type, (k, n), rng)
    result = np.int32 if np.dtype(a_type).itemsize == 1 else np.int64
    exact = (a.astype(object) @ b.astype(object))            # Python integers: no overflow
    assert np.array_equal(matmul(a, b, svl=svl), _wrap(exact, result))
    out = _integers(result, (m, n), rng)                      # the sum wraps modulo 2^32 or 2^64
    expected = _wrap(out.astype(object) + exact, result)
    assert np.array_equal(matmul(a, b, out=out, accumulate=True, svl=svl), expected)


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("a_type, b_type", [(np.int8, np.int8), (np.uint8, np.int8),
                                            (np.int16, np.uint16)],
                         ids=["int8xint8", "uint8xint8", "int16xuint16"])
def test_integer_epilogue_on_the_model_is_exact(a_type, b_type, svl):
    """bias wraps like the accumulators, then SMAX/SMIN clamp; with accumulation too."""
    _need_zig()
    rng = np.random.default_rng(svl)
    a, b = _integers(a_type, (19, 13), rng), _integers(b_type, (13, 23), rng)
    result = np.int32 if np.dtype(a_type).itemsize == 1 else np.int64
    exact = a.astype(object) @ b.astype(object)
    bias = _integers(result, 23, rng)
    product = _wrap(exact + bias.astype(object), result)
    low, high = np.sort(rng.choice(product.ravel(), 2))
    assert np.array_equal(matmul(a, b, bias=bias, clamp=(low, high), svl=svl),
                          np.clip(product, low, high))
    out = _integers(result, (19, 23), rng)
    expected = np.clip(_wrap(out.astype(object) + exact, result), 0, None)   # ReLU
    assert np.array_equal(matmul(a, b, out=out, accumulate=True, clamp=(0, np.iinfo(result).max),
                                 svl=svl), expected)


def _requantize_case(rng, a_type=np.int8, b_type=np.int8):
    """int8 operands, a bias, per-column scales (a tie-making 0.5 and one that saturates)."""
    a, b = _integers(a_type, (19, 37), rng), _integers(b_type, (37, 23), rng)
    bias = rng.integers(-5000, 5000, 23)
    scale = rng.uniform(1 / 4096, 1 / 256, 23).astype(np.float32)
    scale[0], scale[1] = 0.5, 2.0 ** 100
    return a, b, bias, scale


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("a_type, b_type", INTEGER_PAIRS[:4],
                         ids=[f"{a.__name__}x{b.__name__}" for a, b in INTEGER_PAIRS[:4]])
def test_requantize_on_the_model_is_the_reference(a_type, b_type, svl):
    _need_zig()
    rng = np.random.default_rng(svl + 1)
    a, b, bias, scale = _requantize_case(rng, a_type, b_type)
    accumulators = _wrap(a.astype(object) @ b.astype(object), np.int32)
    for zero_point, clamp in ((0, (-128, 127)), (-7, (-7, 127)), (5, (-100, 90))):
        expected = requantize_reference(accumulators, bias, scale, zero_point, clamp)
        result = matmul(a, b, bias=bias, scale=scale, zero_point=zero_point, clamp=clamp,
                        svl=svl)
        assert result.dtype == np.int8 and np.array_equal(result, expected), (zero_point, clamp)
    one_scale = matmul(a, b, scale=0.01, svl=svl)                     # one scale for every column
    assert np.array_equal(one_scale, requantize_reference(accumulators, 0, 0.01))


def test_requantize_reference_rounds_ties_to_even_and_saturates():
    accumulators = np.array([[1, 3, 5, -1, -3, 7]], np.int32)
    assert requantize_reference(accumulators, 0, 0.5).tolist() == [[0, 2, 2, 0, -2, 4]]
    assert requantize_reference(accumulators, 0, 2.0 ** 100, 0, (-128, 127)).tolist() \
        == [[127, 127, 127, -128, -128, 127]]
    # saturated to 2^31 - 1, then the zero point wraps it around, as FCVTZS + ADD do
    assert requantize_reference(np.array([[1]], np.int32), 0, 2.0 ** 100, 1).tolist() == [[-128]]


def _wrap(values: np.ndarray, dtype) -> np.ndarray:
    """Python integers wrapped to a two's complement dtype."""
    bits = np.iinfo(dtype).bits
    return np.vectorize(lambda value: (value + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1),
                        otypes=[object])(values).astype(dtype)


@pytest.mark.parametrize("svl", [128, 512])
def test_matmul_under_qemu_gives_the_same_bits(svl):
    _need_zig()
    need_tool("qemu")
    a, b = _operands(19, 23, 7, seed=5)
    assert np.array_equal(_bits(matmul(a, b, backend="qemu", svl=svl)),
                          _bits(matmul(a, b, svl=svl)))
    out = np.ones((19, 23), np.float32)
    matmul(a, b, out=out, accumulate=True, backend="qemu", svl=svl)
    assert np.array_equal(_bits(out), _bits(matmul_reference(a, b, np.ones((19, 23)))))
    rng = np.random.default_rng(svl)
    for a_type, b_type in INTEGER_PAIRS:
        a, b = _integers(a_type, (19, 13), rng), _integers(b_type, (13, 23), rng)
        assert np.array_equal(matmul(a, b, backend="qemu", svl=svl), matmul(a, b, svl=svl))
    for dtype in FLOAT_TYPES:
        a, b, out = _typed_operands(dtype, 19, 23, 7, seed=svl)
        assert _same_bits(matmul(a, b, backend="qemu", svl=svl), matmul_reference(a, b))
        expected = matmul_reference(a, b, out)
        assert _same_bits(matmul(a, b, out=out, accumulate=True, backend="qemu", svl=svl),
                          expected)
        bias = np.linspace(-1, 1, 23)
        assert _same_bits(matmul(a, b, bias=bias, clamp=(0, np.inf), backend="qemu", svl=svl),
                          matmul_reference(a, b, bias=bias, clamp=(0, np.inf)))
    a, b, bias, scale = _requantize_case(rng)
    assert np.array_equal(
        matmul(a, b, bias=bias, scale=scale, zero_point=3, backend="qemu", svl=svl),
        requantize_reference(_wrap(a.astype(object) @ b.astype(object), np.int32), bias, scale,
                             3))


def test_matmul_on_the_rtl_gives_the_same_bits():
    _need_zig()
    a, b = _operands(19, 23, 7, seed=6)
    assert np.array_equal(_bits(matmul(a, b, backend="rtl", svl=128)),
                          _bits(matmul_reference(a, b)))
    rng = np.random.default_rng(6)
    a, b = _integers(np.uint8, (19, 13), rng), _integers(np.int8, (13, 23), rng)
    out = np.full((19, 23), 7, np.int32)
    matmul(a, b, out=out, accumulate=True, backend="rtl", svl=128)
    assert np.array_equal(out, a.astype(np.int32) @ b.astype(np.int32) + 7)
    for dtype in FLOAT_TYPES:
        a, b, out = _typed_operands(dtype, 19, 23, 7, seed=9)
        assert _same_bits(matmul(a, b, backend="rtl", svl=128), matmul_reference(a, b))
    a, b = _operands(19, 23, 7, seed=10)
    bias = np.linspace(-1, 1, 23)
    assert _same_bits(matmul(a, b, bias=bias, clamp=(-0.5, 2), backend="rtl", svl=128),
                      matmul_reference(a, b, bias=bias, clamp=(-0.5, 2)))
    a, b, bias, scale = _requantize_case(rng)
    assert np.array_equal(
        matmul(a, b, bias=bias, scale=scale, zero_point=3, backend="rtl", svl=128),
        requantize_reference(_wrap(a.astype(object) @ b.astype(object), np.int32), bias, scale,
                             3))
    a, b = _integers(np.int16, (9, 7), rng), _integers(np.uint16, (7, 5), rng)
    assert np.array_equal(matmul(a, b, backend="rtl", svl=128),
                          _wrap(a.astype(object) @ b.astype(object), np.int64))


@pytest.mark.parametrize("m, n, blocking, outer_products", [
    (1, 16, "1VL x 4VL", 32), (16, 1, "4VL x 1VL", 32), (8, 8, "2VL x 2VL", 32),
    (1, 17, "1VL x 4VL", 64)])
def test_blocking_is_chosen_by_shape(m, n, blocking, outer_products, capsys):
    """At SVL 128 (VL = 4): one 4VL-long block takes 8 k steps x 4 MOPAs; 2VL x 2VL would
    need two blocks (64) for M = 1, N = 16. The generator's count of the kernel's outer
    products says the same; no progress bar is drawn when stderr is not a terminal."""
    _need_zig()
    a, b = _operands(m, n, 8, seed=14)
    stats = {}
    assert _same_bits(matmul(a, b, backend="rtl", svl=128, stats=stats), matmul_reference(a, b))
    assert stats["outer_products"] == outer_products, blocking
    assert kernel_outer_products(m, n, 8, vl=4) == outer_products
    assert capsys.readouterr().err == ""


def test_progress_bar_follows_the_simulation(capsys):
    """``progress=True`` draws a tqdm bar on stderr, fed while the simulation runs: it passes
    through counts between 0 and the kernel's outer products (3,456 here, 6 x 6 blocks of
    2VL x 2VL x 24 k steps x 4: about 4,000 cycles, two reports) and ends there."""
    _need_zig()
    a, b = _operands(48, 48, 24, seed=15)
    assert _same_bits(matmul(a, b, backend="rtl", svl=128, progress=True),
                      matmul_reference(a, b))
    counts = [int(count) for count in re.findall(r"(\d+)/3456 ", capsys.readouterr().err)]
    assert counts[-1] == 3456 and any(0 < count < 3456 for count in counts), counts
    assert counts == sorted(counts)


def test_reference_is_the_arm_fused_multiply_add_in_order():
    """Element by element against FPMulAdd of sim/fpref.py (the Arm pseudocode, exact)."""
    a, b = _operands(3, 4, 9, seed=7)
    c = np.random.default_rng(8).standard_normal((3, 4)).astype(np.float32)
    reference = matmul_reference(a, b, c)
    for i in range(3):
        for j in range(4):
            total = int(_bits(c)[i, j])
            for p in range(9):
                total = fmla_f32(total, int(_bits(a)[i, p]), int(_bits(b)[p, j]), 0)
            assert total == reference.view(np.uint32)[i, j], (i, j)


def _reference_by_pseudocode(dtype, a, b, c) -> np.ndarray:
    """The kernels' result element by element from sim/fpref.py (K padded to pairs by +0)."""
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}
    a_bits = np.ascontiguousarray(a).view(unsigned[a.itemsize])
    b_bits = np.ascontiguousarray(b).view(unsigned[b.itemsize])
    total = np.ascontiguousarray(c).view(unsigned[c.itemsize]).copy()
    k = a.shape[1]
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            row = [int(value) for value in a_bits[i]]
            column = [int(value) for value in b_bits[:, j]]
            element = int(total[i, j])
            if dtype is np.float64:
                for p in range(k):
                    element = fmla_f64(element, row[p], column[p], 0)
            else:
                row, column = row + [0] * (k % 2), column + [0] * (k % 2)
                for p in range(0, len(row), 2):
                    element = (fdotadd_f16(element, row[p], row[p + 1], column[p], column[p + 1], 0)
                               if dtype is np.float16 else
                               bfdotadd(element, row[p], row[p + 1], column[p], column[p + 1]))
            total[i, j] = element
    return total.view(c.dtype)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda dtype: np.dtype(dtype).name)
def test_reference_of_the_other_types_is_the_arm_pseudocode(dtype):
    """Subnormal, huge and signed-zero operands and addends included (bf16 flushes them)."""
    a, b, c = _typed_operands(dtype, 6, 5, 9, seed=11)
    tiny = np.finfo(np.float32 if dtype is ml_dtypes.bfloat16 else dtype).smallest_subnormal
    a[0, :3], c[1, 1], c[2, 2] = dtype(tiny), tiny, -0.0
    assert _same_bits(matmul_reference(a, b, c), _reference_by_pseudocode(dtype, a, b, c))


def test_bfloat16_reference_rounds_to_odd():
    """(1 + 2^-7)² = 1 + 2^-6 + 2^-14, plus 2^-30: round to nearest gives 1 + 2^-6 + 2^-14,
    round to odd sets the last bit of the float32."""
    one = ml_dtypes.bfloat16(1 + 2 ** -7)
    a, b = np.array([[one, 1]], ml_dtypes.bfloat16), np.array([[one], [2 ** -30]],
                                                               ml_dtypes.bfloat16)
    nearest = np.float32(1 + 2 ** -6 + 2 ** -14)
    assert matmul_reference(a, b)[0, 0].view(np.uint32) == nearest.view(np.uint32) | 1


def test_reference_rejects_mixed_or_unknown_dtypes():
    with pytest.raises(TypeError, match="not float32 and float64"):
        matmul_reference(np.ones((1, 1), np.float32), np.ones((1, 1)))
    with pytest.raises(TypeError, match="not int8 and int8"):
        matmul_reference(np.ones((1, 1), np.int8), np.ones((1, 1), np.int8))


def test_reference_tells_fused_from_unfused_accumulation():
    """1 + 2^-24 times 1 - 2^-24, added to -1: fused keeps -2^-48, unfused rounds to 0."""
    a = np.array([[1 + 2.0 ** -23, 1.0]], np.float32).reshape(1, 2)
    b = np.array([[1 - 2.0 ** -24], [-1.0]], np.float32)
    fused = matmul_reference(a[:, ::-1], b[::-1])          # -1 first, then the product
    unfused = np.float32(np.float32(-1.0) + np.float32(a[0, 0] * b[0, 0]))
    assert fused[0, 0] != unfused and fused[0, 0] == np.float32(2.0 ** -23 - 2.0 ** -24
                                                                - 2.0 ** -47)


@pytest.mark.parametrize("name", GEMM_KERNELS)
def test_generated_kernel_is_readable_and_follows_the_sme_interface(name):
    kernel = GEMM_KERNELS[name]
    source = gemm_kernel(name, kernel)
    mopa, load, tile = {
        "f32": ("fmopa", "ld1w", "s"), "f64": ("fmopa", "ld1d", "d"),
        "f16": ("fmopa", "ld1h", "s"), "bf16": ("bfmopa", "ld1h", "s"),
        "s8": ("smopa", "ld1b", "s"), "u8": ("umopa", "ld1b", "s"),
        "u8s8": ("usmopa", "ld1b", "s"), "s8u8": ("sumopa", "ld1b", "s"),
        "s16": ("smopa", "ld1h", "d"), "u16": ("umopa", "ld1h", "d"),
        "u16s16": ("usmopa", "ld1h", "d"), "s16u16": ("sumopa", "ld1h", "d")}[kernel.types]
    # Three blockings (1VL x 4VL, 4VL x 1VL, 2VL x 2VL), each with a k loop of 4 MOPAs fed by
    # 5, 5 and 4 vector loads per k group, chosen at run time by comparing M and N with VL.
    # The loop does two k groups, the second with the next registers; an odd last one follows.
    bodies = re.split(r"\n\.L\w+_[124]x[124]:", source)[1:]
    assert len(bodies) == 3
    for body, (rows, columns) in zip(bodies, [(2, 2), (4, 1), (1, 4)]):
        loop = body[body.index("_k:"):body.index("b.ne")]
        last = body[body.index("_last:"):body.index("_store:")]
        registers = rows + columns
        assert loop.count(f"{mopa:<7} za") == 8 and last.count(f"{mopa:<7} za") == 4
        assert len(re.findall(rf"{load} +{{z\d\.", loop)) == 2 * registers, (rows, columns)
        assert len(re.findall(rf"{load} +{{z\d\.", last)) == registers, (rows, columns)
        for first in (0, registers):
            assert (f"{mopa:<7} za3.{tile}, p{rows - 1}/m, p{registers - 1}/m, "
                    f"z{first + rows - 1}.") in loop
    assert "cmp     x3, x6" in source and "cmp     x4, x6" in source
    for required in ("bl      __arm_tpidr2_save", "msr     tpidr2_el0, xzr", "smstart", "smstop",
                     "stp     d8, d9", "ldp     d14, d15", "whilelt p3.", "// A, row tile 1",
                     "// B, column tile 3", "#3, mul vl]"):
        assert required in source, required
    c_load = f"ld1{'w' if tile == 's' else 'd'}    {{za0h.{tile}"
    assert (c_load in source) == kernel.accumulate                     # C read only to add
    maximum, minimum = ("fmax", "fmin") if mopa.endswith("fmopa") else ("smax", "smin")
    epilogue = (f"mov     z16.{tile}, p2/m, za0h.{tile}[w12, 0]",
                f"{maximum}    z16.{tile}, p6/m", f"{minimum}    z19.{tile}, p6/m",
                "stp     x19, x20, [sp, #80]", "// + bias")
    assert all((line in source) == bool(kernel.epilogue) for line in epilogue)
    assert name.endswith(f"_{kernel.epilogue}") or not kernel.epilogue
    requantize = ("scvtf   z16.s", "fmul    z17.s, z17.s, z25.s", "frintn  z16.s",
                  "fcvtzs  z17.s", "add     z16.s, z16.s, z30.s", "st1b    {z16.s}, p2, [x15]",
                  "str     x21, [sp, #96]", "ldr     x21, [sp, #96]")
    assert all((line in source) == (kernel.epilogue == "requantize") for line in requantize)
    with pytest.raises(ValueError, match="C identifier"):
        gemm_kernel("bad name", kernel)
    with pytest.raises(ValueError, match="unknown GEMM types 'f8'"):
        gemm_kernel(name, GemmKernel("f8", False))


def _caller() -> Path:
    """tests/programs/kernel_caller.c linked with the generated kernels (cached by content)."""
    _need_zig()
    assembly = library_source()
    kernels = toolchain.cache_directory().parent / "programs" / (
        f"kernels-{hashlib.sha256(assembly.encode()).hexdigest()[:16]}.S")
    if not kernels.exists():
        kernels.parent.mkdir(parents=True, exist_ok=True)
        partial = kernels.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(assembly)
        partial.replace(kernels)
    return build_sources("kernel_caller", [PROGRAMS / "kernel_caller.c", kernels])


CALLER_OUTPUT = (b"zatile_gemm_f32: ok\nV8 across the call: kept\nzatile_gemm_acc_f32: ok\n"
                 b"from a caller with live ZA: ok\nthe caller's ZA: kept\n")


@pytest.mark.parametrize("svl", [128, 512])
def test_acle_callers_keep_their_za_and_callee_saved_registers(svl):
    program = _caller()
    stdout = io.BytesIO()
    result = run_program(program, [str(program)], svl=svl, stdout=stdout)
    assert (result.status, stdout.getvalue()) == (0, CALLER_OUTPUT)
    assert run_oracle(program, svl=svl) == (0, CALLER_OUTPUT)


def test_library_is_one_cached_executable():
    _need_zig()
    path = library()
    assert library() == path and path.read_bytes()[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", path.read_bytes(), 18)[0] == 183        # EM_AARCH64


@pytest.mark.parametrize("arguments, keywords, error, message", [
    (([[1.0]], np.ones((1, 1), np.float32)), {}, TypeError, "a must be a numpy array"),
    ((np.ones((2, 3), np.float64), np.ones((3, 2), np.float32)), {}, TypeError,
     "dtypes float64 and float32; matmul supports float32 x float32, float64 x float64, "
     "float16 x float16, bfloat16 x bfloat16, int8 x int8"),
    ((np.ones((2, 3), np.float32), np.ones((2, 2), np.float32)), {}, ValueError,
     r"a's columns \(3\) must equal b's rows \(2\)"),
    ((np.ones(3, np.float32), np.ones((3, 2), np.float32)), {}, ValueError, "a must be 2-D"),
    ((np.ones((2, 0), np.float32), np.ones((0, 2), np.float32)), {}, ValueError,
     "must not be empty"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"accumulate": True},
     ValueError, "give out"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)),
     {"out": np.ones((2, 3), np.float32)}, ValueError,
     r"out must be a C-contiguous \(2, 2\) float32 array, not a C-contiguous \(2, 3\)"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)), {"out": np.ones((2, 2), np.float32)},
     ValueError, r"\(2, 2\) int32 array"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"backend": "fpga"},
     ValueError, "not 'fpga'"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)), {"bias": [1.5, 2]}, TypeError,
     "bias of integer results must be integers, not float64"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)), {"clamp": (0.5, 2)}, ValueError,
     r"clamp must be \(low, high\) of integers, not \(0.5, 2\)"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"scale": 0.5}, TypeError,
     "scale requantizes int32 results to int8, not float32 results"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)),
     {"scale": 0.5, "out": np.ones((2, 2), np.int32), "accumulate": True}, ValueError,
     "cannot accumulate"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)), {"scale": [0.5] * 3}, ValueError,
     r"scale must be one value or have shape \(2,\), not \(3,\)"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)), {"scale": 1, "clamp": (-200, 0)},
     ValueError, r"-128 <= low <= high <= 127, not \(-200, 0\)"),
    ((np.ones((2, 3), np.int8), np.ones((3, 2), np.int8)),
     {"scale": 1, "out": np.ones((2, 2), np.int32)}, ValueError, r"\(2, 2\) int8 array"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"bias": [1, 2, 3]},
     ValueError, r"bias must have shape \(2,\), not \(3,\)"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"clamp": (1, 0)},
     ValueError, r"-inf <= low <= high <= inf, not \(1, 0\)"),
    ((np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), {"clamp": 0.5},
     ValueError, r"clamp must be \(low, high\) of floats, not 0.5"),
])
def test_matmul_rejects_bad_operands(arguments, keywords, error, message):
    with pytest.raises(error, match=message):
        matmul(*arguments, **keywords)


def test_bench_gemm_prints_counts_and_json(capsys):
    _need_zig()
    assert main(["bench", "gemm", "--svl", "128,512", "--size", "19", "23", "7", "--dtype",
                 "fp32,int8"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gemm fp32 19x23x7 on the model at SVL 128: 210 outer products "
                               "needed") and len(lines) == 4          # 5 x 6 tiles x 7
    assert main(["bench", "gemm", "--svl", "128", "--size", "19", "23", "7", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (figures["dtype"], figures["m"], figures["mopas"], figures["utilization"],
            figures["exact"]) == ("fp32", 19, 210, None, True)


def test_bench_gemm_fails_when_the_result_is_wrong(monkeypatch, capsys):
    """Planted: the product comes back with one element changed; the benchmark says so and
    exits with status 1."""
    _need_zig()
    correct = matmul

    def one_wrong(*arguments, **keywords):
        product = correct(*arguments, **keywords)
        product[3, 4] += 1
        return product

    monkeypatch.setattr("zatile.sw.ops.matmul", one_wrong)
    assert main(["bench", "gemm", "--svl", "128", "--size", "8", "8", "8", "--dtype",
                 "int8"]) == 1
    assert capsys.readouterr().out.endswith("; THE RESULT DIFFERS FROM THE REFERENCE\n")


def test_bench_gemm_utilization_on_the_rtl(tmp_path, capsys):
    _need_zig()
    plot = tmp_path / "utilization.png"
    assert main(["bench", "gemm", "--backend", "rtl", "--svl", "128", "--size", "8", "8", "8",
                 "--json", "--plot", str(plot)]) == 0
    figures = json.loads(capsys.readouterr().out.splitlines()[-1])
    # Deterministic cycles: 2 x 2 tiles x 8 k steps needed; the kernel issues 4 per 2VL block.
    assert (figures["mopas"], figures["outer_products"], figures["busy_cycles"]) == (32, 32, 68)
    assert figures["utilization"] == 32 / 68 and figures["exact"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_library_gemm_keeps_the_engine_busy_on_the_rtl():
    """A whole library GEMM, the host running ahead (docs/architecture.md): fp32 16 x 16 x 256
    at SVL 128 is four 2VL x 2VL blocks of 1,024 outer products each, with their loads,
    predicates and the stores of C (posted, one per cycle): 4,224 busy cycles, 0.97 outer
    products per cycle (0.93 when a store held dispatch for 4 cycles); all but SMSTART/SMSTOP,
    the CNTWs and the WHILELTs at the start of a block stream."""
    _need_zig()
    figures = bench_gemm("fp32", 16, 16, 256, 128, "rtl")
    assert figures["exact"] and (figures["mopas"], figures["busy_cycles"]) == (4096, 4224)
    assert figures["utilization"] > 0.95
    assert figures["engine_streamed"] > 0.99 * figures["engine_instructions"]


@pytest.mark.parametrize("arguments, message", [
    (["bench", "gemm", "--dtype", "fp8"],
     "expected dtypes from fp32, fp64, fp16, bf16, int8, int16, not 'fp8'"),
    (["bench", "--size", "1", "2", "3"], "belong to 'zatile bench gemm'"),
    (["bench", "gemm", "--workloads", "mopa"], "does not apply"),
    (["bench", "gemm", "--svl", "128", "--size", "2", "2", "2", "--plot", "x.png"],
     "needs utilization figures"),
])
def test_bench_gemm_errors(arguments, message, capsys):
    try:
        status = main(arguments)
    except SystemExit as exit_:                    # argparse's own errors
        status = exit_.code
    assert status == 2
    error = capsys.readouterr().err
    assert error.startswith("zatile: error:") and message in error and error.count("\n") == 1
