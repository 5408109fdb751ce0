"""The layer operators of sw/ops.py on the kernel library: dense, batch_matmul, conv2d.

* conv2d (NHWC, OHWI) with stride, padding, dilation and groups equals the direct numpy
  convolution :func:`zatile.sw.ops.conv2d_reference` exactly for int8 (independent of im2col:
  one einsum per kernel tap); for fp32 it is bit-identical to the GEMM reference of its patches
  and within rounding of the direct float64 convolution.
* Bias, ReLU and int8 requantization fuse into the kernels' epilogue: the results equal the
  numpy references (the quantized ReLU keeps values at or above the zero point).
* dense takes 1-D inputs (the GEMV path), batch_matmul broadcasts a 2-D b and sums the stats.
* The same bytes give the same results under QEMU and on the RTL.
* Bad arguments raise TypeError/ValueError naming them.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import need_tool
from tests.test_real_programs import _need_zig
from zatile.sw.ops import (batch_matmul, conv2d, conv2d_reference, dense, im2col, matmul,
                           matmul_reference, requantize_reference)


CONVOLUTIONS = [  # x shape, w shape, stride, padding, dilation, groups
    ((1, 6, 7, 3), (5, 3, 3, 3), 1, 0, 1, 1),
    ((2, 9, 8, 6), (4, 3, 2, 3), (2, 1), 1, (1, 2), 2),
    ((1, 5, 5, 4), (4, 1, 1, 1), 1, 0, 1, 4),                   # depthwise 1x1
    ((1, 8, 8, 2), (3, 2, 2, 2), 2, (0, 1), 1, 1),
]


def _int8(shape, rng) -> np.ndarray:
    return rng.integers(-128, 128, shape).astype(np.int8)


@pytest.mark.parametrize("svl", [128, 512])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, groups", CONVOLUTIONS)
def test_int8_conv2d_is_the_direct_convolution(x_shape, w_shape, stride, padding, dilation,
                                               groups, svl):
    _need_zig()
    rng = np.random.default_rng(sum(x_shape) + svl)
    x, w = _int8(x_shape, rng), _int8(w_shape, rng)
    result = conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups,
                    svl=svl)
    assert result.dtype == np.int32
    assert np.array_equal(result, conv2d_reference(x, w, stride, padding, dilation, groups))


def test_fp32_conv2d_is_the_gemm_reference_of_its_patches():
    _need_zig()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((6, 3, 3, 2)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    result = conv2d(x, w, bias, stride=1, padding=1, groups=2, activation="relu", svl=256)
    for group in range(2):
        patches = im2col(x[..., 2 * group:2 * group + 2], (3, 3), 1, 1)
        out = slice(3 * group, 3 * group + 3)
        expected = matmul_reference(patches.reshape(-1, 18), w[out].reshape(3, -1).T,
                                    bias=bias[out], clamp=(0, np.inf))
        assert np.array_equal(result[..., out].reshape(-1, 3).view(np.uint32),
                              expected.view(np.uint32)), group
    exact = np.maximum(conv2d_reference(x, w, 1, 1, 1, 2) + bias, 0)
    assert np.allclose(result, exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("svl", [128, 256])
def test_requantized_conv2d_with_relu_is_the_reference(svl):
    """conv → + bias → × per-channel scale → + zero point → ReLU (≥ zero point) → int8."""
    _need_zig()
    rng = np.random.default_rng(svl)
    x, w = _int8((1, 7, 7, 3), rng), _int8((5, 3, 3, 3), rng)
    bias = rng.integers(-3000, 3000, 5)
    scale = rng.uniform(1 / 2048, 1 / 512, 5).astype(np.float32)
    result = conv2d(x, w, bias, padding=1, activation="relu", scale=scale, zero_point=-5,
                    svl=svl)
    accumulators = conv2d_reference(x, w, 1, 1, 1, 1).astype(np.int32)
    expected = requantize_reference(accumulators, bias, scale, -5, (-5, 127))
    assert result.dtype == np.int8 and np.array_equal(result, expected)
    assert result.min() == -5 and result.max() > 0             # ReLU bites, not all clamped


def test_dense_is_x_times_w_transposed_with_bias_and_activation():
    _need_zig()
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((5, 11)).astype(np.float32), rng.standard_normal((9, 11))
    w = w.astype(np.float32)
    bias = rng.standard_normal(9)
    assert np.array_equal(dense(x, w, bias, "relu", svl=128),
                          matmul_reference(x, w.T, bias=bias, clamp=(0, np.inf)))
    assert np.array_equal(dense(x, w, activation=(-0.5, 0.5), svl=128),
                          matmul_reference(x, w.T, clamp=(-0.5, 0.5)))
    vector = dense(x[2], w, bias, svl=512)                              # M = 1: the GEMV path
    assert vector.shape == (9,) and np.array_equal(vector,
                                                   matmul_reference(x[2:3], w.T, bias=bias)[0])
    xi, wi = _int8((4, 16), rng), _int8((6, 16), rng)
    exact = xi.astype(np.int64) @ wi.astype(np.int64).T + np.arange(6)
    assert np.array_equal(dense(xi, wi, np.arange(6), "relu", svl=128), np.maximum(exact, 0))


def test_batch_matmul_broadcasts_b_and_sums_the_stats():
    _need_zig()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5, 6)).astype(np.float32)
    stats: dict = {}
    result = batch_matmul(a, b, svl=128, stats=stats)
    assert np.array_equal(result, np.stack([matmul_reference(a[i], b[i]) for i in range(3)]))
    single: dict = {}
    matmul(a[0], b[0], svl=128, stats=single)
    assert stats["engine_instructions"] == 3 * single["engine_instructions"]
    shared = batch_matmul(a, b[1], bias=np.ones(6), svl=128)
    assert np.array_equal(shared[2], matmul_reference(a[2], b[1], bias=np.ones(6)))


def test_operators_under_qemu_and_on_the_rtl_give_the_same_results():
    _need_zig()
    rng = np.random.default_rng(4)
    x, w = _int8((1, 5, 5, 2), rng), _int8((3, 2, 2, 2), rng)
    expected = conv2d_reference(x, w, 1, 0, 1, 1)
    assert np.array_equal(conv2d(x, w, backend="rtl", svl=128), expected)
    need_tool("qemu")
    assert np.array_equal(conv2d(x, w, backend="qemu", svl=256), expected)
    xf, wf = rng.standard_normal(7).astype(np.float32), rng.standard_normal((3, 7))
    assert np.array_equal(dense(xf, wf.astype(np.float32), activation="relu", backend="qemu"),
                          dense(xf, wf.astype(np.float32), activation="relu"))


@pytest.mark.parametrize("call, error, message", [
    (lambda: dense([1.0], np.ones((2, 1), np.float32)), TypeError, "x must be a numpy array"),
    (lambda: dense(np.ones((2, 2, 2), np.float32), np.ones((2, 2), np.float32)), ValueError,
     r"x must be 1-D or 2-D, not of shape \(2, 2, 2\)"),
    (lambda: dense(np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)), ValueError,
     r"x's features \(3\) must equal w's columns \(4\)"),
    (lambda: dense(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32),
                   activation="gelu"), ValueError, "not 'gelu'"),
    (lambda: batch_matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)),
     ValueError, r"a must be \(B, M, K\)"),
    (lambda: batch_matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32)),
     ValueError, r"not \(2, 2, 3\) and \(3, 3, 2\)"),
    (lambda: batch_matmul(np.ones((1, 2, 3), np.float32), np.ones((3, 2), np.float32),
                          accumulate=True), TypeError, "neither out nor accumulate"),
    (lambda: conv2d(np.ones((1, 4, 4), np.int8), np.ones((1, 1, 1, 1), np.int8)), ValueError,
     r"x must be 4-D \(NHWC\)"),
    (lambda: conv2d(np.ones((1, 4, 4, 3), np.int8), np.ones((4, 1, 1, 1), np.int8), groups=2),
     ValueError, "groups must divide x's channels \\(3\\) and w's outputs \\(4\\), not 2"),
    (lambda: conv2d(np.ones((1, 4, 4, 4), np.int8), np.ones((4, 1, 1, 1), np.int8), groups=2),
     ValueError, r"w's input channels \(1\) times groups \(2\) must equal x's channels \(4\)"),
    (lambda: conv2d(np.ones((1, 4, 4, 1), np.int8), np.ones((2, 1, 1, 1), np.int8), bias=[1]),
     ValueError, r"bias must have shape \(2,\), not \(1,\)"),
    (lambda: conv2d(np.ones((1, 4, 4, 1), np.int8), np.ones((2, 1, 1, 1), np.int8), stride=0),
     ValueError, "stride must be an int or a pair of ints >= 1, not 0"),
    (lambda: conv2d(np.ones((1, 4, 4, 1), np.int8), np.ones((2, 1, 1, 1), np.int8),
                    padding=(1, -1)), ValueError, r"padding must be .* >= 0, not \(1, -1\)"),
    (lambda: conv2d(np.ones((1, 2, 2, 1), np.int8), np.ones((2, 3, 3, 1), np.int8)),
     ValueError, "the kernel 3x3 .* does not fit the padded 2x2 input"),
])
def test_operators_reject_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
