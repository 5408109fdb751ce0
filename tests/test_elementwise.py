"""The elementwise and reduction operators (sw/kernels/elementwise.py, sw/ops.py).

* add, multiply, maximum and relu equal numpy for every element type at SVL 128 and 512 for
  lengths with and without a tail (1, a whole number of vectors, one more), floating point
  bit for bit (signed zeros included: FMAX makes +0 of -0 and +0, numpy may not, so the
  oracle states Arm's rule), integers wrapping; float16 and bfloat16 (ml_dtypes) too,
  subnormals and overflow to infinity included.
* requantize equals requantize_reference (ties to even, saturation, zero point).
* max_pool2d equals a direct numpy maximum over the windows (stride, padding, int8 and fp32).
* transpose through ZA (the engine-side packing of A) equals numpy's for every edge shape.
* softmax is bit-identical to softmax_reference at each SVL (whose sum order depends on the
  SVL: the reference of another SVL differs), within 1e-5 of the exact softmax.
* Each kernel is one VLA loop (whilelt, inc, b.first; no scalar tail), locally streaming
  without ZA; QEMU and the RTL give the same results.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import need_tool
from tests.test_real_programs import _need_zig
from zatile.sw import ops
from zatile.sw.kernels.elementwise import ELEMENT_TYPES, elementwise_kernels
from zatile.sw.kernels.gemm import numpy_dtype

DTYPES = [numpy_dtype(dtype) for dtype, _, _ in ELEMENT_TYPES.values()]


def _values(dtype: np.dtype, size: int, rng) -> np.ndarray:
    """Finite values (so no operation makes a NaN, whose payload numpy does not define) over
    the dtype's range, with signed zeros; float16 from subnormals to near its largest."""
    if dtype.kind == "f" or dtype == numpy_dtype("bfloat16"):
        scales = rng.integers(-20, 13, size) if dtype == np.float16 \
            else rng.integers(-30, 30, size)
        values = (rng.standard_normal(size) * 2.0 ** scales).astype(dtype)
        values[::7] = -0.0
        values[1::11] = 0.0
        return values
    limits = np.iinfo(dtype)
    return rng.integers(limits.min, limits.max, size, endpoint=True).astype(dtype)


