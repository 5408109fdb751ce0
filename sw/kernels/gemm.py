"""A64 assembly for vector-length-agnostic SME GEMM kernels (the TVM / KleidiAI 2VL×2VL shape).

:func:`gemm_kernel` writes one kernel ``C = A·B`` (or ``C += A·B``) for a type pair of
:data:`GEMM_TYPES`: fp32 and fp64 with FMOPA; fp16 and bf16 → fp32 with the 2-way widening
FMOPA and BFMOPA; int8 → int32 and int16 → int64 with the 4-way SMOPA, UMOPA, USMOPA
(unsigned A, signed B) and SUMOPA. :data:`GEMM_KERNELS` names every kernel of the library.

* Operands are packed: a *k group* is the 1, 2 or 4 consecutive k values one outer product
  consumes per element (its result size over its operand size). ``a`` holds, for each k group,
  the M rows of A with their group's values side by side (so one column block of A is one
  contiguous vector load); ``b`` holds, for each k group, the N columns of B likewise; both are
  zero-padded to whole groups. A k group of one row is as wide as one result element (4 or 8
  bytes). ``c`` is M rows of N result elements.
* Blocking: 2VL×2VL blocks of C over the four tiles ZA0-ZA3 of the result's size (VL = result
  elements per vector): per k group four predicated vector loads (a_lo, a_hi, b_lo, b_hi) feed
  four outer products into ZA0-ZA3 (one load per outer product). Tails are WHILELT predicates
  on every edge, so any M, N, K ≥ 1 works; K = 0 stores zeros (or leaves C).
* Read-out: one predicated horizontal-slice store per row of each tile, only for rows below M.
* Interface (AAPCS64, docs/abi.md and the SME lazy-save scheme): a *non-streaming, private-ZA*
  function, locally streaming with new ZA — callable from any C code. Prologue: save D8-D15 (the
  callee-saved low halves of V8-V15, which SMSTART zeroes); commit a caller's lazy ZA save
  (``mrs tpidr2_el0; cbz; bl __arm_tpidr2_save; msr tpidr2_el0, xzr``); ``smstart`` (SM and
  ZA). Epilogue: ``smstop`` (ZA off, so the caller's ZA stays dormant or off as the scheme
  wants), restore D8-D15. The body uses only caller-saved registers (X6-X17, Z0-Z3, P0-P5);
  X0-X5 survive ``__arm_tpidr2_save`` by its contract.

* Epilogues (:data:`EPILOGUES`): each row of C, on its way from ZA to memory, is read into a
  vector (MOVA) and gets ``bias[j]`` added (one rounding, or wrapping for integers).
  ``*_bias_clamp`` then clamps it to ``[clamp[0], clamp[1]]`` (FMAX then FMIN, or SMAX then
  SMIN; ReLU is ``[0, inf]``). ``*_requantize`` (32-bit integer results, not accumulating)
  converts it to float32 (SCVTF, nearest even), multiplies by the column's ``scale[j]``
  (FMUL), rounds to an integer with ties to even (FRINTN), converts back (FCVTZS, saturating),
  adds the zero point, clamps to ``[low, high]`` and stores the low byte (ST1B): C is int8.
  The epilogues use X19/X20 (X21 to requantize; saved) for their two extra arguments and
  Z4-Z12, P6.

The C prototype of every kernel: ``void NAME(const void *a, const void *b, void *c, uint64_t m,
uint64_t n, uint64_t k_groups)``, and for the epilogue kernels two more arguments ``const void
*bias`` (N result elements) and ``const void *clamp`` (two result elements: low, high), or
for requantizing ``const void *quantization``: int32 low, high, zero point, 0, then N float32
scales.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["GemmType", "GEMM_TYPES", "EPILOGUES", "GemmKernel", "GEMM_KERNELS", "gemm_kernel",
           "numpy_dtype"]


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype a :class:`GemmType` names (``bfloat16`` is ml_dtypes')."""
    return np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)


