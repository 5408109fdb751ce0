"""Operators for numpy users, computed by the engine's kernels (:mod:`zatile.sw.kernels`).

Each operator takes and returns numpy arrays and runs the same kernel bytes on any backend:

* ``model``: the host CPU and the reference model, in this process;
* ``rtl``: the host CPU and the engine's Verilog under Verilator (one simulation per call);
* ``qemu``: ``qemu-aarch64 -cpu max,sme=on`` running the library's command-line harness.

Floating-point results are bit-identical to :func:`matmul_reference`, which states the
accumulation order the kernels use.
"""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from zatile.sim.qemu import qemu_sme_cpu_option
from zatile.sim.tools import find_tool
from zatile.sw.abi.elf_process import ElfProcess, load_elf_image
from zatile.sw.abi.rtl_exec import call_rtl
from zatile.sw.kernels import library
from zatile.sw.kernels.gemm import GEMM_TYPES

__all__ = ["BACKENDS", "matmul", "matmul_reference"]

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
        if (a.dtype, b.dtype) == (np.dtype(kind.a), np.dtype(kind.b)):
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
           accumulate: bool = False, backend: str = "model", svl: int = 512,
           stats: dict | None = None) -> np.ndarray:
    """``A @ B`` (or ``out += A @ B``) on the engine.

    The kernels are ``zatile_gemm[_acc]_<types>`` (:mod:`zatile.sw.kernels.gemm`): 2VL×2VL
    blocks over the four ZA tiles with predicated tails, vector-length agnostic. The operands
    are packed on the host (A transposed into k groups, so one column block of A is one
    contiguous vector load).

    * float32 × float32 → float32 (FMOPA): each element is the fused multiply-adds of its K
      products in order k = 0, 1, ..., each rounded to nearest even, starting from +0 (or from
      ``out``): exactly :func:`matmul_reference`.
    * int8/uint8 × int8/uint8 → int32 (SMOPA, UMOPA, USMOPA, SUMOPA): exact, wrapping modulo
      2^32 as the engine's 32-bit accumulators do.

    Parameters
    ----------
    a, b : numpy.ndarray
        Matrices of shapes (M, K) and (K, N) of a supported dtype pair; any strides.
    out : numpy.ndarray, optional
        A C-contiguous (M, N) array of the result dtype.
    accumulate : bool
        Add the product to ``out`` (which must then be given).
    backend : str
        ``model``, ``rtl`` or ``qemu``.
    svl : int
        The engine's streaming vector length in bits.
    stats : dict, optional
        Filled with the run's counters: ``engine_instructions`` and
        ``engine_instructions_by_class`` (model and RTL), and on the RTL ``cycles``,
        ``busy_cycles``, ``outer_products``, ``memory_instructions`` (vector and slice loads
        and stores, ``svl / 8`` bytes each) and ``macs`` from the engine's performance counters.

    Returns
    -------
    numpy.ndarray
        ``out`` if given, else a new (M, N) array.

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
    result_dtype = np.dtype(np.float32 if types == "f32" else np.int32)
    if out is not None:
        if not isinstance(out, np.ndarray) or out.shape != (m, n) \
                or out.dtype != result_dtype or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous ({m}, {n}) {result_dtype} array, not "
                             f"{_describe(out)}")
    elif accumulate:
        raise ValueError("accumulate=True adds to out: give out")
    function = f"zatile_gemm{'_acc' if accumulate else ''}_{types}"
    group = GEMM_TYPES[types].group
    operands = [_pack(a, group, columns_of_a=True), _pack(b, group, columns_of_a=False)]
    if accumulate:
        operands.append(out.tobytes())
    result, counters = _RUNNERS[backend](function, (m, n, -(-k // group)), operands, m * n * 4,
                                         svl)
    if stats is not None:
        stats.update(counters)
    product = np.frombuffer(result, result_dtype).reshape(m, n)
    if out is None:
        return product.copy()
    out[...] = product
    return out


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        order = "C-contiguous" if value.flags.c_contiguous else "non-contiguous"
        return f"a {order} {value.shape} {value.dtype} array"
    return repr(value)


def _placement(sizes, operands: list[bytes], result_bytes: int):
    """Where the operands and the result go in the library's address space (page-aligned, a
    guard page between): the kernel's arguments, the ``inputs`` to write and the result's
    ``(address, length)``. An accumulating kernel's third operand is C itself."""
    addresses, cursor = [], _BUFFERS
    for size in [*(len(data) for data in operands), result_bytes]:
        addresses.append(cursor)
        cursor += (size + _PAGE - 1) // _PAGE * _PAGE + _PAGE
    c_address = addresses[2] if len(operands) == 3 else addresses[-1]
    inputs = list(zip(addresses, [*operands, bytes(result_bytes)]))
    return [addresses[0], addresses[1], c_address, *sizes], inputs, (c_address, result_bytes)


