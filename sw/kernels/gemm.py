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
* Blocking (:data:`BLOCKINGS`, chosen at run time from M, N and VL = result elements per
  vector): blocks of C over the four tiles ZA0-ZA3 of the result's size, 2VL×2VL by default,
  1VL×4VL when M ≤ VL (the GEMV path for M = 1) and 4VL×1VL when N ≤ VL. Per k group one
  predicated vector load per row tile of A and per column tile of B (4 or 5) feed four outer
  products. Tails are WHILELT predicates on every edge, so any M, N, K ≥ 1 works; K = 0
  stores zeros (or leaves C).
* Read-out: one predicated horizontal-slice store per row of each tile, only for rows below M.
* Interface (AAPCS64, docs/abi.md and the SME lazy-save scheme): a *non-streaming, private-ZA*
  function, locally streaming with new ZA — callable from any C code. Prologue: save D8-D15 (the
  callee-saved low halves of V8-V15, which SMSTART zeroes); commit a caller's lazy ZA save
  (``mrs tpidr2_el0; cbz; bl __arm_tpidr2_save; msr tpidr2_el0, xzr``); ``smstart`` (SM and
  ZA). Epilogue: ``smstop`` (ZA off, so the caller's ZA stays dormant or off as the scheme
  wants), restore D8-D15. The body uses only caller-saved registers (X6-X17, Z0-Z9, P0-P4);
  X0-X5 survive ``__arm_tpidr2_save`` by its contract.

* Epilogues (:data:`EPILOGUES`): each row of C, on its way from ZA to memory, is read into a
  vector (MOVA) and gets ``bias[j]`` added (one rounding, or wrapping for integers).
  ``*_bias_clamp`` then clamps it to ``[clamp[0], clamp[1]]`` (FMAX then FMIN, or SMAX then
  SMIN; ReLU is ``[0, inf]``). ``*_requantize`` (32-bit integer results, not accumulating)
  converts it to float32 (SCVTF, nearest even), multiplies by the column's ``scale[j]``
  (FMUL), rounds to an integer with ties to even (FRINTN), converts back (FCVTZS, saturating),
  adds the zero point, clamps to ``[low, high]`` and stores the low byte (ST1B): C is int8.
  The epilogues use X19/X20 (X21 to requantize; saved) for their two extra arguments and
  Z16-Z30, P6.

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

__all__ = ["GemmType", "GEMM_TYPES", "EPILOGUES", "BLOCKINGS", "GemmKernel", "GEMM_KERNELS",
           "gemm_kernel", "gemm_prototype", "numpy_dtype", "outer_products",
           "private_za_function"]


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


#: The blockings: (row tiles, column tiles) of VL×VL each over ZA0-ZA3, and when each is used.
BLOCKINGS = ((1, 4, "M <= VL: one row of tiles, 4VL columns (the GEMV path for M = 1)"),
             (4, 1, "N <= VL: one column of tiles, 4VL rows"),
             (2, 2, "otherwise: 2VL x 2VL"))