@dataclass(frozen=True)
class GemmType:
    """How one operand type pair becomes instructions.

    Attributes
    ----------
    a, b, result : str
        The numpy dtypes of A, B and C (``bfloat16`` is ml_dtypes').
    group : int
        k values per outer product (the packing's k group).
    load : str
        The contiguous load (``ld1w``, ``ld1b``) and ``suffix`` its element suffix.
    shift : int
        log2 of the load's element size (its scalar-index shift).
    mopa : str
        The outer product.
    """

    a: str
    b: str
    result: str
    group: int
    load: str
    suffix: str
    shift: int
    mopa: str

    @property
    def result_shift(self) -> int:
        """log2 of the result element size: a k group of one row is ``group`` operands."""
        return self.shift + self.group.bit_length() - 1

    @property
    def tile(self) -> str:
        """The element suffix of the result tiles: ``s`` or ``d``."""
        return "s" if self.result_shift == 2 else "d"


#: The type pairs, by the name the kernels carry.
GEMM_TYPES = {
    "f32": GemmType("float32", "float32", "float32", 1, "ld1w", "s", 2, "fmopa"),
    "f64": GemmType("float64", "float64", "float64", 1, "ld1d", "d", 3, "fmopa"),
    "f16": GemmType("float16", "float16", "float32", 2, "ld1h", "h", 1, "fmopa"),
    "bf16": GemmType("bfloat16", "bfloat16", "float32", 2, "ld1h", "h", 1, "bfmopa"),
    "s8": GemmType("int8", "int8", "int32", 4, "ld1b", "b", 0, "smopa"),
    "u8": GemmType("uint8", "uint8", "int32", 4, "ld1b", "b", 0, "umopa"),
    "u8s8": GemmType("uint8", "int8", "int32", 4, "ld1b", "b", 0, "usmopa"),
    "s8u8": GemmType("int8", "uint8", "int32", 4, "ld1b", "b", 0, "sumopa"),
    "s16": GemmType("int16", "int16", "int64", 4, "ld1h", "h", 1, "smopa"),
    "u16": GemmType("uint16", "uint16", "int64", 4, "ld1h", "h", 1, "umopa"),
    "u16s16": GemmType("uint16", "int16", "int64", 4, "ld1h", "h", 1, "usmopa"),
    "s16u16": GemmType("int16", "uint16", "int64", 4, "ld1h", "h", 1, "sumopa"),
}


#: The epilogues a kernel can have, by the suffix of its name (see the module docstring).
EPILOGUES = ("", "bias_clamp", "requantize")


@dataclass(frozen=True)
class GemmKernel:
    """One kernel of the library: its type pair, whether it adds to C, and its epilogue (one
    of :data:`EPILOGUES`: none, bias and clamp, or bias, scale and requantize to int8)."""

    types: str
    accumulate: bool
    epilogue: str = ""

    @property
    def name(self) -> str:
        """The function's name: ``zatile_gemm[_acc]_<types>[_bias_clamp|_requantize]``."""
        return (f"zatile_gemm{'_acc' if self.accumulate else ''}_{self.types}"
                f"{'_' if self.epilogue else ''}{self.epilogue}")

    @property
    def c_shift(self) -> int:
        """log2 of the size of one element of C in memory (int8 after requantizing)."""
        return 0 if self.epilogue == "requantize" else GEMM_TYPES[self.types].result_shift


def _epilogues(types: str) -> tuple[tuple[bool, str], ...]:
    """The (accumulate, epilogue) pairs of a type pair's kernels: requantizing (to int8) only
    for 32-bit integer results, and not accumulating (C is int8 there)."""
    plain = tuple((accumulate, epilogue) for accumulate in (False, True)
                  for epilogue in ("", "bias_clamp"))
    return plain + (((False, "requantize"),) if GEMM_TYPES[types].result == "int32" else ())


#: Every GEMM kernel of the library, by function name.
GEMM_KERNELS = {kernel.name: kernel for kernel in (
    GemmKernel(types, accumulate, epilogue) for types in GEMM_TYPES
    for accumulate, epilogue in _epilogues(types))}


