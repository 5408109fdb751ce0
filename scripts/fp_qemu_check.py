"""Cross-check the floating-point kernels of sim/fp.py against QEMU's SME outer products.

For each of FMOPA/FMOPS .S, FMOPA/FMOPS .D, the widening FMOPA/FMOPS (half to single) and
BFMOPA/BFMOPS, a freestanding aarch64 program is assembled and run under ``qemu-aarch64`` at
SVL = 128 bits. It reads test records from stdin; for each one it sets FPCR, loads all of ZA and
Z0-Z15, runs one outer product into every tile of ZA (MOPA into the first half of the tiles,
MOPS into the second half, all predicates true), stores ZA and, after the last record, writes the
stored ZA images to stdout. Inputs are biased to special values (``sim.fpref.special_values``),
denormals, numbers near one, extreme exponents and accumulators that cancel the products; the
FPCR cycles through every combination of RMode, FZ and FZ16, with and without DN. Every element
of every stored ZA image is compared with the prediction of sim/fp.py.

:func:`run_cases` uses the same programs to evaluate arbitrary individual cases of the sim/fp.py
kernels under QEMU; tests/test_fp.py runs its known answers and biased random cases through it.

Only FPCR.RMode, FZ, FZ16 and DN are varied: the model is of a PE without FEAT_AFP and
FEAT_EBF16, while QEMU's ``max`` CPU has both, so FPCR.AH and EBF must stay 0 here.

Run ``python scripts/fp_qemu_check.py [--records N] [--seed S]``; the exit status is 0 when every
element agrees.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zatile.sim import fp, fpref
from zatile.sim.binutils import ARCH_FLAGS
from zatile.sim.tools import find_tool

__all__ = ["KERNEL_OPERATIONS", "OPERATIONS", "Outcome", "RECORD", "run_cases", "run_check"]

#: Streaming vector length of the QEMU run, in bytes (``sme-default-vector-length``).
SVL_BYTES = 16
Z_REGISTERS = 16
QEMU_CPU = f"max,sme-default-vector-length={SVL_BYTES}"

#: One test case as the program reads it.
RECORD = np.dtype([
    ("fpcr", "<u8"),
    ("reserved", "<u8"),  # keeps ZA and Z 16-byte aligned
    ("za", "u1", (SVL_BYTES, SVL_BYTES)),
    ("z", "u1", (Z_REGISTERS, SVL_BYTES)),
])
#: What the program writes back for each record: ZA after the outer products.
RESULT = np.dtype([("za", "u1", (SVL_BYTES, SVL_BYTES))])

FPCR_DN = 1 << 25
FPCR_SETTINGS = [rmode << 22 | fz | fz16 | dn for dn in (0, FPCR_DN) for rmode in range(4)
                 for fz in (0, fp.FPCR_FZ) for fz16 in (0, fp.FPCR_FZ16)]


@dataclass(frozen=True)
class Operation:
    """One outer-product form and how to predict its effect on ZA with sim/fp.py.

    Attributes
    ----------
    mopa, mops : str
        The accumulating and subtracting mnemonics.
    element_bytes : int
        Size of a ZA tile element: 4 (.S tiles, 4 of them) or 8 (.D tiles, 8 of them).
    source_suffix : str
        Element suffix of the Z sources (``s``, ``d`` or ``h``).
    source_format : fpref.Format
        Format of the Z source elements.
    kernel : str
        The sim/fp.py function that computes one element.
    """

    mopa: str
    mops: str
    element_bytes: int
    source_suffix: str
    source_format: fpref.Format
    kernel: str

    @property
    def tiles(self) -> int:
        return self.element_bytes

    @property
    def dim(self) -> int:
        return SVL_BYTES // self.element_bytes

    @property
    def widening(self) -> bool:
        return self.source_suffix == "h"

    @property
    def accumulator_format(self) -> fpref.Format:
        return fpref.FP64 if self.element_bytes == 8 else fpref.FP32

    def instructions(self) -> list[str]:
        """Tile t takes rows from Z(2t) and columns from Z(2t+1); the upper half subtracts."""
        tile_suffix = "d" if self.element_bytes == 8 else "s"
        return [f"{self.mopa if tile < self.tiles // 2 else self.mops} za{tile}.{tile_suffix}, "
                f"p0/m, p0/m, z{2 * tile}.{self.source_suffix}, "
                f"z{2 * tile + 1}.{self.source_suffix}" for tile in range(self.tiles)]


OPERATIONS = {
    "fmopa.s": Operation("fmopa", "fmops", 4, "s", fpref.FP32, "fmla_f32"),
    "fmopa.d": Operation("fmopa", "fmops", 8, "d", fpref.FP64, "fmla_f64"),
    "fmopa.h->s": Operation("fmopa", "fmops", 4, "h", fpref.FP16, "fdotadd_f16"),
    "bfmopa": Operation("bfmopa", "bfmops", 4, "h", fpref.BF16, "bfdotadd"),
}
#: The outer product that applies each kernel of sim/fp.py.
KERNEL_OPERATIONS = {operation.kernel: name for name, operation in OPERATIONS.items()}

_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


# --- The program ---------------------------------------------------------------------------------

def _program(operation: Operation, records: int) -> str:
    """Assembly source of the test program for ``records`` records of ``operation``."""
    za_offset, z_offset = RECORD.fields["za"][1], RECORD.fields["z"][1]
    load_za = "\n".join(f"    ldr za[w12, {row}], [x10, #{row}, mul vl]"
                        for row in range(SVL_BYTES))
    load_z = "\n".join(f"    ldr z{register}, [x11, #{register}, mul vl]"
                       for register in range(Z_REGISTERS))
    store_za = "\n".join(f"    str za[w12, {row}], [x22, #{row}, mul vl]"
                         for row in range(SVL_BYTES))
    outer_products = "\n".join(f"    {line}" for line in operation.instructions())
    return f"""\
    .equ RECORDS_BYTES, {records * RECORD.itemsize}
    .text
    .global _start