def _run_model(function: str, sizes, operands: list[bytes], result_bytes: int, svl: int):
    arguments, inputs, result = _placement(sizes, operands, result_bytes)
    path = library()
    process = ElfProcess(load_elf_image(path), [str(path)], svl=svl, stdout=io.BytesIO(),
                         stderr=io.BytesIO())
    (product,), counts = process.call_with_memory(function, arguments, inputs, [result])
    return product, counts


def _run_rtl(function: str, sizes, operands: list[bytes], result_bytes: int, svl: int):
    arguments, inputs, result = _placement(sizes, operands, result_bytes)
    (product,), figures = call_rtl(library(), function, arguments, inputs=inputs,
                                   outputs=[result], svl=svl)
    perf = figures["engine_perf"]
    return product, {**figures["host"], "cycles": perf["cycles"],
                     "busy_cycles": perf["busy_cycles"], "outer_products": perf["retired_mopa"],
                     "memory_instructions": perf["retired_ldst"], "macs": perf["macs"]}


def _run_qemu(function: str, sizes, operands: list[bytes], result_bytes: int, svl: int):
    with tempfile.TemporaryDirectory() as scratch:
        inputs, output = Path(scratch) / "input", Path(scratch) / "output"
        inputs.write_bytes(b"".join(operands))
        completed = subprocess.run(
            [find_tool("qemu"), "-cpu", qemu_sme_cpu_option(svl), str(library()), function,
             *map(str, sizes), str(inputs), str(output)], capture_output=True, timeout=600)
        if completed.returncode:
            raise RuntimeError(f"the kernel harness failed under QEMU (status "
                               f"{completed.returncode}): {completed.stderr.decode().strip()}")
        return output.read_bytes(), {}


_RUNNERS = {"model": _run_model, "rtl": _run_rtl, "qemu": _run_qemu}


def matmul_reference(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
    """The fp32 result the kernels give: ``c[i, j]`` (or +0) updated by ``fma(a[i, p], b[p, j],
    c[i, j])`` for p = 0, 1, ..., K-1, each fused multiply-add rounded once to nearest even.

    Computed in float64 without double rounding: the product of two floats is exact in
    float64; the sum is rounded to odd (the exact error of the float64 addition, from TwoSum,
    moves an even result one unit towards it), and a round-to-odd value with 29 more bits
    than float32 rounds to float32 exactly as the exact sum would. For finite results; NaN
    payloads are not modelled.
    """
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    total = np.zeros((a.shape[0], b.shape[1]), np.float32) if c is None \
        else np.array(c, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for p in range(a.shape[1]):
            product = np.multiply.outer(a[:, p].astype(np.float64), b[p].astype(np.float64))
            addend = total.astype(np.float64)
            rounded = addend + product
            virtual = rounded - addend
            error = (addend - (rounded - virtual)) + (product - virtual)
            even = (rounded.view(np.uint64) & 1) == 0
            nudge = (error != 0) & even & np.isfinite(rounded)
            rounded[nudge] = np.nextafter(rounded[nudge], np.where(error[nudge] > 0, np.inf,
                                                                    -np.inf))
            total = rounded.astype(np.float32)
    return total