def _arm_max(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """FMAX/SMAX of finite values: the larger; of two zeros +0 unless both are -0."""
    return np.where((x > y) | ((x == y) & ~np.signbit(x)), x, y).astype(x.dtype)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_binary_operators_and_relu_are_numpy(dtype, svl):
    _need_zig()
    rng = np.random.default_rng(svl + dtype.itemsize)
    vector = svl // 8 // dtype.itemsize
    for size in (1, 3 * vector, 3 * vector + 1):
        x, y = _values(dtype, size, rng), _values(dtype, size, rng)
        with np.errstate(over="ignore"):
            assert _same(ops.add(x, y, svl=svl), x + y), size
            assert _same(ops.multiply(x, y, svl=svl), x * y), size
        assert _same(ops.maximum(x, y, svl=svl), _arm_max(x, y)), size
        assert _same(ops.relu(x, svl=svl), _arm_max(x, np.zeros_like(x))), size
    matrix = _values(dtype, 12, rng).reshape(3, 4)[:, ::2]            # any strides and shape
    assert _same(ops.relu(matrix, svl=svl), _arm_max(matrix, np.zeros_like(matrix)))


def test_float_oracle_tells_the_zero_signs_apart():
    zeros = np.array([-0.0, 0.0, -0.0], np.float32)
    assert np.signbit(_arm_max(zeros, np.array([0.0, -0.0, -0.0], np.float32))).tolist() \
        == [False, False, True]
    assert not _same(np.array([0.0], np.float32), np.array([-0.0], np.float32))


@pytest.mark.parametrize("svl", [128, 256])
def test_requantize_is_the_reference(svl):
    _need_zig()
    rng = np.random.default_rng(svl)
    x = rng.integers(-2 ** 31, 2 ** 31, (7, 9)).astype(np.int32)
    x[0, :4] = [1, 3, -1, -3]                                    # ties at scale 0.5
    for scale, zero_point, clamp in ((0.5, 0, (-128, 127)), (2.0 ** -24, -3, (-50, 60)),
                                     (2.0 ** 100, 1, (-128, 127))):
        assert _same(ops.requantize(x, scale, zero_point, clamp, svl=svl),
                     ops.requantize_reference(x, 0, scale, zero_point, clamp))


@pytest.mark.parametrize("svl", [128, 512])
def test_transpose_through_za_is_numpys(svl):
    _need_zig()
    rng = np.random.default_rng(svl)
    for shape in ((1, 1), (5, 3), (37, 70), (16, 16)):
        x = rng.standard_normal(shape).astype(np.float32)
        assert _same(ops.transpose(x, svl=svl), np.ascontiguousarray(x.T)), shape
    integers = rng.integers(-2 ** 31, 2 ** 31, (9, 4)).astype(np.int32)
    assert _same(ops.transpose(integers, svl=svl), np.ascontiguousarray(integers.T))


@pytest.mark.parametrize("svl", [128, 512, 2048])
def test_softmax_is_the_reference_of_its_svl(svl):
    _need_zig()
    rng = np.random.default_rng(svl)
    x = (rng.standard_normal((6, 301)) * 8).astype(np.float32)
    x[1] = -200.0
    x[1, 7] = 0.0                                           # one winner, the rest below e^-87
    x[2] = 3.0                                              # all equal
    x[3, :5] = 50.0
    result = ops.softmax(x, svl=svl)
    assert _same(result, ops.softmax_reference(x, svl))
    exact = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    exact /= exact.sum(axis=1, keepdims=True)
    large = exact > 1e-30
    assert np.all(np.abs(result - exact)[large] <= 1e-5 * exact[large])
    assert np.allclose(result.sum(axis=1), 1, atol=1e-5) and result[1, 7] == 1.0
    other = 2048 if svl == 128 else 128                     # another sum order
    assert not _same(result, ops.softmax_reference(x, other))
    assert _same(ops.softmax(x[0], svl=svl), ops.softmax_reference(x[:1], svl)[0])


@pytest.mark.parametrize("dtype", [np.float32, numpy_dtype("bfloat16"), np.int8, np.int32],
                         ids=str)
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), ((2, 3), 1, 0),
                                                     (3, (1, 2), (1, 0))])
def test_max_pool2d_is_the_maximum_over_each_window(dtype, kernel, stride, padding):
    _need_zig()
    rng = np.random.default_rng(5)
    x = _values(np.dtype(dtype), 2 * 7 * 9 * 5, rng).reshape(2, 7, 9, 5)
    result = ops.max_pool2d(x, kernel, stride, padding, svl=256)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    sh, sw = (kh, kw) if stride is None else ((stride, stride) if isinstance(stride, int)
                                              else stride)
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    padded = np.pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)), constant_values=lowest)
    expected = np.empty_like(result)
    for i in range(result.shape[1]):
        for j in range(result.shape[2]):
            window = padded[:, i * sh:i * sh + kh, j * sw:j * sw + kw].reshape(2, -1, 5)
            expected[:, i, j] = window.max(axis=1)
    assert np.array_equal(result, expected)               # -0 vs +0 aside: see the next check
    assert _same(result, ops.max_pool2d_reference(x, kernel, stride, padding))


@pytest.mark.parametrize("name", list(elementwise_kernels()))
def test_each_kernel_is_one_vla_loop_without_a_scalar_tail(name):
    source = elementwise_kernels()[name]
    loops = 3 if name == "zatile_softmax_f32" else 1               # max; exp and sum; divide
    assert source.count("whilelt p0.") == 2 * loops and source.count("b.first") == loops
    assert re.search(r"inc[bhwd] +x8", source)
    assert "smstart sm" in source and "smstop  sm" in source
    assert not re.search(r"\bza\d|\{za\}|smstart *$|smstart za", source, re.MULTILINE)
    assert "tpidr2" not in source and "stp     d8, d9" in source