_start:
    adrp    x19, records                // read all of stdin into `records`
    add     x19, x19, :lo12:records
    mov     x20, #0
read_more:
    ldr     x2, =RECORDS_BYTES
    subs    x2, x2, x20
    b.eq    read_done
    mov     x0, #0
    add     x1, x19, x20
    mov     x8, #63                     // read
    svc     #0
    cmp     x0, #0
    b.le    read_done
    add     x20, x20, x0
    b       read_more
read_done:
    ldr     x2, =RECORDS_BYTES
    cmp     x20, x2
    b.ne    fail
    adrp    x21, results
    add     x21, x21, :lo12:results
    mov     x22, x21
    add     x23, x19, x20
next_record:
    cmp     x19, x23
    b.hs    write_results
    smstart                             // SM and ZA on; no syscall until smstop
    ldr     x9, [x19]
    msr     fpcr, x9
    add     x10, x19, #{za_offset}
    add     x11, x19, #{z_offset}
    mov     w12, #0
{load_za}
{load_z}
    ptrue   p0.b
{outer_products}
{store_za}
    smstop
    add     x19, x19, #{RECORD.itemsize}
    add     x22, x22, #{RESULT.itemsize}
    b       next_record
write_results:
    mov     x24, x21
write_more:
    cmp     x24, x22
    b.hs    done
    mov     x0, #1
    mov     x1, x24
    sub     x2, x22, x24
    mov     x8, #64                     // write
    svc     #0
    cmp     x0, #0
    b.le    fail
    add     x24, x24, x0
    b       write_more
done:
    mov     x0, #0
    mov     x8, #93                     // exit
    svc     #0
fail:
    mov     x0, #1
    mov     x8, #93
    svc     #0
    .ltorg
    .bss
    .balign 16
records:
    .skip   {records * RECORD.itemsize}
results:
    .skip   {records * RESULT.itemsize}