def outer_products(m: int, n: int, k_groups: int, vl: int) -> int:
    """The outer products a GEMM kernel issues for an M×N result of ``k_groups`` k groups at
    ``vl`` result elements per vector: four per block and k group, over the blocks of the
    blocking the kernel chooses (the first of :data:`BLOCKINGS` whose test holds, as in its
    assembly: one row of tiles tests M, one column of tiles tests N)."""
    for rows, columns, _ in BLOCKINGS:
        if (rows, columns) == BLOCKINGS[-1][:2] or (m if rows == 1 else n) <= vl:
            break
    return -(-m // (rows * vl)) * -(-n // (columns * vl)) * rows * columns * k_groups


def _row_epilogue(kind: GemmType, epilogue: str, column: int) -> list[str]:
    """The epilogue of one row of column tile ``column`` in Z(16 + column): its bias is in
    Z(20 + column), its scale in Z(24 + column); Z28/Z29 hold the clamp bounds, Z30 the zero
    point."""
    t, z = kind.tile, f"z{16 + column}.{kind.tile}"
    floating = kind.result.startswith("float")
    add, maximum, minimum = ("fadd", "fmax", "fmin") if floating else ("add", "smax", "smin")
    lines = [f"        {add:<7} {z}, {z}, z{20 + column}.{t}        // + bias"]
    if epilogue == "requantize":
        lines += [
            f"        scvtf   {z}, p6/m, {z}        // to float32 (nearest even)",
            f"        fmul    {z}, {z}, z{24 + column}.{t}        // x scale",
            f"        frintn  {z}, p6/m, {z}        // to an integer, ties to even",
            f"        fcvtzs  {z}, p6/m, {z}        // to int32, saturating",
            f"        add     {z}, {z}, z30.{t}        // + zero point"]
    return lines + [
        f"        {maximum:<7} {z}, p6/m, {z}, z28.{t}   // clamp to [low, high]",
        f"        {minimum:<7} {z}, p6/m, {z}, z29.{t}"]


def _times(count: int, register: str, comment: str) -> str:
    """``register`` = count·VL (X6), count a power of two."""
    operation = f"lsl     {register}, x6, #{count.bit_length() - 1}" if count > 1 \
        else f"mov     {register}, x6"
    return f"        {operation:<34}// {comment}"


class _Body:
    """The code of one blocking of one kernel (see :data:`BLOCKINGS`).

    Registers: X8 = i0 and X10 = j0 (the block's first row and column), X7 and X11 the column
    and row steps, X9 a row tile's first row, X12 the slice index, X13/X14 the k group of A
    and B (and 2VL/3VL column offsets while C moves), X16 the k pairs left, X15/X16 scratch. The
    operand predicates are P0.. (rows of A) and P(R).. (columns of B, and of C: a predicate
    governs an element by the lowest bit of its part of the predicate, so the k-group predicate
    of B's column j — bytes (or halfwords) below ``group·N`` — governs C's column j too). No
    WHILELT runs after the block's k loop: each sets NZCV, which the CPU waits for
    (docs/architecture.md, "The host runs ahead"), so the k loop and the store of C run ahead
    of the CPU.
    """

    def __init__(self, name: str, kernel: GemmKernel, rows: int, columns: int):
        self.kernel, self.kind = kernel, GEMM_TYPES[kernel.types]
        self.rows, self.columns = rows, columns
        self.label = f".L{name}_{rows}x{columns}"

    def _operand_predicates(self, first: int, count: int, start: str, limit: str,
                            what: str) -> list[str]:
        """``count`` WHILELT predicates from P``first`` over vectors of operand elements, the
        first starting at element ``start`` (a row or column index) of ``limit``."""
        shift = self.kind.group.bit_length() - 1
        if shift:
            lines = [f"        lsl     x15, {start}, #{shift}            // {what}: "
                     f"{self.kind.group} {self.kind.suffix} elements each",
                     f"        lsl     x16, {limit}, #{shift}"]
        else:
            lines = [f"        mov     x15, {start}                  // {what}"]
        for index in range(count):
            lines.append(f"        whilelt p{first + index}.{self.kind.suffix}, x15, "
                         f"{'x16' if shift else limit}")
            if index + 1 < count:
                lines.append("        add     x15, x15, x17")
        return lines

    @staticmethod
    def _column_offsets() -> list[str]:
        """X13 = 2VL, X14 = 3VL: where column tiles 2 and 3 start in a row of C."""
        return ["        lsl     x13, x6, #1", "        add     x14, x13, x6"]

    def _epilogue_operands(self) -> list[str]:
        """Bias (and scales) of each column tile of the block, in Z20.. (and Z24..)."""
        shift, letter, t = self.kind.result_shift, "wd"[self.kind.result_shift - 2], self.kind.tile
        lines = ["        mov     x15, x10"]
        for index in range(self.columns):
            predicate = f"p{self.rows + index}/z"
            lines.append(f"        ld1{letter}    {{z{20 + index}.{t}}}, {predicate}, "
                         f"[x19, x15, lsl #{shift}]   // bias")
            if self.kernel.epilogue == "requantize":
                lines.append(f"        ld1w    {{z{24 + index}.s}}, {predicate}, "
                             "[x21, x15, lsl #2]   // scale")
            if index + 1 < self.columns:
                lines.append("        add     x15, x15, x6")
        return lines

    def _c_rows(self, load: bool) -> list[str]:
        """Move the block's rows between C and ZA, row tile by row tile, only rows below M."""
        shift, t = self.kernel.c_shift, self.kind.tile
        op = f"{'ld1' if load else 'st1'}{'bhwd'[shift]}"
        offsets = ["", ", x6", ", x13", ", x14"]
        if shift:
            offsets = [offset + (f", lsl #{shift}" if offset else "") for offset in offsets]
        phase = f"{self.label}_{'load' if load else 'store'}"
        lines = ["        mov     x9, x8                    // the row tile's first row"]
        for tile_row in range(self.rows):
            moves = []
            for column in range(self.columns):
                tile = f"za{tile_row * self.columns + column}h.{t}[w12, 0]"
                predicate = f"p{self.rows + column}"
                address = f"[x15{offsets[column]}]"
                if load:
                    moves.append(f"        {op}    {{{tile}}}, {predicate}/z, {address}")
                elif not self.kernel.epilogue:
                    moves.append(f"        {op}    {{{tile}}}, {predicate}, {address}")
                else:
                    z = f"z{16 + column}.{t}"
                    moves += [f"        mov     {z}, {predicate}/m, {tile}",
                              *_row_epilogue(self.kind, self.kernel.epilogue, column),
                              f"        {op}    {{{z}}}, {predicate}, {address}"]
            loop = f"{phase}_{tile_row}"
            step = f"x4, lsl #{shift}" if shift else "x4"
            lines += [
                f"        subs    x16, x3, x9               // row tile {tile_row}: "
                "min(M - its first row, VL) rows",
                f"        b.ls    {phase}_done",
                "        cmp     x16, x6",
                "        csel    x16, x16, x6, lo",
                "        madd    x15, x9, x4, x10          // &C[first row][j0]",
                f"        add     x15, x2, x15, lsl #{shift}",
                "        mov     w12, #0",
                f"{loop}:",
                *moves,
                f"        add     x15, x15, {step}          // next row of C",
                "        add     w12, w12, #1",
                "        cmp     x12, x16",
                f"        b.lo    {loop}",
                "        add     x9, x9, x6"]
        return lines + [f"{phase}_done:"]

    def _k_step(self, first: int) -> list[str]:
        """One k group: a predicated vector load per row tile of A and per column tile of B,
        into Z(first).., then the outer products of every (row, column) tile pair."""
        kind, t, tile = self.kind, self.kind.suffix, self.kind.tile

        def vector(offset: int) -> str:
            return f", #{offset}, mul vl" if offset else ""

        a, b = first, first + self.rows
        loads = [f"        {kind.load}    {{z{a + index}.{t}}}, p{index}/z, [x13{vector(index)}]"
                 f"    // A, row tile {index}" for index in range(self.rows)]
        loads += [f"        {kind.load}    {{z{b + index}.{t}}}, p{self.rows + index}/z, "
                  f"[x14{vector(index)}]    // B, column tile {index}"
                  for index in range(self.columns)]
        return loads + [
            f"        {kind.mopa:<7} za{row * self.columns + column}.{tile}, p{row}/m, "
            f"p{self.rows + column}/m, z{a + row}.{t}, z{b + column}.{t}"
            for row in range(self.rows) for column in range(self.columns)]

    def _k_loop(self) -> list[str]:
        """The k loop, unrolled by two as KleidiAI's kernels are: even k groups load Z0..,
        odd ones the next registers, so a group's loads never wait for the outer products of
        the group before it to read their registers; an odd last group runs alone."""
        shift, second = self.kind.result_shift, self.rows + self.columns
        step = [f"        add     x13, x13, x3, lsl #{shift}      // next k group of A "
                f"({1 << shift} bytes per row)",
                f"        add     x14, x14, x4, lsl #{shift}      // next k group of B"]
        return [
            f"        add     x13, x0, x8, lsl #{shift}       // the block's first k group of A",
            f"        add     x14, x1, x10, lsl #{shift}      // the block's first k group of B",
            "        lsr     x16, x5, #1               // pairs of k groups",
            f"        cbz     x16, {self.label}_last",
            f"{self.label}_k:",
            *self._k_step(0),
            *step,
            *self._k_step(second),
            *step,
            "        subs    x16, x16, #1",
            f"        b.ne    {self.label}_k",
            f"{self.label}_last:",
            f"        tbz     x5, #0, {self.label}_store     // an even count: done",
            *self._k_step(0)]

    def lines(self, done: str) -> list[str]:
        rows, columns, label = self.rows, self.columns, self.label
        accumulate = self.kernel.accumulate
        return [
            f"{label}:                              // {rows}VL x {columns}VL blocks",
            _times(columns, "x7", f"column step: {columns}VL"),
            _times(rows, "x11", f"row step: {rows}VL"),
            "        mov     x8, #0                    // i0: first row of the block",
            f"{label}_rows:",
            "        cmp     x8, x3",
            f"        b.hs    {done}",
            *self._operand_predicates(0, rows, "x8", "x3", "rows of A"),
            "        mov     x10, #0                   // j0: first column of the block",
            f"{label}_columns:",
            "        cmp     x10, x4",
            f"        b.hs    {label}_next_rows",
            "        zero    {za}",
            *self._operand_predicates(rows, columns, "x10", "x4", "columns of B and C"),
            *((self._column_offsets() + self._c_rows(load=True)) if accumulate
              else ["        // C is not read: the block starts from zero"]),
            *self._k_loop(),
            f"{label}_store:",
            *self._column_offsets(),
            *(self._epilogue_operands() if self.kernel.epilogue else []),
            *self._c_rows(load=False),
            "        add     x10, x10, x7",
            f"        b       {label}_columns",
            f"{label}_next_rows:",
            "        add     x8, x8, x11",
            f"        b       {label}_rows"]


def gemm_prototype(kernel: GemmKernel) -> str:
    """The C parameter list of a GEMM kernel (see the module docstring)."""
    extra = {"": "", "bias_clamp": ", const void *bias, const void *clamp",
             "requantize": ", const void *bias, const void *quantization"}[kernel.epilogue]
    return (f"const void *a, const void *b, void *c, uint64_t m, uint64_t n, "
            f"uint64_t k_groups{extra}")


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
    counts = ("cntb", "cnth", "cntw", "cntd")
    tile, shift = kind.tile, kind.result_shift
    header = [f"        .arch_extension {extension}" for extension, needed in (
        ("sme-f64f64", kind.mopa == "fmopa" and tile == "d"),
        ("sme-i16i64", kind.mopa != "fmopa" and tile == "d")) if needed]
    requantize = kernel.epilogue == "requantize"
    frame = 80 + 16 * bool(kernel.epilogue) + 16 * requantize
    keep_arguments, setup, restore = [], [], []
    if kernel.epilogue:
        size, letter = 1 << shift, "wd"[shift - 2]
        keep_arguments = [
            "        stp     x19, x20, [sp, #80]",
            "        mov     x19, x6                   // bias: N elements",
            "        mov     x20, x7                   // clamp (or quantization): low, high"]
        setup = [
            f"        ptrue   p6.{tile}",
            f"        ld1r{letter}   {{z28.{tile}}}, p6/z, [x20]        // low",
            f"        ld1r{letter}   {{z29.{tile}}}, p6/z, [x20, #{size}]   // high"]
        restore = ["        ldp     x19, x20, [sp, #80]"]
    if requantize:
        keep_arguments.insert(0, "        str     x21, [sp, #96]")
        setup += ["        ld1rw   {z30.s}, p6/z, [x20, #8]   // zero point",
                  "        add     x21, x20, #16             // scale: N float32"]
        restore.append("        ldr     x21, [sp, #96]")
    arguments = {"": "", "bias_clamp": ", bias, clamp", "requantize": ", bias, quantization"}
    result = {"": kind.result, "bias_clamp": f"{kind.result} + bias, clamped",
              "requantize": f"{kind.result} + bias, requantized to int8"}
    done = f".L{name}_done"
    vector_lengths = [
        f"        {counts[shift]}    x6                        // VL: {8 << shift}-bit elements "
        "per vector",
        f"        {counts[kind.shift]}    x17                       // {kind.load} elements per "
        "vector"]
    bodies = [_Body(name, kernel, rows, columns) for rows, columns, _ in BLOCKINGS]
    choice = []
    for body, (rows, columns, when) in zip(bodies[:-1], BLOCKINGS):
        choice += [f"        cmp     {'x3' if rows == 1 else 'x4'}, x6                    "
                   f"// {when}", f"        b.ls    {body.label}"]
    comment = (f"// {name}(a, b, c, m, n, k_groups{arguments[kernel.epilogue]}): "
               f"C {'+=' if accumulate else '='} A * B, {kind.a} x {kind.b} -> "
               f"{result[kernel.epilogue]}, {kind.mopa} on ZA0-ZA3.")
    body = [
        *vector_lengths,
        *setup,
        *choice,
    ]
    for block in reversed(bodies):         # the 2VL x 2VL body falls through from the choice
        body += block.lines(done)
    return private_za_function(name, comment, header, frame, keep_arguments, body, restore)


def private_za_function(name: str, comment: str, directives: list[str], frame: int,
                        keep: list[str], body: list[str], restore: list[str]) -> str:
    """A non-streaming, private-ZA function that is locally streaming with new ZA (see the
    module docstring): its frame of ``frame`` bytes saves X29/X30 and D8-D15 (``keep`` saves
    more from byte 80 and moves arguments, ``restore`` undoes it); it commits a caller's lazy
    ZA save, runs ``body`` with SM and ZA on, which ends by falling into or branching to
    ``.L<name>_done``, and turns them off."""
    return "\n".join([
        comment,
        "// Generated by zatile.sw.kernels; see its module's docstring for the interface.",
        *directives,
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
        *keep,
        "        mrs     x16, tpidr2_el0           // commit a caller's lazy ZA save",
        f"        cbz     x16, .L{name}_committed",
        "        bl      __arm_tpidr2_save",
        "        msr     tpidr2_el0, xzr",
        f".L{name}_committed:",
        "        smstart                           // PSTATE.SM = PSTATE.ZA = 1",
        *body,
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
        ""])
