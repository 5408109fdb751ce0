"""Random SME programs with random initial states, for differential campaigns.

A generated program is straight-line binutils assembly over the whole subset (weighted by
operation), paired with an initial :class:`~sim.state.ArchState` whose registers are arranged so
that most memory accesses land in a mapped region. Predicates are all-true, all-false, sparse or
random; slice selectors reach far beyond the tile size; Z registers carry floating-point specials;
FPCR takes every rounding mode with FZ/FZ16 on and off; tiles of different sizes overlap.
MOVPRFX appears only as a valid pair with the instruction it prefixes (:func:`movprfx_pair`).

Register conventions of generated programs (so instructions stay meaningful):

========  ==================================================================
x0-x7     base pointers into the data region (SP is one too)
x8-x11    small element indexes (Rm of scaled-index addressing)
w12-w15   slice selectors: small, large, and near 2^32
x16-x19   the values 0-3, the operands of ``msr svcr``
x20-x30   anything; scalar results (RDSVL, CNTx, ...) are written here
========  ==================================================================
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from zatile.sw.arch.asm import disassemble
from zatile.sw.arch.isa import FORMS, Form, Requires, decode
from zatile.sw.arch.isa.sve_perm import MOVPRFX_OPS, prefixed_destination
from zatile.sim.state import ArchState, Memory

__all__ = ["DATA_BASE", "DATA_SIZE", "OP_WEIGHTS", "GeneratedProgram", "generate_program",
           "movprfx_pair"]

#: Where the data region of generated programs is mapped, and its size.
DATA_BASE = 0x0040_0000
DATA_SIZE = 0x1_0000

#: Relative frequency of each semantic operation (forms of one op share its weight).
OP_WEIGHTS: dict[str, float] = {
    "msr_svcr_imm": 3, "mrs_svcr": 1, "msr_svcr": 1, "zero_za": 3,
    "ld1_tile": 10, "st1_tile": 6, "ldr_za": 3, "str_za": 3,
    "mova_to_tile": 6, "mova_to_vector": 6,
    "fmopa_fp32": 6, "fmopa_fp64": 4, "fmopa_fp16_widening": 4, "bfmopa": 4, "int_mopa": 8,
    "add_vector_to_tile": 4, "rdsvl": 1, "addsvl": 1,
    "ptrue": 5, "pfalse": 1, "while": 3, "dup_scalar": 2, "dup_imm": 2, "cnt": 1,
    "ld1_contiguous": 5, "st1_contiguous": 3, "ldr_register": 2, "str_register": 2,
    # streaming-SVE replicating, sign-extending, structure and non-temporal loads/stores
    "ld1_replicate": 2, "ld1_signed": 2, "ld_structure": 2, "st_structure": 2,
    "ldnt1_contiguous": 1, "stnt1_contiguous": 1, "ld1rq": 1, "prefetch": 0.5,
    # streaming-SVE integer arithmetic, logic and shifts: the common ones more often
    **{f"int_{name}": 1 for name in ("add", "sub", "mul", "mla", "mls", "and", "orr", "eor",
                                     "asr", "lsr", "lsl", "smax", "smin", "umax", "umin")},
    **{f"int_{name}": 0.5 for name in (
        "sabd", "uabd", "smulh", "umulh", "sdiv", "udiv", "bic", "srshl", "urshl", "sqshl",
        "uqshl", "sqrshl", "uqrshl", "shadd", "uhadd", "shsub", "uhsub", "srhadd", "urhadd",
        "sqadd", "uqadd", "sqsub", "uqsub", "suqadd", "usqadd", "sxtb", "uxtb", "sxth", "uxth",
        "sxtw", "uxtw", "abs", "neg", "cls", "clz", "cnt", "cnot", "not", "sqabs", "sqneg",
        "asrd", "srshr", "urshr", "sqshlu", "sqdmulh", "sqrdmulh", "dupm", "sqxtn", "uqxtn",
        "sqxtun", "saddl", "uaddl", "ssubl", "usubl", "sabdl", "uabdl", "saddw", "uaddw", "ssubw",
        "usubw", "sqdmull", "smull", "umull", "shrn", "rshrn", "sqshrn", "sqrshrn", "uqshrn",
        "uqrshrn", "sqshrun", "sqrshrun")},
    # streaming-SVE compares, predicate operations, counts and reductions
    "cmp": 2, "pred_logic": 1, "pred_logic_flags": 0.5, "ptest": 0.5, "pfirst": 0.3,
    "pnext": 0.3, "ptrues": 0.3, "brk": 0.5, "brk_flags": 0.3, "while_cond": 1, "cntp": 0.5,
    "count_scalar": 1, "count_vector": 0.5, "countp_scalar": 0.5, "countp_vector": 0.3,
    "reduce": 1,
    # streaming-SVE floating point
    **{f"fp_{name}": 1 for name in ("add", "sub", "mul", "mla", "max", "min", "cmpge",
                                    "cmpgt", "cmpeq")},
    **{f"fp_{name}": 0.5 for name in (
        "mulx", "div", "maxnm", "minnm", "abd", "scale", "sqrt", "abs", "neg", "addv", "maxv",
        "minv", "maxnmv", "minnmv", "cmpne", "cmpun", "frintn", "frintp", "frintm", "frintz",
        "frinta", "frintx", "frinti", "fcvt", "bfcvt", "fcvtx", "fcvtnt", "fcvtlt", "bfcvtnt",
        "fcvtxnt", "scvtf", "ucvtf", "fcvtzs", "fcvtzu", "dup_imm", "cpy_imm", "recpe", "rsqrte",
        "recps", "rsqrts", "recpx")},
    # streaming-SVE element moves, permutes and MOVPRFX (always paired with an integer form)
    **{f"perm_{name}": 0.5 for name in (
        "index", "dup_indexed", "cpy", "sel", "insr", "last", "clast", "ext", "rev",
        "rev_predicate", "zip", "uzp", "trn", "zip_predicate", "uzp_predicate", "trn_predicate",
        "tbl", "tbx", "splice", "revb", "revh", "revw", "rbit", "unpack", "unpack_predicate",
        "movprfx")},
}

# Floating-point bit patterns worth hitting: zeros, infinities, NaNs (quiet and signalling),
# smallest/largest denormals and normals, one, and values whose products tie.
_FP_SPECIALS = {
    2: [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x3C00,
        0xBC00, 0x3C01, 0x4000, 0x3800],
    4: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FA00000, 0x00000001,
        0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000, 0xBF800000, 0x3F800001, 0x33800000,
        0x4B800000],
    8: [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
        0x7FF4000000000000, 1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
        0x3FF0000000000000, 0xBFF0000000000000, 0x3FF0000000000001, 0x3CA0000000000000],
}


@dataclass(frozen=True)
class GeneratedProgram:
    """A random program and the state it starts from."""

    text: str
    initial: ArchState


def _random_predicate(rng: random.Random, svl_bytes: int) -> np.ndarray:
    bits = np.zeros(svl_bytes, np.uint8)
    style = rng.choice(("all", "all", "none", "sparse", "random", "first", "last"))
    if style == "all":
        bits[:] = 1
    elif style == "sparse":
        bits[rng.randrange(svl_bytes)::rng.choice((2, 3, 4, 8, 16))] = 1
    elif style == "random":
        bits[:] = [rng.getrandbits(1) for _ in range(svl_bytes)]
    elif style == "first":
        bits[:rng.randrange(1, svl_bytes + 1)] = 1
    elif style == "last":
        bits[rng.randrange(svl_bytes):] = 1
    return np.packbits(bits, bitorder="little")


def _random_vector(rng: random.Random, svl_bytes: int) -> np.ndarray:
    vector = np.frombuffer(rng.randbytes(svl_bytes), np.uint8).copy()
    esize = rng.choice((2, 4, 8))
    specials = _FP_SPECIALS[esize]
    lanes = vector.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[esize])
    for lane in range(lanes.size):
        roll = rng.random()
        if roll < 0.3:
            lanes[lane] = rng.choice(specials)
        elif roll < 0.6:
            # Small values: products and sums that stay exact or tie.
            lanes[lane] = {2: 0x3C00, 4: 0x3F800000, 8: 0x3FF0000000000000}[esize] \
                + rng.randrange(-64, 64)
    return vector


def _random_fpcr(rng: random.Random) -> int:
    rounding = rng.randrange(4)
    return rounding << 22 | rng.getrandbits(1) << 24 | rng.getrandbits(1) << 19 \
        | rng.getrandbits(1) << 25


def _initial_state(rng: random.Random, svl: int) -> ArchState:
    svl_bytes = svl // 8
    state = ArchState(svl=svl)
    state.svcr = rng.choice((0, 1, 2, 3, 3, 3))
    state.za = np.frombuffer(rng.randbytes(svl_bytes * svl_bytes), np.uint8).reshape(
        svl_bytes, svl_bytes).copy() if state.za_enabled else state.za
    if state.sm:
        state.z = np.stack([_random_vector(rng, svl_bytes) for _ in range(32)])
        state.p = np.stack([_random_predicate(rng, svl_bytes) for _ in range(16)])
    state.fpcr = _random_fpcr(rng)
    x = [0] * 31
    for register in range(8):
        x[register] = DATA_BASE + rng.randrange(0, DATA_SIZE // 4, 16)
    for register in range(8, 12):
        x[register] = rng.randrange(0, 64)
    for register in range(12, 16):
        x[register] = rng.choice((rng.randrange(0, 64), rng.randrange(0, 1 << 20),
                                  (1 << 32) - rng.randrange(1, 64),
                                  rng.getrandbits(64)))
    for register in range(16, 20):
        x[register] = register - 16
    for register in range(20, 31):
        x[register] = rng.choice((rng.randrange(-40, 40) & (2**64 - 1), rng.getrandbits(64)))
    state.x = np.array(x, np.uint64)
    state.sp = DATA_BASE + DATA_SIZE // 2
    data = np.frombuffer(rng.randbytes(DATA_SIZE), np.uint8).copy()
    state.memory = Memory({DATA_BASE: data})
    return state


def _field_value(form: Form, name: str, width: int, rng: random.Random) -> int:
    """A random value for a field, following the register conventions."""
    if name == "rn":
        if form.requires is Requires.STREAMING and form.op in ("while", "while_cond",
                                                                "dup_scalar"):
            return rng.randrange(20, 32)
        if form.op == "prefetch":
            return rng.randrange(32)       # a prefetch of any address, mapped or not, is a no-op
        return rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 31))
    if name == "rm":
        if form.op in ("while", "while_cond"):
            return rng.randrange(20, 32)
        return rng.choice((8, 9, 10, 11, 8, 9, 10, 11, 31))
    if name == "rt":
        return rng.randrange(16, 20) if form.op == "msr_svcr" else rng.randrange(20, 31)
    if name in ("rd", "rdn"):
        return rng.choice((*range(20, 31), 31))
    if name == "imm9h" and form.op == "str_register":
        # At most +95 vector lengths from a base in the region's first half: a STR Z never
        # straddles the region's end (docs/divergences.md, "qemu-faulting-store-partial-write").
        return rng.choice((rng.randrange(0, 12), rng.randrange(32, 64)))
    if name == "imm4" and form.op in ("ld_structure", "st_structure"):
        # The offset steps 2-4 vectors per unit: most negative ones would leave the region.
        return rng.randrange(-1, 8)
    return rng.getrandbits(width)


def _instruction(form: Form, rng: random.Random) -> tuple[int, str]:
    while True:
        word = form.value
        for field in form.fields:
            word |= (_field_value(form, field.name, field.width, rng)
                     & ((1 << field.width) - 1)) << field.lo
        if form.op == "addsvl" and (word & 0x1F) == 31 and rng.random() < 0.9:
            continue                       # keep SP a valid pointer most of the time
        if decode(word) is not None:
            return word, disassemble(word).replace("\t", " ", 1)


#: The forms MOVPRFX may prefix, with their destination field.
_PREFIXABLE: tuple[tuple[Form, str], ...] = tuple(
    (form, prefixed_destination(form)) for form in FORMS if prefixed_destination(form))


def movprfx_pair(form: Form, rng: random.Random) -> tuple[str, str]:
    """A random MOVPRFX of ``form`` and a random instruction it may prefix (docs/isa.md,
    "MOVPRFX"): same destination, not read by another operand; after a predicated MOVPRFX,
    predicated by the same register at the same element size.

    Raises
    ------
    ValueError
        If ``form`` is not a MOVPRFX form.
    """
    if form.op not in MOVPRFX_OPS:
        raise ValueError(f"{form.name} is not a MOVPRFX form")
    word, text = _instruction(form, rng)
    prefix = decode(word).fields
    candidates = [(target, destination) for target, destination in _PREFIXABLE
                  if "pg" not in prefix or ("pg" in target.field_map
                                            and target.params["esize"] == form.params["esize"])]
    while True:
        target, destination = rng.choice(candidates)
        values = target.fields_of(_instruction(target, rng)[0])
        values[destination] = prefix["zd"]
        if "pg" in prefix:
            values["pg"] = prefix["pg"]
        sources = [values[name] for name in ("zn", "zm", "za") if name in values]
        prefixed = target.encode(**values)
        if prefix["zd"] not in sources and decode(prefixed) is not None:
            return text, disassemble(prefixed).replace("\t", " ", 1)


def generate_program(rng: random.Random, svl: int, length: int, *,
                     streaming_sve_only_when_sm: bool = True,
                     weights: dict[str, float] | None = None) -> GeneratedProgram:
    """A random program of ``length`` instructions with its initial state.

    Parameters
    ----------
    rng : random.Random
        Source of randomness (the program is a function of its state).
    svl : int
        Streaming vector length in bits.
    length : int
        Number of instructions.
    streaming_sve_only_when_sm : bool
        Issue streaming-SVE instructions only while PSTATE.SM=1 (tracked through the program).
        QEMU implements non-streaming SVE and the engine does not (``sim.divergences``), so
        campaigns against QEMU keep this on.
    weights : dict, optional
        Override of :data:`OP_WEIGHTS`.

    Raises
    ------
    ValueError
        If ``length`` is negative, no operation has a positive weight, or only MOVPRFX does and
        ``length`` is odd (its pairs cannot fill the program).
    """
    if length < 0:
        raise ValueError(f"program length must be non-negative, not {length}")
    weights = {**OP_WEIGHTS, **(weights or {})}
    initial = _initial_state(rng, svl)
    by_op: dict[str, list[Form]] = {}
    for form in FORMS:
        by_op.setdefault(form.op, []).append(form)
    ops = [op for op in by_op if weights.get(op, 0) > 0]
    if not ops:
        raise ValueError("no operation has a positive weight")
    if length % 2 and all(op in MOVPRFX_OPS for op in ops):
        raise ValueError(f"a program of only MOVPRFX pairs cannot have an odd length ({length})")
    while streaming_sve_only_when_sm and not initial.sm and all(
            form.requires is Requires.STREAMING for op in ops for form in by_op[op]):
        initial = _initial_state(rng, svl)      # nothing could start streaming mode later
    op_weights = [weights[op] for op in ops]
    streaming = initial.sm
    lines = []
    while len(lines) < length:
        op = rng.choices(ops, op_weights)[0]
        form = rng.choice(by_op[op])
        if op == "msr_svcr_imm" and rng.random() < 0.7:
            # Mostly enable: a program that stops SM and ZA early only traps from there on.
            form = rng.choice([f for f in by_op[op] if f.params["start"]])
        if streaming_sve_only_when_sm and not streaming and form.requires is Requires.STREAMING:
            continue
        if form.op in MOVPRFX_OPS:
            if len(lines) + 2 <= length:
                lines.extend(movprfx_pair(form, rng))
            continue
        word, text = _instruction(form, rng)
        if form.op == "msr_svcr_imm" and form.params["set_sm"]:
            streaming = form.params["start"]
        elif form.op == "msr_svcr":
            streaming = bool((decode(word)["rt"] - 16) & 1)
        lines.append(text)
    return GeneratedProgram("\n".join(lines) + "\n", initial)