def test_operators_under_qemu_and_on_the_rtl():
    _need_zig()
    rng = np.random.default_rng(6)
    x, y = _values(np.dtype(np.float32), 29, rng), _values(np.dtype(np.float32), 29, rng)
    image = _values(np.dtype(np.int8), 1 * 6 * 6 * 3, rng).reshape(1, 6, 6, 3)
    for backend, svl in (("rtl", 128), ("qemu", 256)):
        if backend == "qemu":
            need_tool("qemu")
        assert _same(ops.add(x, y, backend=backend, svl=svl), x + y), backend
        assert _same(ops.relu(x, backend=backend, svl=svl), _arm_max(x, np.zeros_like(x)))
        for dtype in (np.dtype(np.float16), numpy_dtype("bfloat16")):
            half, other = _values(dtype, 21, rng), _values(dtype, 21, rng)
            with np.errstate(over="ignore"):
                assert _same(ops.multiply(half, other, backend=backend, svl=svl), half * other)
            assert _same(ops.maximum(half, other, backend=backend, svl=svl),
                         _arm_max(half, other)), (backend, dtype)
        assert _same(ops.max_pool2d(image, 2, backend=backend, svl=svl),
                     ops.max_pool2d_reference(image, 2)), backend
        wide = rng.integers(-10 ** 6, 10 ** 6, 13).astype(np.int32)
        assert _same(ops.requantize(wide, 0.01, 2, backend=backend, svl=svl),
                     ops.requantize_reference(wide, 0, 0.01, 2)), backend
        matrix = rng.standard_normal((6, 11)).astype(np.float32)
        assert _same(ops.transpose(matrix, backend=backend, svl=svl),
                     np.ascontiguousarray(matrix.T)), backend
        logits = (rng.standard_normal((3, 21)) * 5).astype(np.float32)
        assert _same(ops.softmax(logits, backend=backend, svl=svl),
                     ops.softmax_reference(logits, svl)), backend


@pytest.mark.parametrize("call, error, message", [
    (lambda: ops.add([1.0], np.ones(1)), TypeError, "x must be a numpy array, not list"),
    (lambda: ops.add(np.ones(2, np.uint8), np.ones(2, np.uint8)), TypeError,
     "x has dtype uint8; the elementwise operators take float16, bfloat16, float32, float64"),
    (lambda: ops.add(np.ones(2), np.ones(3)), ValueError,
     r"x and y must have one shape and dtype, not \(2,\) float64 and \(3,\) float64"),
    (lambda: ops.multiply(np.ones(2), np.ones(2, np.float32)), ValueError, "one shape and dtype"),
    (lambda: ops.requantize(np.ones(2, np.int64), 0.5), TypeError, "int32, not int64"),
    (lambda: ops.requantize(np.ones(2, np.int32), 0.5, clamp=(0, 300)), ValueError,
     r"-128 <= low <= high <= 127, not \(0, 300\)"),
    (lambda: ops.max_pool2d(np.ones((2, 2, 2), np.float32), 2), ValueError,
     "x must be a 4-D"),
    (lambda: ops.max_pool2d(np.ones((1, 4, 4, 1), np.float32), 2, padding=2), ValueError,
     "padding 2x2 must be smaller than the kernel 2x2"),
    (lambda: ops.max_pool2d(np.ones((1, 2, 2, 1), np.float32), 3), ValueError,
     r"the kernel 3x3 \(dilation 1x1\) does not fit the padded 2x2 input"),
    (lambda: ops.relu(np.ones(2), backend="fpga"), ValueError, "not 'fpga'"),
    (lambda: ops.softmax(np.ones(2)), TypeError, "softmax takes float32, not float64"),
    (lambda: ops.transpose(np.ones((2, 2))), ValueError,
     r"non-empty 2-D array of 32-bit elements, not a C-contiguous \(2, 2\) float64 array"),
    (lambda: ops.softmax(np.ones((2, 0), np.float32)), ValueError,
     r"at least one element on its last axis, not shape \(2, 0\)"),
])
def test_elementwise_operators_reject_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
