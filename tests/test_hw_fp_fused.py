"""The pipelined FP units (FpMulAdd, FpDotAdd16, BfDotAdd) against sim/fp.py and sim/fpref.py.

Each run streams biased random vectors (tests/test_hw_fp_stimulus.py: specials, denormals,
overflow, cancellation, ties; every RMode, FZ and FZ16 setting) through one unit, one per
cycle, and compares every result bit for bit with the vectorized kernel of sim/fp.py; a sample
of each run is also computed with the exact scalar reference sim/fpref.py, which must agree.
Default suite: 30,000 vectors; ``-m soak``: 1,050,000 more. Another run adds random input gaps
and output backpressure and checks order, count, and the stated latency.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.sim import Simulator

from zatile.hw.fp.bf_dot_add import BfDotAdd
from zatile.hw.fp.dot_add16 import DotAddLayout, FpDotAdd16
from zatile.hw.fp.format import BF16, FP16, FP32, FP64
from zatile.hw.fp.mul_add import FpMulAdd, MulAddLayout
from zatile.sim import fp, fpref
from test_hw_fp_stimulus import dot_vectors, fma_vectors

#: Vectors of the fpref cross-check per run.
REFERENCE_SAMPLE = 300


def pack(layout, **fields) -> int:
    """A payload as an integer, from integer field values (arrays as one integer)."""
    value = 0
    for name, field_value in fields.items():
        value |= int(field_value) << layout[name].offset
    return value


def run_stream(dut, payloads: list[int], *, rng=None) -> tuple[list[int], list[int]]:
    """Stream ``payloads`` through a unit with ``i``/``o`` streams; return results and latencies.

    With ``rng``, the input has random gaps and the output random backpressure.
    """
    results, accepted_at, completed_at = [], [], []

    async def bench(ctx):
        payload = dut.i.payload.as_value()
        index = cycle = 0
        offering = False
        while len(results) < len(payloads):
            # Once offered, a payload stays offered until it is taken (stream rules 2 and 4).
            if not offering and index < len(payloads) and (rng is None or rng.random() < 0.7):
                offering = True
                ctx.set(payload, payloads[index])
            ctx.set(dut.i.valid, offering)
            ready = rng is None or rng.random() < 0.7
            ctx.set(dut.o.ready, ready)
            if ready and ctx.get(dut.o.valid):
                results.append(ctx.get(dut.o.payload))
                completed_at.append(cycle)
            if offering and ctx.get(dut.i.ready):
                accepted_at.append(cycle)
                index += 1
                offering = False
            await ctx.tick()
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return results, [done - start for start, done in zip(accepted_at, completed_at)]


def by_fpcr(kernel, operands: list[np.ndarray], fpcr: np.ndarray) -> np.ndarray:
    """Apply a sim.fp kernel (which takes one FPCR value) to vectors with mixed FPCR values."""
    result = np.zeros(len(fpcr), np.uint64)
    for value in np.unique(fpcr):
        selected = fpcr == value
        result[selected] = kernel(*(operand[selected] for operand in operands), int(value))
    return result


def check_against_reference(reference, operands: list[np.ndarray], fpcr, expected, count: int):
    """The exact scalar reference must give the same answers as sim.fp on a sample."""
    for index in range(min(count, len(expected))):
        arguments = [int(operand[index]) for operand in operands]
        if fpcr is not None:
            arguments.append(int(fpcr[index]))
        assert reference(*arguments) == int(expected[index]), \
            ("sim.fp and sim.fpref disagree", [hex(x) for x in arguments])


def compare(got: list[int], expected: np.ndarray, operands: dict[str, np.ndarray]):
    mismatches = [index for index, (g, e) in enumerate(zip(got, expected)) if g != int(e)]
    assert not mismatches, [
        {"got": hex(got[i]), "expected": hex(int(expected[i])),
         **{name: hex(int(values[i])) for name, values in operands.items()}}
        for i in mismatches[:8]] + [f"{len(mismatches)} of {len(got)} differ"]


# --- FpMulAdd ------------------------------------------------------------------------------------

MUL_ADD_KERNELS = {FP32: (fp.fmla_f32, fpref.fmla_f32), FP64: (fp.fmla_f64, fpref.fmla_f64)}


def mul_add_expected(fmt, vectors):
    operands = [vectors["addend"], vectors["multiplicand"], vectors["multiplier"]]
    if fmt is FP16:
        reference_format = fpref.FP16
        return np.array([fpref.fp_mul_add(int(a), int(b), int(c), reference_format, int(f))
                         for a, b, c, f in zip(*operands, vectors["fpcr"])], np.uint64)
    kernel, reference = MUL_ADD_KERNELS[fmt]
    expected = by_fpcr(kernel, operands, vectors["fpcr"])
    check_against_reference(reference, operands, vectors["fpcr"], expected, REFERENCE_SAMPLE)
    return expected


def mul_add_payloads(fmt, vectors) -> list[int]:
    layout = MulAddLayout(fmt)
    flush_bit = fpref.FPCR_FZ16 if fmt is FP16 else fpref.FPCR_FZ
    return [pack(layout, addend=a, multiplicand=b, multiplier=c, rounding=(f >> 22) & 3,
                 flush=bool(f & flush_bit))
            for a, b, c, f in zip(vectors["addend"], vectors["multiplicand"],
                                  vectors["multiplier"], vectors["fpcr"])]


def check_mul_add(fmt, count: int, seed: int, rng=None):
    vectors = fma_vectors(np.random.default_rng(seed), fmt, count)
    dut = FpMulAdd(fmt)
    got, latencies = run_stream(dut, mul_add_payloads(fmt, vectors), rng=rng)
    compare(got, mul_add_expected(fmt, vectors), vectors)
    return latencies


@pytest.mark.parametrize("fmt, count", [(FP32, 12000), (FP64, 6000), (FP16, 2000)],
                         ids=["fp32", "fp64", "fp16"])
def test_mul_add(fmt, count):
    latencies = check_mul_add(fmt, count, seed=fmt.width)
    assert set(latencies) == {FpMulAdd.latency}


@pytest.mark.soak
@pytest.mark.parametrize("chunk", range(6))
@pytest.mark.parametrize("fmt", [FP32, FP64], ids=["fp32", "fp64"])
def test_mul_add_soak(fmt, chunk):
    check_mul_add(fmt, 50_000, seed=1000 * fmt.width + chunk)


def test_mul_add_with_gaps_and_backpressure():
    latencies = check_mul_add(FP32, 1500, seed=7, rng=np.random.default_rng(7))
    assert min(latencies) == FpMulAdd.latency


# --- FpDotAdd16 and BfDotAdd ---------------------------------------------------------------------

def dot_payloads(vectors, with_fpcr: bool) -> list[int]:
    layout = DotAddLayout(with_fpcr)
    payloads = []
    for index in range(len(vectors["addend"])):
        fields = {"addend": vectors["addend"][index],
                  "multiplicands": int(vectors["a0"][index]) | int(vectors["a1"][index]) << 16,
                  "multipliers": int(vectors["b0"][index]) | int(vectors["b1"][index]) << 16}
        if with_fpcr:
            fpcr = int(vectors["fpcr"][index])
            fields.update(rounding=(fpcr >> 22) & 3, flush=bool(fpcr & fpref.FPCR_FZ),
                          flush_half=bool(fpcr & fpref.FPCR_FZ16))
        payloads.append(pack(layout, **fields))
    return payloads


def check_dot_add(fmt, count: int, seed: int, rng=None):
    vectors = dot_vectors(np.random.default_rng(seed), fmt, count)
    operands = [vectors[name] for name in ("addend", "a0", "a1", "b0", "b1")]
    if fmt is FP16:
        dut = FpDotAdd16()
        expected = by_fpcr(fp.fdotadd_f16, operands, vectors["fpcr"])
        check_against_reference(fpref.fdotadd_f16, operands, vectors["fpcr"], expected,
                                REFERENCE_SAMPLE)
    else:
        dut = BfDotAdd()
        expected = fp.bfdotadd(*operands)
        check_against_reference(fpref.bfdotadd, operands, None, expected, REFERENCE_SAMPLE)
    got, latencies = run_stream(dut, dot_payloads(vectors, with_fpcr=fmt is FP16), rng=rng)
    compare(got, expected, vectors)
    return latencies, dut.latency


@pytest.mark.parametrize("fmt", [FP16, BF16], ids=["fp16", "bf16"])
def test_dot_add(fmt):
    latencies, latency = check_dot_add(fmt, 5000, seed=fmt.exponent_bits)
    assert set(latencies) == {latency}


@pytest.mark.soak
@pytest.mark.parametrize("chunk", range(5))
@pytest.mark.parametrize("fmt", [FP16, BF16], ids=["fp16", "bf16"])
def test_dot_add_soak(fmt, chunk):
    check_dot_add(fmt, 50_000, seed=1000 * fmt.exponent_bits + chunk)


@pytest.mark.parametrize("fmt", [FP16, BF16], ids=["fp16", "bf16"])
def test_dot_add_with_gaps_and_backpressure(fmt):
    latencies, latency = check_dot_add(fmt, 800, seed=9, rng=np.random.default_rng(9))
    assert min(latencies) == latency


def test_arguments_are_checked():
    with pytest.raises(ValueError, match=r"FpMulAdd supports fp16, fp32 and fp64, not FpFormat\(bf16\)"):
        FpMulAdd(BF16)