"""


def run_under_qemu(operation: Operation, records: np.ndarray) -> np.ndarray:
    """Assemble, link and run the program on ``records``; returns its RESULT records.

    Raises
    ------
    subprocess.CalledProcessError
        If assembling, linking or the run fails (the program exits 1 on short reads/writes).
    """
    with tempfile.TemporaryDirectory() as work:
        source, objfile, executable = (Path(work, name) for name in ("t.s", "t.o", "t"))
        source.write_text(_program(operation, len(records)))
        subprocess.run([find_tool("as"), *ARCH_FLAGS, str(source), "-o", str(objfile)],
                       check=True, capture_output=True, text=True)
        subprocess.run([find_tool("ld"), str(objfile), "-o", str(executable)], check=True,
                       capture_output=True, text=True)
        run = subprocess.run([find_tool("qemu"), "-cpu", QEMU_CPU, str(executable)],
                             input=records.tobytes(), check=True, capture_output=True)
    return np.frombuffer(run.stdout, dtype=RESULT, count=len(records))


# --- Inputs --------------------------------------------------------------------------------------

def _special_mix(rng: np.random.Generator, fmt: fpref.Format, shape) -> np.ndarray:
    """Bit patterns (uint64) of ``fmt`` in ``shape``, biased to special cases.

    In equal shares: special values, denormals, numbers near one with few significand bits
    (exact products, ties), numbers at either end of the exponent range and random patterns.
    """
    F, E, width = fmt.fraction_bits, fmt.exponent_bits, fmt.width
    count = int(np.prod(shape))
    sign = rng.integers(0, 2, count, dtype=np.uint64) << np.uint64(width - 1)
    fraction = rng.integers(0, 2 ** F, count, dtype=np.uint64)
    near_one = rng.integers(fmt.bias - 4, fmt.bias + 5, count, dtype=np.uint64)
    extreme = np.where(rng.integers(0, 2, count) == 0,
                       rng.integers(1, F + 3, count, dtype=np.uint64),
                       rng.integers(2 ** E - F - 4, 2 ** E - 1, count, dtype=np.uint64))
    choices = [
        rng.choice(np.array(fpref.special_values(fmt), dtype=np.uint64), count),
        sign | np.maximum(fraction, np.uint64(1)),
        sign | near_one << np.uint64(F) | (fraction & np.uint64(0xF << (F - 4))),
        sign | extreme << np.uint64(F) | fraction,
        rng.integers(0, 2 ** width - 1, count, dtype=np.uint64, endpoint=True),
    ]
    return np.choose(rng.integers(0, len(choices), count), choices).reshape(shape)


def _as_values(bits: np.ndarray, fmt: fpref.Format) -> np.ndarray:
    """float64 values of bit patterns of ``fmt`` (BFloat16 through single precision)."""
    if fmt is fpref.BF16:
        bits, fmt = bits << np.uint64(16), fpref.FP32
    dtype = {16: np.float16, 32: np.float32, 64: np.float64}[fmt.width]
    return bits.astype(_UNSIGNED[fmt.width // 8]).view(dtype).astype(np.float64)


def _cancelling(values: np.ndarray, fmt: fpref.Format) -> np.ndarray:
    """Bit patterns of ``fmt`` of −values rounded to nearest: accumulators that cancel them."""
    dtype = np.float64 if fmt.width == 64 else np.float32
    return (-values).astype(dtype).view(_UNSIGNED[fmt.width // 8]).astype(np.uint64)


def make_records(operation: Operation, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` records of biased inputs for ``operation``; FPCR cycles through the settings."""
    records = np.zeros(count, dtype=RECORD)
    records["fpcr"] = [FPCR_SETTINGS[index % len(FPCR_SETTINGS)] for index in range(count)]
    source_bytes = operation.source_format.width // 8
    sources = _special_mix(rng, operation.source_format,
                           (count, Z_REGISTERS, SVL_BYTES // source_bytes))
    zn, zm = _tile_sources(sources, operation)
    with np.errstate(all="ignore"):
        if operation.widening:
            pairs_n = _as_values(zn, operation.source_format).reshape(count, -1, operation.dim, 2)
            pairs_m = _as_values(zm, operation.source_format).reshape(count, -1, operation.dim, 2)
            products = np.einsum("rtik,rtjk->rtij", pairs_n, pairs_m)
        else:
            products = (_as_values(zn, operation.source_format)[:, :, :, None]
                        * _as_values(zm, operation.source_format)[:, :, None, :])
        cancelling = _cancelling(products, operation.accumulator_format)
    independent = _special_mix(rng, operation.accumulator_format, cancelling.shape)
    accumulators = np.where(rng.integers(0, 3, cancelling.shape) == 0, cancelling, independent)
    _tile_elements(records["za"], operation)[...] = accumulators
    records["z"] = sources.astype(_UNSIGNED[source_bytes]).view(np.uint8).reshape(
        count, Z_REGISTERS, SVL_BYTES)
    return records


def _tile_sources(sources: np.ndarray, operation: Operation) -> tuple[np.ndarray, np.ndarray]:
    """[record, tile, element] row and column sources: Z(2t) and Z(2t+1) for tile t."""
    return sources[:, 0:2 * operation.tiles:2], sources[:, 1:2 * operation.tiles:2]


def _tile_elements(za: np.ndarray, operation: Operation) -> np.ndarray:
    """A [record, tile, row, column] view of the tile elements in ZA images [record, row, byte].

    Row ``i`` of tile ``t`` is ZA row ``t + i * element_bytes`` (docs/isa.md, "Tile mapping").
    """
    elements = za.view(_UNSIGNED[operation.element_bytes])  # [record, ZA row, column]
    by_slice = elements.reshape(len(za), operation.dim, operation.tiles, operation.dim)
    return by_slice.transpose(0, 2, 1, 3)  # ZA row = slice * tiles + tile


# --- Prediction and comparison -------------------------------------------------------------------

def predict(operation: Operation, records: np.ndarray) -> np.ndarray:
    """The [record, tile, row, column] tile elements sim/fp.py expects after the outer products."""
    accumulators = _tile_elements(records["za"].copy(), operation)
    source_bytes = operation.source_format.width // 8
    sources = records["z"].view(_UNSIGNED[source_bytes]).astype(np.uint64)
    zn, zm = _tile_sources(sources, operation)
    sign = np.uint64(1 << (operation.source_format.width - 1))
    subtracting = (np.arange(operation.tiles) >= operation.tiles // 2)[None, :, None]
    zn = np.where(subtracting, zn ^ sign, zn)  # FMOPS / BFMOPS negate the row elements
    kernel = getattr(fp, operation.kernel)
    expected = np.empty(accumulators.shape, dtype=np.uint64)
    for fpcr in np.unique(records["fpcr"]):
        chosen = records["fpcr"] == fpcr
        acc, rows, columns = accumulators[chosen], zn[chosen], zm[chosen]
        if operation.widening:  # element k of a row or column is the pair (2k, 2k+1)
            operands = (acc, rows[:, :, 0::2, None], rows[:, :, 1::2, None],
                        columns[:, :, None, 0::2], columns[:, :, None, 1::2])
        else:
            operands = (acc, rows[:, :, :, None], columns[:, :, None, :])
        fpcr_argument = () if operation.kernel == "bfdotadd" else (int(fpcr),)  # ignores FPCR
        expected[chosen] = kernel(*operands, *fpcr_argument)
    return expected


@dataclass
class Outcome:
    """Result of cross-checking one operation: element count and a line per disagreement."""

    cases: int = 0
    mismatches: list[str] = field(default_factory=list)


def compare(operation: Operation, records: np.ndarray, results: np.ndarray) -> Outcome:
    """Compare the ZA images QEMU produced for ``records`` with sim/fp.py's prediction."""
    expected = predict(operation, records)
    observed = _tile_elements(results["za"].copy(), operation).astype(np.uint64)
    initial = _tile_elements(records["za"].copy(), operation)
    outcome = Outcome(cases=expected.size)
    source_bytes = operation.source_format.width // 8
    sources = records["z"].view(_UNSIGNED[source_bytes])
    for record, tile, row, column in np.argwhere(expected != observed):
        outcome.mismatches.append(
            f"record {record} fpcr=0x{int(records['fpcr'][record]):08x} "
            f"za{tile}[{row}][{column}]: acc=0x{int(initial[record, tile, row, column]):x} "
            f"zn={[hex(int(v)) for v in sources[record, 2 * tile]]} "
            f"zm={[hex(int(v)) for v in sources[record, 2 * tile + 1]]} "
            f"qemu=0x{int(observed[record, tile, row, column]):x} "
            f"sim.fp=0x{int(expected[record, tile, row, column]):x}")
    return outcome


def run_cases(kernel: str, operands: list[np.ndarray], fpcr: np.ndarray) -> np.ndarray:
    """QEMU's results for individual cases of a sim/fp.py kernel, in sim/fp.py's terms.

    Each case (acc, a, b) or (acc, a0, a1, b0, b1) with its own FPCR value goes on the diagonal
    of a tile: element [k][k] of tile t reads acc there, row source k of Z(2t) and column source
    k of Z(2t+1); for the subtracting tiles the row source is stored negated, so that every tile
    computes the kernel itself. Cases with the same FPCR share records.

    Returns
    -------
    numpy.ndarray of uint64
        One result bit pattern per case.
    """
    operation = OPERATIONS[KERNEL_OPERATIONS[kernel]]
    operands = [np.asarray(column, dtype=np.uint64) for column in operands]
    fpcr = np.asarray(fpcr, dtype=np.uint64)
    slots = operation.tiles * operation.dim
    source_bytes = operation.source_format.width // 8
    row_sign = np.uint64(1 << (operation.source_format.width - 1))
    groups = [np.flatnonzero(fpcr == value) for value in np.unique(fpcr)]
    records = np.zeros(sum(-(-len(group) // slots) for group in groups), dtype=RECORD)
    first_record, placements = 0, []
    for group in groups:
        slot = np.arange(len(group))
        record = first_record + slot // slots
        tile, k = slot % slots // operation.dim, slot % operation.dim
        records["fpcr"][record] = fpcr[group]
        first_record += -(-len(group) // slots)
        negate = np.where(tile >= operation.tiles // 2, row_sign, np.uint64(0))
        _tile_elements(records["za"], operation)[record, tile, k, k] = operands[0][group]
        sources = records["z"].view(_UNSIGNED[source_bytes])
        row_operands, column_operands = ((operands[1:3], operands[3:5]) if operation.widening
                                         else (operands[1:2], operands[2:3]))
        for pair_index, (row_operand, column_operand) in enumerate(zip(row_operands,
                                                                       column_operands)):
            element = k * len(row_operands) + pair_index
            sources[record, 2 * tile, element] = row_operand[group] ^ negate
            sources[record, 2 * tile + 1, element] = column_operand[group]
        placements.append((group, record, tile, k))
    observed = _tile_elements(run_under_qemu(operation, records)["za"].copy(), operation)
    results = np.empty(len(fpcr), dtype=np.uint64)
    for group, record, tile, k in placements:
        results[group] = observed[record, tile, k, k]
    return results


def run_check(records_per_operation: int = 2000, seed: int = 1) -> dict[str, Outcome]:
    """Run every operation under QEMU on fresh biased records and compare with sim/fp.py."""
    rng = np.random.default_rng(seed)
    outcomes = {}
    for name, operation in OPERATIONS.items():
        records = make_records(operation, records_per_operation, rng)
        outcomes[name] = compare(operation, records, run_under_qemu(operation, records))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000,
                        help="records (one outer product per tile) per operation")
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args(argv)
    outcomes = run_check(arguments.records, arguments.seed)
    for name, outcome in outcomes.items():
        agreeing = outcome.cases - len(outcome.mismatches)
        print(f"{name:12} {agreeing}/{outcome.cases} elements agree")
        for line in outcome.mismatches[:10]:
            print(f"    {line}")
    return 0 if not any(outcome.mismatches for outcome in outcomes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