def _row_epilogue(kind: GemmType, epilogue: str, vector: int) -> list[str]:
    """The epilogue of one row half in Z``vector`` (4 left, 5 right): its bias is
    Z``vector + 2``, its scale Z``vector + 6``; Z8/Z9 hold the clamp bounds, Z12 the zero point."""
    t, z = kind.tile, f"z{vector}.{kind.tile}"
    floating = kind.result.startswith("float")
    add, maximum, minimum = ("fadd", "fmax", "fmin") if floating else ("add", "smax", "smin")
    lines = [f"        {add:<7} {z}, {z}, z{vector + 2}.{t}          // + bias"]
    if epilogue == "requantize":
        lines += [
            f"        scvtf   {z}, p6/m, {z}         // to float32 (nearest even)",
            f"        fmul    {z}, {z}, z{vector + 6}.{t}         // x scale",
            f"        frintn  {z}, p6/m, {z}         // to an integer, ties to even",
            f"        fcvtzs  {z}, p6/m, {z}         // to int32, saturating",
            f"        add     {z}, {z}, z12.{t}         // + zero point"]
    return lines + [
        f"        {maximum:<7} {z}, p6/m, {z}, z8.{t}    // clamp to [low, high]",
        f"        {minimum:<7} {z}, p6/m, {z}, z9.{t}"]


def _block_rows(name: str, label: str, kernel: GemmKernel, top: bool, load: bool) -> list[str]:
    """Move the rows of one half of a 2VL×2VL block between C and ZA.

    ``x15`` points at the half's first row in C; ``x16`` is how many of its rows lie below M.
    The top half is ZA0 (left) and ZA1 (right), the bottom half ZA2 and ZA3. With an epilogue
    a stored row goes through Z4 (left) and Z5 (right) (:func:`_row_epilogue`).
    """
    kind = GEMM_TYPES[kernel.types]
    left, right = ("za0h", "za1h") if top else ("za2h", "za3h")
    t, shift = kind.tile, kernel.c_shift
    op = f"{'ld1' if load else 'st1'}{'bhwd'[shift]}"
    offset = f"x6, lsl #{shift}" if shift else "x6"
    governing = ("p4/z", "p5/z") if load else ("p4", "p5")
    if kernel.epilogue and not load:
        moves = [
            f"        mov     z4.{t}, p4/m, {left}.{t}[w12, 0]",
            f"        mov     z5.{t}, p5/m, {right}.{t}[w12, 0]",
            *_row_epilogue(kind, kernel.epilogue, 4),
            *_row_epilogue(kind, kernel.epilogue, 5),
            f"        {op}    {{z4.{t}}}, p4, [x15]",
            f"        {op}    {{z5.{t}}}, p5, [x15, {offset}]"]
    else:
        moves = [
            f"        {op}    {{{left}.{t}[w12, 0]}}, {governing[0]}, [x15]",
            f"        {op}    {{{right}.{t}[w12, 0]}}, {governing[1]}, [x15, {offset}]"]
    step = f"x4, lsl #{shift}" if shift else "x4"
    return [
        "        mov     w12, #0",
        f".L{name}_{label}:",
        *moves,
        f"        add     x15, x15, {step}      // next row of C",
        "        add     w12, w12, #1",
        "        cmp     x12, x16",
        f"        b.lo    .L{name}_{label}",
    ]


def _c_rows(name: str, label: str, kernel: GemmKernel, load: bool) -> list[str]:
    """Both halves of the current block: the top half's rows, then the bottom half's, if any."""
    return [
        "        madd    x15, x8, x4, x10          // &C[i0][j0]",
        f"        add     x15, x2, x15, lsl #{kernel.c_shift}",
        "        sub     x16, x3, x8               // top half: min(M - i0, VL) rows",
        "        cmp     x16, x6",
        "        csel    x16, x16, x6, lo",
        *_block_rows(name, f"{label}_top", kernel, True, load),
        "        subs    x16, x3, x9               // bottom half: min(M - i0 - VL, VL) rows",
        f"        b.ls    .L{name}_{label}_done",
        "        cmp     x16, x6",
        "        csel    x16, x16, x6, lo",
        *_block_rows(name, f"{label}_bottom", kernel, False, load),
        f".L{name}_{label}_done:",
    ]


