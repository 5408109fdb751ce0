"""Operators for numpy users, computed by the engine's kernels (:mod:`zatile.sw.kernels`).

Each operator takes and returns numpy arrays and runs the same kernel bytes on any backend:

* ``model``: the host CPU and the reference model, in this process;
* ``rtl``: the host CPU and the engine's Verilog under Verilator (one simulation per call);
* ``qemu``: ``qemu-aarch64 -cpu max,sme=on`` running the library's command-line harness.

Floating-point results are bit-identical to :func:`matmul_reference`, which states the
accumulation order and the roundings the kernels use.
"""

from __future__ import annotations

import io
import operator
import subprocess
import tempfile
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import numpy as np
from tqdm import tqdm

from zatile.sim.qemu import qemu_sme_cpu_option
from zatile.sim.tools import find_tool
from zatile.sw.abi.elf_process import ElfProcess, load_elf_image
from zatile.sw.abi.rtl_exec import call_rtl
from zatile.sw.kernels import library
from zatile.sw.kernels.elementwise import ELEMENT_TYPES, SOFTMAX_CONSTANTS
from zatile.sw.kernels.gemm import GEMM_TYPES, GemmKernel, numpy_dtype, outer_products

__all__ = ["BACKENDS", "matmul", "dense", "batch_matmul", "conv2d", "im2col", "add", "multiply",
           "maximum", "relu", "max_pool2d", "requantize", "softmax", "transpose",
           "matmul_reference",
           "requantize_reference", "conv2d_reference", "max_pool2d_reference",
           "softmax_reference"]

#: The backends an operator runs on.
BACKENDS = ("model", "rtl", "qemu")
#: Where the operands are placed in the kernel library's address space (model and RTL).
_BUFFERS = 0x0000_6000_0000_0000
_PAGE = 0x1000


def _check_matrix(name: str, value) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, not {type(value).__name__}")
    if value.ndim != 2:
        raise ValueError(f"{name} must be 2-D, not of shape {value.shape}")
    if 0 in value.shape:
        raise ValueError(f"{name} must not be empty, not of shape {value.shape}")
    return value


def _gemm_types(a: np.ndarray, b: np.ndarray) -> str:
    """The kernels' name for the dtype pair (:data:`~zatile.sw.kernels.gemm.GEMM_TYPES`)."""
    for name, kind in GEMM_TYPES.items():
        if (a.dtype, b.dtype) == (numpy_dtype(kind.a), numpy_dtype(kind.b)):
            return name
    pairs = ", ".join(f"{kind.a} x {kind.b}" for kind in GEMM_TYPES.values())
    raise TypeError(f"a and b have dtypes {a.dtype} and {b.dtype}; matmul supports {pairs}")


