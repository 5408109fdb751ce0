"""A64 assembly for packing through ZA: the transpose of a matrix of 32-bit elements.

``zatile_transpose_32(src, dst, rows, columns)`` writes ``dst`` (columns × rows) = ``src``
(rows × columns)ᵀ, VL×VL blocks at a time through ZA0.S: the block's rows of ``src`` go in as
horizontal slices (LD1W ZA0H) and come out as vertical slices (ST1W ZA0V) into the rows of
``dst``, WHILELT predicates covering the edges. This is the transpose-interleave TVM packs the
left operand of its SME GEMM with; for fp32 it is exactly the packing of A that
:mod:`zatile.sw.kernels.gemm` expects (one k group per row of ``dst``). It is a non-streaming,
private-ZA function like the GEMMs (:func:`zatile.sw.kernels.gemm.private_za_function`).
"""

from __future__ import annotations

from zatile.sw.kernels.gemm import private_za_function

__all__ = ["PACK_PROTOTYPES", "pack_kernels"]

#: The C parameter list of each packing kernel.
PACK_PROTOTYPES = {"zatile_transpose_32": "const void *src, void *dst, uint64_t rows, "
                                          "uint64_t columns"}


def _slices(name: str, label: str, count: str, instruction: str) -> list[str]:
    """Move ``count`` (a register) slices of ZA0 between ZA and rows X15 apart by X9 bytes."""
    return [
        "        mov     w12, #0",
        f".L{name}_{label}:",
        instruction,
        "        add     x15, x15, x9",
        "        add     w12, w12, #1",
        f"        cmp     x12, {count}",
        f"        b.lo    .L{name}_{label}"]


def pack_kernels() -> dict[str, str]:
    """The assembly source of every packing kernel, by function name."""
    name = "zatile_transpose_32"
    body = [
        "        cntw    x6                        // VL: 32-bit elements per vector",
        "        mov     x8, #0                    // r0: the block's first row of src",
        f".L{name}_rows:",
        "        cmp     x8, x2",
        f"        b.hs    .L{name}_done",
        "        whilelt p1.s, x8, x2              // the block's rows: elements of a dst row",
        "        sub     x16, x2, x8",
        "        cmp     x16, x6",
        "        csel    x16, x16, x6, lo          // rows in the block",
        "        mov     x10, #0                   // c0: the block's first column of src",
        f".L{name}_columns:",
        "        cmp     x10, x3",
        f"        b.hs    .L{name}_next_rows",
        "        whilelt p0.s, x10, x3             // the block's columns",
        "        sub     x17, x3, x10",
        "        cmp     x17, x6",
        "        csel    x17, x17, x6, lo          // columns in the block",
        "        madd    x15, x8, x3, x10          // &src[r0][c0]",
        "        add     x15, x0, x15, lsl #2",
        "        lsl     x9, x3, #2                // bytes per row of src",
        *_slices(name, "load", "x16", "        ld1w    {za0h.s[w12, 0]}, p0/z, [x15]"),
        "        madd    x15, x10, x2, x8          // &dst[c0][r0]",
        "        add     x15, x1, x15, lsl #2",
        "        lsl     x9, x2, #2                // bytes per row of dst",
        *_slices(name, "store", "x17", "        st1w    {za0v.s[w12, 0]}, p1, [x15]"),
        "        add     x10, x10, x6",
        f"        b       .L{name}_columns",
        f".L{name}_next_rows:",
        "        add     x8, x8, x6",
        f"        b       .L{name}_rows"]
    comment = f"// {name}(src, dst, rows, columns): dst = src transposed, 32-bit elements."
    return {name: private_za_function(name, comment, [], 80, [], body, [])}