def gemm_kernel(name: str, kernel: GemmKernel) -> str:
    """The assembly source of one GEMM function (see the module docstring).

    Raises
    ------
    ValueError
        If ``name`` is not a plain C identifier or the type pair is unknown.
    """
    if not name.isidentifier() or not name.isascii():
        raise ValueError(f"a kernel name must be a C identifier, not {name!r}")
    if kernel.types not in GEMM_TYPES:
        raise ValueError(f"unknown GEMM types {kernel.types!r}; known: {', '.join(GEMM_TYPES)}")
    kind, accumulate = GEMM_TYPES[kernel.types], kernel.accumulate
    load, t, group = kind.load, kind.suffix, kind.group
    index = f"x17, lsl #{kind.shift}" if kind.shift else "x17"
    counts = ("cntb", "cnth", "cntw", "cntd")
    count, tile, shift = counts[kind.shift], kind.tile, kind.result_shift
    bits = 8 << shift
    header = [f"        .arch_extension {extension}" for extension, needed in (
        ("sme-f64f64", kind.mopa == "fmopa" and tile == "d"),
        ("sme-i16i64", kind.mopa != "fmopa" and tile == "d")) if needed]
    start_block = (_c_rows(name, "load", kernel, load=True) if accumulate
                   else ["        // C is not read: the block starts from zero"])
    if group == 1:
        predicates = [
            f"        whilelt p0.{t}, x8, x3              // rows of the top half",
            f"        whilelt p1.{t}, x9, x3              // rows of the bottom half"]
        column_predicates = [
            f"        whilelt p2.{t}, x10, x4             // columns of the left half",
            f"        whilelt p3.{t}, x11, x4             // columns of the right half"]
    else:
        group_shift = group.bit_length() - 1
        predicates = [
            f"        lsl     x15, x8, #{group_shift}                // in {t} elements: "
            f"{group} per row",
            f"        lsl     x16, x3, #{group_shift}",
            f"        whilelt p0.{t}, x15, x16            // rows of the top half",
            "        add     x15, x15, x17",
            f"        whilelt p1.{t}, x15, x16            // rows of the bottom half"]
        column_predicates = [
            f"        lsl     x15, x10, #{group_shift}",
            f"        lsl     x16, x4, #{group_shift}",
            f"        whilelt p2.{t}, x15, x16            // columns of the left half",
            "        add     x15, x15, x17",
            f"        whilelt p3.{t}, x15, x16            // columns of the right half"]
    operation = "+=" if accumulate else "="
    requantize = kernel.epilogue == "requantize"
    frame = 80 + 16 * bool(kernel.epilogue) + 16 * requantize
    keep_arguments, setup, bias, restore = [], [], [], []
    if kernel.epilogue:
        size, letter = 1 << shift, "w" if tile == "s" else "d"
        keep_arguments = [
            "        stp     x19, x20, [sp, #80]",
            "        mov     x19, x6                   // bias: N elements",
            "        mov     x20, x7                   // clamp (or quantization): low, high"]
        setup = [
            f"        ptrue   p6.{tile}",
            f"        ld1r{letter}   {{z8.{tile}}}, p6/z, [x20]         // low",
            f"        ld1r{letter}   {{z9.{tile}}}, p6/z, [x20, #{size}]    // high"]
        bias = [
            f"        ld1{letter}    {{z6.{tile}}}, p4/z, [x19, x10, lsl #{shift}]    "
            "// bias, left half",
            f"        ld1{letter}    {{z7.{tile}}}, p5/z, [x19, x11, lsl #{shift}]    "
            "// right half"]
        restore = ["        ldp     x19, x20, [sp, #80]"]
    if requantize:
        keep_arguments.insert(0, "        str     x21, [sp, #96]")
        setup += [
            "        ld1rw   {z12.s}, p6/z, [x20, #8]    // zero point",
            "        add     x21, x20, #16             // scale: N float32"]
        bias += [
            "        ld1w    {z10.s}, p4/z, [x21, x10, lsl #2]    // scale, left half",
            "        ld1w    {z11.s}, p5/z, [x21, x11, lsl #2]    // right half"]
        restore.append("        ldr     x21, [sp, #96]")
    arguments = {"": "", "bias_clamp": ", bias, clamp", "requantize": ", bias, quantization"}
    result = {"": kind.result, "bias_clamp": f"{kind.result} + bias, clamped",
              "requantize": f"{kind.result} + bias, requantized to int8"}
    lines = [
        f"// {name}(a, b, c, m, n, k_groups{arguments[kernel.epilogue]}): C {operation} A * B, "
        f"{kind.a} x {kind.b} -> {result[kernel.epilogue]}, {kind.mopa} on 2VL x 2VL blocks "
        "of ZA0-ZA3.",
        "// Generated by zatile.sw.kernels.gemm; see its docstring for the interface.",
        *header,
        "        .text",
        f"        .globl  {name}",
        f"        .type   {name}, %function",
        "        .p2align 2",
        f"{name}:",
        "        // Non-streaming, private ZA: locally streaming with new ZA.",
        f"        stp     x29, x30, [sp, #-{frame}]!",
        "        mov     x29, sp",
        "        stp     d8, d9, [sp, #16]         // SMSTART zeroes V8-V15",
        "        stp     d10, d11, [sp, #32]",
        "        stp     d12, d13, [sp, #48]",
        "        stp     d14, d15, [sp, #64]",
        *keep_arguments,
        "        mrs     x16, tpidr2_el0           // commit a caller's lazy ZA save",
        f"        cbz     x16, .L{name}_committed",
        "        bl      __arm_tpidr2_save",
        "        msr     tpidr2_el0, xzr",
        f".L{name}_committed:",
        "        smstart                           // PSTATE.SM = PSTATE.ZA = 1",
        f"        {counts[shift]}    x6                        // VL: {bits}-bit elements "
        "per vector",
        "        lsl     x7, x6, #1                // 2VL: the block edge",
        f"        {count}    x17                       // {load} elements per vector",
        *setup,
        "        mov     x8, #0                    // i0: first row of the block",
        f".L{name}_rows:",
        "        cmp     x8, x3",
        f"        b.hs    .L{name}_done",
        "        add     x9, x8, x6                // i0 + VL",
        *predicates,
        "        mov     x10, #0                   // j0: first column of the block",
        f".L{name}_columns:",
        "        cmp     x10, x4",
        f"        b.hs    .L{name}_next_rows",
        "        add     x11, x10, x6              // j0 + VL",
        *column_predicates,
        f"        whilelt p4.{tile}, x10, x4             // C columns of the left half",
        f"        whilelt p5.{tile}, x11, x4             // C columns of the right half",
        *bias,
        "        zero    {za}",
        *start_block,
        f"        add     x13, x0, x8, lsl #{shift}       // the block's first k group of A",
        f"        add     x14, x1, x10, lsl #{shift}      // the block's first k group of B",
        "        mov     x12, x5                   // k groups left",
        f"        cbz     x12, .L{name}_store",
        f".L{name}_k:",
        f"        {load}    {{z0.{t}}}, p0/z, [x13]                // a_lo",
        f"        {load}    {{z1.{t}}}, p1/z, [x13, {index}]    // a_hi",
        f"        {load}    {{z2.{t}}}, p2/z, [x14]                // b_lo",
        f"        {load}    {{z3.{t}}}, p3/z, [x14, {index}]    // b_hi",
        f"        {kind.mopa:<7} za0.{tile}, p0/m, p2/m, z0.{t}, z2.{t}",
        f"        {kind.mopa:<7} za1.{tile}, p0/m, p3/m, z0.{t}, z3.{t}",
        f"        {kind.mopa:<7} za2.{tile}, p1/m, p2/m, z1.{t}, z2.{t}",
        f"        {kind.mopa:<7} za3.{tile}, p1/m, p3/m, z1.{t}, z3.{t}",
        f"        add     x13, x13, x3, lsl #{shift}      // next k group of A "
        f"({1 << shift} bytes per row)",
        f"        add     x14, x14, x4, lsl #{shift}      // next k group of B",
        "        subs    x12, x12, #1",
        f"        b.ne    .L{name}_k",
        f".L{name}_store:",
        *_c_rows(name, "store", kernel, load=False),
        "        add     x10, x10, x7",
        f"        b       .L{name}_columns",
        f".L{name}_next_rows:",
        "        add     x8, x8, x7",
        f"        b       .L{name}_rows",
        f".L{name}_done:",
        "        smstop                            // PSTATE.SM = PSTATE.ZA = 0",
        "        ldp     d8, d9, [sp, #16]",
        "        ldp     d10, d11, [sp, #32]",
        "        ldp     d12, d13, [sp, #48]",
        "        ldp     d14, d15, [sp, #64]",
        *restore,
        f"        ldp     x29, x30, [sp], #{frame}",
        "        ret",
        f"        .size   {name}, . - {name}",
        "",
    ]
    return "\n".join(lines)