def _pack(matrix: np.ndarray, group: int, columns_of_a: bool) -> bytes:
    """The kernels' operand layout: per k group, each row of A (or column of B) with the
    group's k values side by side, K zero-padded to whole groups."""
    k = matrix.shape[1] if columns_of_a else matrix.shape[0]
    padded_k = -(-k // group) * group
    if columns_of_a:
        padded = np.zeros((matrix.shape[0], padded_k), matrix.dtype)
        padded[:, :k] = matrix
        return padded.reshape(matrix.shape[0], -1, group).transpose(1, 0, 2).tobytes()
    padded = np.zeros((padded_k, matrix.shape[1]), matrix.dtype)
    padded[:k] = matrix
    return padded.reshape(-1, group, matrix.shape[1]).transpose(0, 2, 1).tobytes()


def matmul(a: np.ndarray, b: np.ndarray, *, out: np.ndarray | None = None,
           accumulate: bool = False, bias=None, clamp=None, scale=None, zero_point: int = 0,
           backend: str = "model", svl: int = 512, stats: dict | None = None,
           progress: bool | None = None) -> np.ndarray:
    """``A @ B`` (or ``out += A @ B``), optionally ``+ bias`` and clamped, on the engine.

    The kernels are ``zatile_gemm[_acc]_<types>[_bias_clamp]``
    (:mod:`zatile.sw.kernels.gemm`): 2VL×2VL blocks over the four ZA tiles with predicated
    tails, vector-length agnostic. The operands are packed on the host (A transposed into k
    groups, so one column block of A is one contiguous vector load).

    * float32 → float32 and float64 → float64 (FMOPA): each element is the fused multiply-adds
      of its K products in order k = 0, 1, ..., each rounded to nearest even, starting from +0
      (or from ``out``).
    * float16 → float32 (widening FMOPA) and bfloat16 (``ml_dtypes.bfloat16``) → float32
      (BFMOPA): K is taken in pairs (an odd K gets a zero partner); per pair the two products
      are summed, then added to the element, with the roundings :func:`matmul_reference`
      states.
    * int8/uint8 × int8/uint8 → int32 and int16/uint16 × int16/uint16 → int64 (SMOPA, UMOPA,
      USMOPA, SUMOPA): exact, wrapping modulo 2^32 or 2^64 as the engine's accumulators do.

    Parameters
    ----------
    a, b : numpy.ndarray
        Matrices of shapes (M, K) and (K, N) of a supported dtype pair; any strides.
    out : numpy.ndarray, optional
        A C-contiguous (M, N) array of the result dtype.
    accumulate : bool
        Add the product to ``out`` (which must then be given).
    bias : array_like, optional
        N values (converted to the result dtype; integers for integer results) added to the
        columns of the result after the product in the kernel's epilogue: with one rounding
        to nearest even, or wrapping for integers.
    clamp : tuple of two numbers, optional
        ``(low, high)``: the epilogue then clamps every element to that range (FMAX/FMIN or
        SMAX/SMIN); ReLU is ``(0, inf)``. With a bias and no clamp the range is the dtype's.
    scale : float or array_like, optional
        One or N float32 scales: requantize int32 results (int8 operands) to int8 in the
        epilogue, ``clamp(round_half_even(float32(acc + bias) * scale[j]) + zero_point, low,
        high)`` with ``clamp`` in the int8 range (default (-128, 127)); the result is int8.
    zero_point : int
        Added after scaling when requantizing.
    backend : str
        ``model``, ``rtl`` or ``qemu``.
    svl : int
        The engine's streaming vector length in bits.
    stats : dict, optional
        The run's counters are added to it (so one dict sums several calls):
        ``engine_instructions``,
        ``engine_instructions_by_class`` and ``engine_streamed`` (those the host issued without
        waiting for their results: on the RTL, docs/architecture.md "The host runs ahead";
        0 on the model) (model and RTL), and on the RTL ``cycles``,
        ``busy_cycles``, ``outer_products``, ``memory_instructions`` (vector and slice loads
        and stores, ``svl / 8`` bytes each) and ``macs`` from the engine's performance counters.
    progress : bool, optional
        On the RTL, a progress bar (tqdm, on stderr) of the outer products done out of those
        the kernel issues, updated while the simulation runs: always (True), never (False), or
        when stderr is a terminal (None). Other operators show engine instructions instead.

    Returns
    -------
    numpy.ndarray
        ``out`` if given, else a new (M, N) array (int8 when requantizing).

    Raises
    ------
    TypeError, ValueError
        For operands of the wrong type, dtype or shape, naming the argument and the value.
    """
    a, b = _check_matrix("a", a), _check_matrix("b", b)
    types = _gemm_types(a, b)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a's columns ({a.shape[1]}) must equal b's rows ({b.shape[0]}): "
                         f"shapes {a.shape} and {b.shape}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    kind = GEMM_TYPES[types]
    if accumulate and out is None:
        raise ValueError("accumulate=True adds to out: give out")
    epilogue, extra, c_dtype = _epilogue(bias, clamp, scale, zero_point, n,
                                         numpy_dtype(kind.result), accumulate)
    if out is not None and (not isinstance(out, np.ndarray) or out.shape != (m, n)
                            or out.dtype != c_dtype or not out.flags.c_contiguous):
        raise ValueError(f"out must be a C-contiguous ({m}, {n}) {c_dtype} array, not "
                         f"{_describe(out)}")
    arguments = [_pack(a, kind.group, columns_of_a=True), _pack(b, kind.group, columns_of_a=False),
                 out.tobytes() if accumulate else bytes(m * n * c_dtype.itemsize),
                 m, n, -(-k // kind.group), *extra]
    vl = svl // (8 << kind.result_shift)
    result = _call(GemmKernel(types, accumulate, epilogue).name, arguments, 2, backend, svl,
                   stats, progress, outer_products(m, n, arguments[5], vl))
    product = np.frombuffer(result, c_dtype).reshape(m, n)
    if out is None:
        return product.copy()
    out[...] = product
    return out


def _activation_clamp(activation, dtype: np.dtype, zero_point: int, requantize: bool):
    """The clamp an activation stands for: None, ``"relu"`` or ``(low, high)``."""
    if activation is None or isinstance(activation, tuple):
        return activation
    if activation != "relu":
        raise ValueError(f"activation must be None, 'relu' or (low, high), not {activation!r}")
    if requantize:                        # ReLU in the quantized domain: q >= zero point
        return (min(max(zero_point, -128), 127), 127)
    return (0, np.iinfo(dtype).max) if dtype.kind != "f" else (0.0, np.inf)


def dense(x: np.ndarray, w: np.ndarray, bias=None, activation=None, *, scale=None,
          zero_point: int = 0, backend: str = "model", svl: int = 512,
          stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """A fully connected layer ``x · wᵀ + bias`` with an activation, fused on the engine.

    Parameters
    ----------
    x : numpy.ndarray
        (M, K) inputs, or (K,) for one input (M = 1: the kernels' GEMV blocking).
    w : numpy.ndarray
        (N, K) weights (the layout of TVM's and PyTorch's dense), any strides.
    bias : array_like, optional
        N values added in the kernel's epilogue (see :func:`matmul`).
    activation : None, "relu" or tuple
        ``"relu"``, or ``(low, high)`` to clamp to; with ``scale`` ReLU keeps values at or
        above the zero point.
    scale, zero_point
        Requantize int8 × int8 to int8 (see :func:`matmul`).
    backend, svl, stats, progress
        As for :func:`matmul`.

    Returns
    -------
    numpy.ndarray
        (M, N), or (N,) for a 1-D ``x``.

    Raises
    ------
    TypeError, ValueError
        For operands of the wrong type, dtype or shape, naming the argument and the value.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be a numpy array, not {type(x).__name__}")
    if x.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D or 2-D, not of shape {x.shape}")
    w = _check_matrix("w", w)
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"x's features ({x.shape[-1]}) must equal w's columns ({w.shape[1]}): "
                         f"shapes {x.shape} and {w.shape}")
    result_dtype = numpy_dtype(GEMM_TYPES[_gemm_types(x.reshape(-1, x.shape[-1]), w.T)].result)
    clamp = _activation_clamp(activation, result_dtype, zero_point, scale is not None)
    product = matmul(x.reshape(-1, x.shape[-1]), w.T, bias=bias, clamp=clamp, scale=scale,
                     zero_point=zero_point, backend=backend, svl=svl, stats=stats,
                     progress=progress)
    return product[0] if x.ndim == 1 else product


def _merge_stats(total: dict | None, part: dict) -> None:
    """Add one run's counters to ``total`` if given (sums, and sums per class)."""
    if total is None:
        return
    for key, value in part.items():
        if isinstance(value, dict):
            merged = total.setdefault(key, {})
            for name, count in value.items():
                merged[name] = merged.get(name, 0) + count
        else:
            total[key] = total.get(key, 0) + value


def batch_matmul(a: np.ndarray, b: np.ndarray, **keywords) -> np.ndarray:
    """``a[i] @ b[i]`` for every batch index i (``b`` may be one (K, N) matrix for all), one
    kernel call per batch element; the keywords are :func:`matmul`'s but ``out`` and
    ``accumulate`` (``stats`` sums over the batch).

    Raises
    ------
    TypeError, ValueError
        For operands of the wrong type or shape, naming the argument and the value.
    """
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{name} must be a numpy array, not {type(value).__name__}")
    if a.ndim != 3 or b.ndim not in (2, 3) or (b.ndim == 3 and b.shape[0] != a.shape[0]):
        raise ValueError(f"a must be (B, M, K) and b (B, K, N) or (K, N), not {a.shape} and "
                         f"{b.shape}")
    if {"out", "accumulate"} & set(keywords):
        raise TypeError("batch_matmul takes neither out nor accumulate")
    return np.stack([matmul(a[index], b[index] if b.ndim == 3 else b, **keywords)
                     for index in range(a.shape[0])])


def _pair(name: str, value) -> tuple[int, int]:
    """An int or a pair of ints, each at least 0 (padding) or 1 (stride, dilation)."""
    pair = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    least = 0 if name == "padding" else 1
    if len(pair) != 2 or not all(isinstance(item, (int, np.integer)) and item >= least
                                 for item in pair):
        raise ValueError(f"{name} must be an int or a pair of ints >= {least}, not {value!r}")
    return int(pair[0]), int(pair[1])


def im2col(x: np.ndarray, kernel: tuple[int, int], stride=1, padding=0, dilation=1,
           fill=0) -> np.ndarray:
    """The patches of an NHWC ``x``: (N, OH, OW, KH·KW·C), each patch ordered (kh, kw, c) like
    an OHWI weight's row, ``fill`` (zero) outside ``x``."""
    (sh, sw), (ph, pw), (dh, dw) = (_pair("stride", stride), _pair("padding", padding),
                                    _pair("dilation", dilation))
    batch, height, width, channels = x.shape
    kh, kw = kernel
    out_h = (height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if out_h < 1 or out_w < 1:
        raise ValueError(f"the kernel {kh}x{kw} (dilation {dh}x{dw}) does not fit the padded "
                         f"{height}x{width} input (padding {ph}x{pw})")
    padded = np.full((batch, height + 2 * ph, width + 2 * pw, channels), fill, x.dtype)
    padded[:, ph:ph + height, pw:pw + width] = x
    patches = np.empty((batch, out_h, out_w, kh, kw, channels), x.dtype)
    for row in range(kh):
        for column in range(kw):
            patches[:, :, :, row, column] = padded[
                :, row * dh:row * dh + sh * (out_h - 1) + 1:sh,
                column * dw:column * dw + sw * (out_w - 1) + 1:sw]
    return patches.reshape(batch, out_h, out_w, kh * kw * channels)


def conv2d(x: np.ndarray, w: np.ndarray, bias=None, stride=1, padding=0, dilation=1,
           groups: int = 1, *, activation=None, scale=None, zero_point: int = 0,
           backend: str = "model", svl: int = 512, stats: dict | None = None,
           progress: bool | None = None) -> np.ndarray:
    """A 2-D convolution of an NHWC ``x`` with OHWI weights ``w``, through :func:`im2col` and
    one GEMM per group (bias, activation and requantization fused in its epilogue).

    The k order of each output is (kh, kw, c), so floating-point results are
    :func:`matmul_reference` of the patches and the weights' rows. Padding is with zeros (for
    int8 with a symmetric input quantization, zero point 0).

    Parameters
    ----------
    x : numpy.ndarray
        (N, H, W, C) inputs.
    w : numpy.ndarray
        (O, KH, KW, C / groups) weights.
    bias : array_like, optional
        O values.
    stride, padding, dilation : int or (int, int)
        Per height and width.
    groups : int
        C and O are split into this many groups, each convolved with its own weights.
    activation, scale, zero_point, backend, svl, stats, progress
        As for :func:`dense`.

    Returns
    -------
    numpy.ndarray
        (N, OH, OW, O).

    Raises
    ------
    TypeError, ValueError
        For operands of the wrong type, dtype or shape, naming the argument and the value.
    """
    for name, value in (("x", x), ("w", w)):
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{name} must be a numpy array, not {type(value).__name__}")
        if value.ndim != 4:
            raise ValueError(f"{name} must be 4-D ({'NHWC' if name == 'x' else 'OHWI'}), not of "
                             f"shape {value.shape}")
    if not isinstance(groups, (int, np.integer)) or groups < 1 or x.shape[3] % groups \
            or w.shape[0] % groups:
        raise ValueError(f"groups must divide x's channels ({x.shape[3]}) and w's outputs "
                         f"({w.shape[0]}), not {groups!r}")
    if w.shape[3] * groups != x.shape[3]:
        raise ValueError(f"w's input channels ({w.shape[3]}) times groups ({groups}) must equal "
                         f"x's channels ({x.shape[3]})")
    outputs = w.shape[0] // groups
    biases = None if bias is None else np.asarray(bias)
    if biases is not None and biases.shape != (w.shape[0],):
        raise ValueError(f"bias must have shape ({w.shape[0]},), not {biases.shape}")
    scales = None if scale is None else np.broadcast_to(np.asarray(scale, np.float32),
                                                         (w.shape[0],))
    pieces = []
    for group in range(groups):
        channels = slice(group * w.shape[3], (group + 1) * w.shape[3])
        patches = im2col(x[..., channels], w.shape[1:3], stride, padding, dilation)
        out = slice(group * outputs, (group + 1) * outputs)
        pieces.append(dense(patches.reshape(-1, patches.shape[3]), w[out].reshape(outputs, -1),
                            None if biases is None else biases[out], activation,
                            scale=None if scales is None else scales[out],
                            zero_point=zero_point, backend=backend, svl=svl, stats=stats,
                            progress=progress))
    return np.concatenate(pieces, axis=1).reshape(*patches.shape[:3], w.shape[0])


def _element_type(name: str, value) -> str:
    """The elementwise kernels' name for an array's dtype (:data:`ELEMENT_TYPES`)."""
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, not {type(value).__name__}")
    for type_name, (dtype, _, _) in ELEMENT_TYPES.items():
        if value.dtype == numpy_dtype(dtype):
            return type_name
    raise TypeError(f"{name} has dtype {value.dtype}; the elementwise operators take "
                    f"{', '.join(dtype for dtype, _, _ in ELEMENT_TYPES.values())}")


def _binary(operation: str, x: np.ndarray, y: np.ndarray, backend: str, svl: int,
            stats: dict | None, progress: bool | None) -> np.ndarray:
    type_name = _element_type("x", x)
    if _element_type("y", y) != type_name or x.shape != y.shape:
        raise ValueError(f"x and y must have one shape and dtype, not {x.shape} {x.dtype} and "
                         f"{y.shape} {y.dtype}")
    data = _call(f"zatile_{operation}_{type_name}", [np.ascontiguousarray(x).tobytes(),
                 np.ascontiguousarray(y).tobytes(), bytes(x.nbytes), x.size], 2, backend, svl,
                 stats, progress)
    return np.frombuffer(data, x.dtype).reshape(x.shape).copy()


def add(x: np.ndarray, y: np.ndarray, *, backend: str = "model", svl: int = 512,
        stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """``x + y`` elementwise on the engine (FADD; ADD wrapping for integers): one VLA
    streaming-SVE loop (:mod:`zatile.sw.kernels.elementwise`). x and y share a shape and one
    dtype of float16, bfloat16 (``ml_dtypes.bfloat16``: computed in float32 and rounded once to
    bfloat16, as ml_dtypes computes it), float32, float64, int8, int16, int32, int64;
    ``backend``, ``svl``, ``stats``, ``progress`` as for :func:`matmul`."""
    return _binary("add", x, y, backend, svl, stats, progress)


def multiply(x: np.ndarray, y: np.ndarray, *, backend: str = "model", svl: int = 512,
             stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """``x * y`` elementwise on the engine (FMUL; MUL wrapping for integers); see :func:`add`."""
    return _binary("mul", x, y, backend, svl, stats, progress)


def maximum(x: np.ndarray, y: np.ndarray, *, backend: str = "model", svl: int = 512,
            stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """The elementwise maximum on the engine (FMAX: of two zeros +0 unless both are -0; SMAX);
    see :func:`add`."""
    return _binary("max", x, y, backend, svl, stats, progress)


def relu(x: np.ndarray, *, backend: str = "model", svl: int = 512,
         stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """``max(x, 0)`` elementwise on the engine (FMAX with #0.0, so -0 gives +0; SMAX with #0);
    see :func:`add`."""
    type_name = _element_type("x", x)
    data = _call(f"zatile_relu_{type_name}", [np.ascontiguousarray(x).tobytes(),
                 bytes(x.nbytes), x.size], 1, backend, svl, stats, progress)
    return np.frombuffer(data, x.dtype).reshape(x.shape).copy()


def requantize(x: np.ndarray, scale: float, zero_point: int = 0, clamp=(-128, 127), *,
               backend: str = "model", svl: int = 512, stats: dict | None = None,
               progress: bool | None = None) -> np.ndarray:
    """int32 ``x`` to int8 on the engine with one float32 ``scale``, exactly as
    :func:`requantize_reference` states (and as the GEMM epilogue does)."""
    if _element_type("x", x) != "s32":
        raise TypeError(f"requantize takes int32, not {x.dtype}")
    low, high = clamp
    if not -128 <= low <= high <= 127:
        raise ValueError(f"clamp must be (low, high) with -128 <= low <= high <= 127, not "
                         f"{clamp!r}")
    quantization = np.array([low, high, zero_point, 0], np.int32).tobytes() \
        + np.float32(scale).tobytes()
    data = _call("zatile_requantize_s32", [np.ascontiguousarray(x).tobytes(), bytes(x.size),
                 x.size, quantization], 1, backend, svl, stats, progress)
    return np.frombuffer(data, np.int8).reshape(x.shape).copy()


def softmax(x: np.ndarray, *, backend: str = "model", svl: int = 512,
            stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """The softmax of float32 ``x`` over its last axis on the engine, bit-identical to
    :func:`softmax_reference` at the same ``svl`` (and within a few units in the last place of
    the exact softmax)."""
    if _element_type("x", x) != "f32":
        raise TypeError(f"softmax takes float32, not {x.dtype}")
    if x.ndim == 0 or x.size == 0:
        raise ValueError(f"x must have at least one element on its last axis, not shape "
                         f"{x.shape}")
    rows, n = x.size // x.shape[-1], x.shape[-1]
    data = _call("zatile_softmax_f32", [np.ascontiguousarray(x).tobytes(), bytes(x.nbytes),
                 rows, n], 1, backend, svl, stats, progress)
    return np.frombuffer(data, np.float32).reshape(x.shape).copy()


def transpose(x: np.ndarray, *, backend: str = "model", svl: int = 512,
              stats: dict | None = None, progress: bool | None = None) -> np.ndarray:
    """The transpose of a 2-D array of 32-bit elements (float32, int32) on the engine, through
    ZA (:mod:`zatile.sw.kernels.pack`: horizontal slices in, vertical slices out)."""
    if not isinstance(x, np.ndarray) or x.ndim != 2 or x.dtype.itemsize != 4 or x.size == 0:
        raise ValueError(f"x must be a non-empty 2-D array of 32-bit elements, not "
                         f"{_describe(x)}")
    data = _call("zatile_transpose_32", [np.ascontiguousarray(x).tobytes(), bytes(x.nbytes),
                 x.shape[0], x.shape[1]], 1, backend, svl, stats, progress)
    return np.frombuffer(data, x.dtype).reshape(x.shape[::-1]).copy()


def _windows(x: np.ndarray, kernel, stride, padding):
    """The max-pool windows of an NHWC ``x`` as KH·KW arrays of (N, OH, OW, C), padded with
    the dtype's lowest value (-inf for floats)."""
    if not isinstance(x, np.ndarray) or x.ndim != 4:
        raise ValueError(f"x must be a 4-D (NHWC) numpy array, not {_describe(x)}")
    kh, kw = _pair("kernel", kernel)
    ph, pw = _pair("padding", padding)
    if ph >= kh or pw >= kw:
        raise ValueError(f"padding {ph}x{pw} must be smaller than the kernel {kh}x{kw}")
    lowest = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    patches = im2col(x, (kh, kw), (kh, kw) if stride is None else stride, padding, fill=lowest)
    windows = patches.reshape(*patches.shape[:3], kh * kw, x.shape[3])
    return np.ascontiguousarray(np.moveaxis(windows, 3, 0))


def max_pool2d(x: np.ndarray, kernel, stride=None, padding=0, *, backend: str = "model",
               svl: int = 512, stats: dict | None = None,
               progress: bool | None = None) -> np.ndarray:
    """2-D max pooling of an NHWC ``x`` (stride defaults to the kernel; padding never wins):
    the windows are laid out on the host as KH·KW arrays and reduced on the engine by one VLA
    loop (FMAX/SMAX)."""
    type_name = _element_type("x", x)
    windows = _windows(x, kernel, stride, padding)
    rows, size = windows.shape[0], windows[0].size
    data = _call(f"zatile_max_rows_{type_name}", [windows.tobytes(), bytes(windows[0].nbytes),
                 rows, size], 1, backend, svl, stats, progress)
    return np.frombuffer(data, x.dtype).reshape(windows.shape[1:]).copy()


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        order = "C-contiguous" if value.flags.c_contiguous else "non-contiguous"
        return f"a {order} {value.shape} {value.dtype} array"
    return repr(value)


def _epilogue(bias, clamp, scale, zero_point: int, n: int, dtype: np.dtype, accumulate: bool):
    """The epilogue the keywords ask for: its name (one of
    :data:`~zatile.sw.kernels.gemm.EPILOGUES`), its two operands, checked, and the dtype of C
    in memory. A float bias defaults to -0, which adds nothing, not even to -0."""
    if scale is None and bias is None and clamp is None:
        return "", [], dtype
    integer = dtype.kind != "f"
    if scale is None:
        c_dtype, bounds = dtype, ((np.iinfo(dtype).min, np.iinfo(dtype).max) if integer
                                  else (-np.inf, np.inf))
    elif dtype != np.int32:
        raise TypeError(f"scale requantizes int32 results to int8, not {dtype} results")
    elif accumulate:
        raise ValueError("scale requantizes to int8: it cannot accumulate into out")
    else:
        c_dtype, bounds = np.dtype(np.int8), (-128, 127)
    values = (np.zeros(n, np.int64) if integer else np.full(n, -0.0)) if bias is None \
        else np.asarray(bias)
    if values.shape != (n,):
        raise ValueError(f"bias must have shape ({n},), not {values.shape}")
    if integer and values.dtype.kind not in "iu":
        raise TypeError(f"bias of integer results must be integers, not {values.dtype}")
    try:
        low, high = bounds if clamp is None else (
            operator.index(value) if integer else float(value) for value in clamp)
    except (TypeError, ValueError):
        raise ValueError(f"clamp must be (low, high) of {'integers' if integer else 'floats'}, "
                         f"not {clamp!r}") from None
    if not bounds[0] <= low <= high <= bounds[1]:
        raise ValueError(f"clamp must be (low, high) with {bounds[0]} <= low <= high <= "
                         f"{bounds[1]}, not {clamp!r}")
    if scale is None:
        return "bias_clamp", [values.astype(dtype).tobytes(),
                              np.array([low, high], dtype).tobytes()], c_dtype
    scales = np.asarray(scale, np.float32)
    if scales.shape not in ((), (n,)):
        raise ValueError(f"scale must be one value or have shape ({n},), not {scales.shape}")
    quantization = np.array([low, high, zero_point, 0], np.int32).tobytes() \
        + np.broadcast_to(scales, (n,)).tobytes()
    return "requantize", [values.astype(np.int32).tobytes(), quantization], c_dtype


def _placement(arguments: list, output: int, base: int):
    """Where the buffers among a kernel's ``arguments`` (bytes; the others are integers) go,
    from ``base`` on, page-aligned with a guard page between: the kernel's arguments (each
    buffer replaced by its address), the ``inputs`` to write, and ``(address, length)`` of
    the buffer at index ``output``, which the kernel writes."""
    values, inputs, cursor = [], [], base
    for argument in arguments:
        if isinstance(argument, bytes):
            inputs.append((cursor, argument))
            values.append(cursor)
            cursor += (len(argument) + _PAGE - 1) // _PAGE * _PAGE + _PAGE
        else:
            values.append(int(argument))
    return values, inputs, (values[output], len(arguments[output]))


def _call(function: str, arguments: list, output: int, backend: str, svl: int,
          stats: dict | None, progress: bool | None = None,
          products: int | None = None) -> bytes:
    """Run one kernel of the library on ``backend`` and return the bytes of its output buffer
    (``arguments[output]``); its counters are added to ``stats``. On the RTL ``progress`` draws
    a bar (see :func:`matmul`) of ``products`` outer products, or of engine instructions."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "rtl":
        with _progress_bar(function, progress, products) as report:
            result, counters = _run_rtl(function, arguments, output, svl, report)
    else:
        result, counters = _RUNNERS[backend](function, arguments, output, svl)
    _merge_stats(stats, counters)
    return result


@contextmanager
def _progress_bar(function: str, progress: bool | None, products: int | None):
    """Yield the ``progress`` callback of :func:`~zatile.sw.abi.rtl_exec.call_rtl` that draws a
    tqdm bar of a kernel's outer products out of ``products`` (or of its engine instructions
    when that is None), or None for no bar."""
    if progress is False:
        yield None
        return
    counter, unit = ("retired_mopa", "MOPA") if products else ("retired", "instr")
    with tqdm(total=products or None, desc=function, unit=unit, leave=False,
              disable=None if progress is None else False) as bar:
        yield lambda perf: bar.update(perf[counter] - bar.n)
        bar.refresh()              # the final count is drawn, though it came within mininterval


def _run_model(function: str, arguments: list, output: int, svl: int):
    values, inputs, result = _placement(arguments, output, _BUFFERS)
    path = library()
    process = ElfProcess(load_elf_image(path), [str(path)], svl=svl, stdout=io.BytesIO(),
                         stderr=io.BytesIO())
    (data,), counts = process.call_with_memory(function, values, inputs, [result])
    return data, counts


def _run_rtl(function: str, arguments: list, output: int, svl: int, report=None):
    values, inputs, result = _placement(arguments, output, _BUFFERS)
    (data,), figures = call_rtl(library(), function, values, inputs=inputs, outputs=[result],
                                svl=svl, progress=report)
    perf = figures["engine_perf"]
    return data, {**figures["host"], "cycles": perf["cycles"],
                  "busy_cycles": perf["busy_cycles"], "outer_products": perf["retired_mopa"],
                  "memory_instructions": perf["retired_ldst"], "macs": perf["macs"]}


def _run_qemu(function: str, arguments: list, output: int, svl: int):
    """The harness (sw/kernels/harness.c) with the buffers laid out in one input file."""
    values, inputs, (offset, length) = _placement(arguments, output, 0)
    blob = bytearray(max((start + len(data) for start, data in inputs), default=0))
    for start, data in inputs:
        blob[start:start + len(data)] = data
    encoded = [f"@{value}" if isinstance(argument, bytes) else str(value)
               for argument, value in zip(arguments, values)]
    with tempfile.TemporaryDirectory() as scratch:
        input_file, output_file = Path(scratch) / "input", Path(scratch) / "output"
        input_file.write_bytes(bytes(blob))
        completed = subprocess.run(
            [find_tool("qemu"), "-cpu", qemu_sme_cpu_option(svl), str(library()), function,
             str(input_file), str(output_file), str(offset), str(length), *encoded],
            capture_output=True, timeout=600)
        if completed.returncode:
            raise RuntimeError(f"the kernel harness failed under QEMU (status "
                               f"{completed.returncode}): {completed.stderr.decode().strip()}")
        return output_file.read_bytes(), {}


_RUNNERS = {"model": _run_model, "qemu": _run_qemu}


def matmul_reference(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, bias=None,
                     clamp=None) -> np.ndarray:
    """The floating-point result the kernels give for ``a @ b`` (+ ``c``) (+ ``bias``, clamped),
    computed without them.

    ``a`` and ``b`` share a dtype; ``c`` (default +0) is converted to the result dtype. For
    finite values (NaN payloads and infinities are not modelled):

    * float32 and float64: ``c[i, j]`` updated by ``fma(a[i, p], b[p, j], c[i, j])`` for
      p = 0, 1, ..., K-1, each fused multiply-add rounded once to nearest even (Arm
      FPMulAdd; docs/isa.md on FMOPA).
    * float16 → float32: per pair p = 2q, 2q+1 (K padded with +0 to even), the dot
      ``a[i, p]·b[p, j] + a[i, p+1]·b[p+1, j]`` rounded once to float32, then added to the
      element with a second rounding (Arm FPDot then FPAdd; widening FMOPA).
    * bfloat16 → float32: per pair, each product, then their sum, then the sum added to the
      element, every step rounded to odd with denormal inputs and results flushed to zero and
      overflow giving infinity (Arm BFMulH, FPAdd_BF16; BFMOPA without FEAT_EBF16).
    * The epilogue: ``bias`` (converted to the result dtype) added with one rounding to nearest
      even, then Arm FMAX with ``clamp[0]`` and FMIN with ``clamp[1]`` (of two zeros, max is +0
      unless both are -0, min is -0 unless both are +0).

    float32 and float16 are vectorized in float64 without double rounding: products are exact
    there, and a sum is first rounded to odd (TwoSum's exact error moves an even result one
    unit towards it), which, having 29 more bits than float32, rounds to float32 as the exact
    sum would. float64 uses exact fractions, element by element.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype.name not in _REFERENCES:
        raise TypeError(f"matmul_reference takes a and b of one dtype among "
                        f"{', '.join(_REFERENCES)}, not {a.dtype} and {b.dtype}")
    result_dtype = np.float64 if a.dtype == np.float64 else np.float32
    total = np.zeros((a.shape[0], b.shape[1]), result_dtype) if c is None \
        else np.array(c, result_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        total = _REFERENCES[a.dtype.name](a, b, total)
        if bias is not None:
            total = total + np.asarray(bias).astype(result_dtype)
    if clamp is not None:
        low, high = (np.full_like(total, value) for value in clamp)
        total = np.where((total < low) | ((total == low) & np.signbit(total)), low, total)
        total = np.where((total > high) | ((total == high) & ~np.signbit(total)), high, total)
    return total


def _two_sum(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x + y`` as float64 ``(high, low)`` with ``high + low`` exactly the sum (Knuth)."""
    high = x + y
    virtual = high - x
    return high, (x - (high - virtual)) + (y - virtual)


def _nearest_f32(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The exact ``x + y`` of float64 values rounded once to float32, nearest even."""
    high, low = _two_sum(x, y)
    nudge = (low != 0) & ((high.view(np.uint64) & 1) == 0) & np.isfinite(high)
    high[nudge] = np.nextafter(high[nudge], np.where(low[nudge] > 0, np.inf, -np.inf))
    return high.astype(np.float32)


def _odd_f32(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The exact ``x + y`` of float64 values as BFRound gives it: float32 rounded to odd, a
    result below 2^-126 in magnitude flushed to a zero of its sign, 2^128 and above infinity."""
    high, low = _two_sum(x, y)
    magnitude = np.abs(high)
    below = (low != 0) & (np.signbit(low) != np.signbit(high))       # |exact| < magnitude
    flush = (magnitude < 2.0 ** -126) | ((magnitude == 2.0 ** -126) & below)
    overflow = (magnitude > 2.0 ** 128) | ((magnitude == 2.0 ** 128) & ~below)
    nearest = np.minimum(magnitude.astype(np.float32), np.finfo(np.float32).max)
    above = (nearest > magnitude) | ((nearest == magnitude) & below)
    truncated = np.where(above, np.nextafter(nearest, np.float32(0)), nearest)
    inexact = (truncated != magnitude) | (low != 0)
    odd = (truncated.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)
    result = np.where(overflow, np.float32(np.inf), np.where(flush, np.float32(0), odd))
    return np.where(np.signbit(high), -result, result)


def _flush_f32(values: np.ndarray) -> np.ndarray:
    """float64 copies of values, those below 2^-126 in magnitude turned into zeros of their sign."""
    values = values.astype(np.float64)
    return np.where(np.abs(values) < 2.0 ** -126, np.copysign(0.0, values), values)


def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a and b as float64 with K padded by +0 to whole pairs, as the kernels pack them."""
    k = a.shape[1] + a.shape[1] % 2
    padded_a, padded_b = np.zeros((a.shape[0], k)), np.zeros((k, b.shape[1]))
    padded_a[:, :a.shape[1]], padded_b[:b.shape[0]] = a, b
    return padded_a, padded_b


def _reference_f32(a: np.ndarray, b: np.ndarray, total: np.ndarray) -> np.ndarray:
    for p in range(a.shape[1]):
        product = np.multiply.outer(a[:, p].astype(np.float64), b[p].astype(np.float64))
        total = _nearest_f32(total.astype(np.float64), product)
    return total


def _reference_f16(a: np.ndarray, b: np.ndarray, total: np.ndarray) -> np.ndarray:
    a, b = _pairs(a, b)
    for p in range(0, a.shape[1], 2):
        dot = _nearest_f32(np.multiply.outer(a[:, p], b[p]),
                           np.multiply.outer(a[:, p + 1], b[p + 1]))
        total = _nearest_f32(total.astype(np.float64), dot.astype(np.float64))
    return total


def _reference_bf16(a: np.ndarray, b: np.ndarray, total: np.ndarray) -> np.ndarray:
    a, b = _pairs(_flush_f32(a), _flush_f32(b))
    zero = np.zeros(total.shape)
    for p in range(0, a.shape[1], 2):
        first = _odd_f32(np.multiply.outer(a[:, p], b[p]), zero)
        second = _odd_f32(np.multiply.outer(a[:, p + 1], b[p + 1]), zero)
        pair = _odd_f32(first.astype(np.float64), second.astype(np.float64))
        total = _odd_f32(_flush_f32(total), pair.astype(np.float64))
    return total


def _fma64(addend: float, multiplicand: float, multiplier: float) -> float:
    """addend + multiplicand·multiplier, exact and then rounded once to nearest even."""
    exact = Fraction(addend) + Fraction(multiplicand) * Fraction(multiplier)
    if exact == 0:           # -0 only when the product and the addend are both negative zeros
        negative = (np.signbit(multiplicand) != np.signbit(multiplier)) and np.signbit(addend) \
            and multiplicand * multiplier == 0 and addend == 0
        return -0.0 if negative else 0.0
    try:
        return float(exact)  # int / int in Python rounds correctly, subnormals included
    except OverflowError:
        return float(np.copysign(np.inf, float(exact.numerator)))


def _reference_f64(a: np.ndarray, b: np.ndarray, total: np.ndarray) -> np.ndarray:
    for i in range(total.shape[0]):
        for j in range(total.shape[1]):
            element = float(total[i, j])
            for p in range(a.shape[1]):
                element = _fma64(element, float(a[i, p]), float(b[p, j]))
            total[i, j] = element
    return total


_REFERENCES = {"float32": _reference_f32, "float64": _reference_f64, "float16": _reference_f16,
               "bfloat16": _reference_bf16}


def requantize_reference(accumulators: np.ndarray, bias, scale, zero_point: int = 0,
                         clamp=(-128, 127)) -> np.ndarray:
    """The int8 the requantizing kernels give for int32 ``accumulators`` (the exact product
    wrapped to int32), computed without them: ``acc + bias`` wrapping in int32; converted to
    float32 rounding to nearest even; times the column's float32 ``scale`` rounding to nearest
    even; rounded to an integer with ties to even; converted to int32 saturating; plus
    ``zero_point`` wrapping in int32; clamped to ``clamp``.
    """
    total = (np.asarray(accumulators, np.int64) + np.asarray(bias, np.int64)).astype(np.int32)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = total.astype(np.float32) * np.asarray(scale, np.float32)
    rounded = np.clip(np.rint(scaled).astype(np.float64), -2.0 ** 31, 2.0 ** 31 - 1)
    shifted = (rounded.astype(np.int64) + zero_point).astype(np.int32)
    return np.clip(shifted, *clamp).astype(np.int8)


def conv2d_reference(x: np.ndarray, w: np.ndarray, stride=1, padding=0, dilation=1,
                     groups: int = 1) -> np.ndarray:
    """:func:`conv2d` without bias or activation, computed directly (one product per kernel tap
    and group, no im2col): exact int64 for integers, float64 for floats."""
    (sh, sw), (ph, pw), (dh, dw) = (_pair("stride", stride), _pair("padding", padding),
                                    _pair("dilation", dilation))
    wide = np.int64 if x.dtype.kind in "iu" else np.float64
    _, height, width, _ = x.shape
    outputs, kh, kw, per_group = w.shape
    padded = np.pad(x.astype(wide), ((0, 0), (ph, ph), (pw, pw), (0, 0)))
    out_h = (height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    result = np.zeros((x.shape[0], out_h, out_w, outputs), wide)
    per_output = outputs // groups
    for group in range(groups):
        channels = slice(group * per_group, (group + 1) * per_group)
        out = slice(group * per_output, (group + 1) * per_output)
        for row in range(kh):
            for column in range(kw):
                patch = padded[:, row * dh:row * dh + sh * (out_h - 1) + 1:sh,
                               column * dw:column * dw + sw * (out_w - 1) + 1:sw, channels]
                result[..., out] += np.einsum("nhwc,oc->nhwo", patch,
                                              w[out, row, column].astype(wide))
    return result


def max_pool2d_reference(x: np.ndarray, kernel, stride=None, padding=0) -> np.ndarray:
    """:func:`max_pool2d` in numpy: the maximum over each window, with Arm FMAX's zero rule (+0
    beats -0) for floats."""
    windows = _windows(x, kernel, stride, padding)
    result = windows[0]
    for window in windows[1:]:
        result = np.where((window > result) | ((window == result) & ~np.signbit(window)),
                          window, result)
    return result


def _fused_f32(addend: np.ndarray, multiplicand: np.ndarray, multiplier) -> np.ndarray:
    """float32 ``addend + multiplicand·multiplier`` rounded once (the product is exact in
    float64)."""
    product = multiplicand.astype(np.float64) * np.float64(np.float32(multiplier)) \
        if np.ndim(multiplier) == 0 else multiplicand.astype(np.float64) * multiplier
    return _nearest_f32(addend.astype(np.float64), product)


def softmax_reference(x: np.ndarray, svl: int) -> np.ndarray:
    """The softmax the engine's kernel gives at ``svl``, step by step in float32
    (:mod:`zatile.sw.kernels.elementwise`): exact maximum; d = max(x - max, -87); n =
    round-half-even(d·log2 e); r = d - n·ln2_hi - n·ln2_lo, each step fused; Horner's fused
    steps over 1/k!; times 2^n; per-lane running sums over vectors of ``svl``/32 lanes, then
    FADDV's tree (the reduction of the lower half plus that of the upper half, recursively, so
    neighbouring lanes are added first); each e divided by the sum. For finite x."""
    low, log2e, ln2_hi, ln2_lo, *coefficients = (np.float32(value)
                                                 for value in SOFTMAX_CONSTANTS)
    x = np.asarray(x, np.float32)
    rows = x.reshape(-1, x.shape[-1])
    lanes = svl // 32
    result = np.empty_like(rows)
    for index, row in enumerate(rows):
        d = np.maximum(row - row.max(), low)
        n = np.rint(d * log2e)
        r = _fused_f32(_fused_f32(d, -n, ln2_hi), -n, ln2_lo)
        p = np.full_like(r, coefficients[-1])
        for coefficient in coefficients[-2::-1]:
            p = _fused_f32(np.full_like(r, coefficient), p, r)
        scale = ((n.astype(np.int32) + 127) << 23).view(np.float32)
        e = p * scale
        padded = np.zeros(-(-len(e) // lanes) * lanes, np.float32)
        padded[:len(e)] = e
        sums = np.zeros(lanes, np.float32)
        for chunk in padded.reshape(-1, lanes):
            sums = sums + chunk
        while len(sums) > 1:                      # Reduce: op(lower half, upper half)
            sums = sums[0::2] + sums[1::2]
        result[index] = e / sums[0]
    return result.reshape(x.shape)
