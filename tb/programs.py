"""Directed and random stimulus for the engine: programs with the state they start from.

A :class:`Program` is a list of instruction words, an initial :class:`~sim.state.ArchState` and
how to run it (SME enabled or not, lock-step or streaming issue, forced bus errors, pause style).
Initial states follow the register conventions of :mod:`sim.progen` (x0-x7 data pointers, x8-x11
small indexes, w12-w15 slice selectors, x16-x19 = 0..3 for ``msr svcr``, results in x20-x30), so
random instances of any form mostly touch mapped memory.

Every ``DIRECTED`` group is a function ``(config, svl, rng) -> list[Program]``; ``random_programs``
draws from :func:`sim.progen.generate_program`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

from zatile.sim.progen import DATA_BASE, DATA_SIZE, generate_program
from zatile.sim.state import ArchState
from zatile.sw.arch.asm import assemble_line
from zatile.sw.arch.config import EngineConfig
from zatile.sw.arch.isa import FORMS_BY_NAME, Form, decode
from zatile.tb.implemented import RTL_FORMS, rtl_weights
from zatile.tb.coverage import MEMORY_OPS, PREDICATE_CLASSES, SLICE_OPS, STORE_OPS, predicate_granule

__all__ = ["Program", "initial_state", "instance", "predicate_pattern", "DIRECTED",
           "random_programs", "SVCR_WRITERS"]

SVCR_WRITERS = ("msr_svcr_imm", "msr_svcr")
#: Where predicate pattern tables live (their own region, so stores cannot clobber them).
PATTERN_BASE = 0x0010_0000


@dataclass
class Program:
    """One stimulus program and how to run it."""

    name: str
    words: list[int]
    initial: ArchState
    sme_enabled: bool = True
    lockstep: bool = True
    check_every: bool = True
    forced_error_rate: float = 0.0
    pauses: str = "light"


# --------------------------------------------------------------------------- states
def _random_predicate(rng: random.Random, svl_bytes: int) -> np.ndarray:
    return np.frombuffer(rng.randbytes(svl_bytes // 8), np.uint8).copy()


def initial_state(rng: random.Random, svl: int, svcr: int = 3) -> ArchState:
    """A random state with SVCR ``svcr``: progen's registers and memory, random Z/P/ZA.

    Z and P are random only with SM=1 and ZA only with ZA=1 (see :mod:`tb.engine` on loading).
    """
    state = generate_program(rng, svl, 0).initial
    svl_bytes = state.svl_bytes
    state.svcr = svcr
    state.x[16:20] = (0, 1, 2, 3)
    if svcr & 1:
        state.z = np.frombuffer(rng.randbytes(32 * svl_bytes), np.uint8) \
            .reshape(32, svl_bytes).copy()
        state.p = np.stack([_random_predicate(rng, svl_bytes) for _ in range(16)])
    else:
        state.z[...] = 0
        state.p[...] = 0
    state.ffr[...] = 0
    state.za = np.frombuffer(rng.randbytes(svl_bytes * svl_bytes), np.uint8).reshape(
        svl_bytes, svl_bytes).copy() if svcr & 2 else np.zeros_like(state.za)
    return state


def predicate_pattern(cls: str, granule: int, svl_bytes: int, rng: random.Random) -> np.ndarray:
    """A P register whose elements of ``granule`` bytes form pattern class ``cls``.

    Bits between elements (which no instruction of that granule reads) are random.
    """
    elements = svl_bytes // granule
    active = np.zeros(elements, np.uint8)
    if cls == "all_true":
        active[:] = 1
    elif cls == "first_only":
        active[0] = 1
    elif cls == "last_only":
        active[-1] = 1
    elif cls == "sparse":
        active[1::2] = 1
        if elements > 3 and rng.random() < 0.5:
            active[:] = 0
            active[rng.randrange(elements):: rng.choice((2, 3))] = 1
            active[0] = 1
    elif cls != "all_false":
        raise ValueError(f"unknown predicate class {cls!r}")
    bits = np.frombuffer(rng.randbytes(svl_bytes), np.uint8) & 1
    bits = bits.copy()
    bits[::granule] = active
    return np.packbits(bits, bitorder="little")


# --------------------------------------------------------------------------- instances
def _field_value(form: Form, name: str, width: int, rng: random.Random,
                 bases: tuple[int, ...]) -> int:
    if name == "rn":
        if form.op in ("while", "dup_scalar"):
            return rng.randrange(20, 32)
        return rng.choice(bases)
    if name == "rm":
        return rng.randrange(20, 32) if form.op == "while" else rng.choice((8, 9, 10, 11, 31))
    if name == "rt":
        return rng.randrange(16, 20) if form.op == "msr_svcr" else rng.randrange(20, 31)
    if name == "rd":
        return rng.randrange(20, 31) if rng.random() < 0.95 else 31
    return rng.getrandbits(width)


def instance(form: Form, rng: random.Random, bases: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 31),
             **fixed: int) -> int:
    """A random valid encoding of ``form`` following the register conventions.

    ``fixed`` pins field values; ``bases`` are the registers ``rn`` may name.

    Raises
    ------
    ValueError
        If no valid encoding exists with the pinned fields.
    """
    for _ in range(200):
        values = {f.name: _field_value(form, f.name, f.width, rng, bases) for f in form.fields}
        values.update(fixed)
        word = form.value
        for field in form.fields:
            word |= (values[field.name] & ((1 << field.width) - 1)) << field.lo
        decoded = decode(word)
        if decoded is not None and decoded.form is form:
            return word
    raise ValueError(f"no valid encoding of {form.name} with {fixed}")


def _chunks(words: list[int], size: int) -> list[list[int]]:
    return [words[i:i + size] for i in range(0, len(words), size)] or [[]]


def _programs(prefix: str, words: list[int], state_factory: Callable[[], ArchState],
              size: int = 120, **options) -> list[Program]:
    return [Program(f"{prefix}.{index}", chunk, state_factory(), **options)
            for index, chunk in enumerate(_chunks(words, size))]


# --------------------------------------------------------------------------- directed groups
def every_form(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Three random instances of every form that does not write SVCR, at SVCR=3."""
    words = [instance(form, rng) for form in RTL_FORMS if form.op not in SVCR_WRITERS
             for _ in range(3)]
    rng.shuffle(words)
    return _programs("forms", words, lambda: initial_state(rng, svl, 3))


def predicate_classes(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Every predicated form under each predicate class (P0-P4 = the five classes, reloaded with
    ``LDR P`` from a pattern table for each form's element granule), for each of its predicate
    operands at once."""
    svl_bytes = svl // 8
    granules = (1, 2, 4, 8, 16)
    table = np.concatenate([predicate_pattern(cls, granule, svl_bytes, rng)
                            for granule in granules for cls in PREDICATE_CLASSES])
    ldr_p = FORMS_BY_NAME["LDR_P"]
    words = []
    for form in RTL_FORMS:
        names = {f.name for f in form.fields}
        if not names & {"pg", "pn"} or not config.has(form.feature):
            continue
        first = granules.index(predicate_granule(form)) * len(PREDICATE_CLASSES)
        for k in range(len(PREDICATE_CLASSES)):
            offset = first + k
            words.append(ldr_p.encode(pt=k, rn=7, imm9h=offset >> 3, imm9l=offset & 7))
        for k in range(len(PREDICATE_CLASSES)):
            # every predicate operand the coverage samples takes class k; a predicate result
            # goes above P4, so the classes survive for the form's next instances
            pins = {name: k for name in ("pg", "pn", "pm") if name in names}
            if "pd" in names:
                pins["pd"] = rng.randrange(len(PREDICATE_CLASSES), 16)
            words.append(instance(form, rng, bases=(0, 1, 2, 3, 4, 5, 6), **pins))

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.memory.map(PATTERN_BASE, table)
        initial.x[7] = PATTERN_BASE
        return initial

    return _programs("predicates", words, state, size=150, check_every=False)


def slice_wrap(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Every slice-selecting form with Ws in range, wrapped, 0xFFFFFFFF and 2^31+3 (with
    garbage in the upper half of the X register, which must be ignored)."""
    words = []
    for form in RTL_FORMS:
        if form.op not in SLICE_OPS:
            continue
        selector = "rv" if form.op in ("ldr_za", "str_za") else "rs"
        words += [instance(form, rng, **{selector: k}) for k in range(4)]

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.x[12:16] = (1, 1000 + rng.randrange(24), 0xFFFF_FFFF, 0xDEAD_BEEF_8000_0003)
        return initial

    return _programs("slices", words, state, size=90)


def overlapping_tiles(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Random mixes of slice loads/stores, MOVA, ZERO, LDR/STR ZA and accumulations on tiles of
    every element size, which alias one another in ZA."""
    ops = ("ld1_tile", "st1_tile", "mova_to_tile", "mova_to_vector", "zero_za", "ldr_za",
           "str_za", "add_vector_to_tile", "int_mopa")
    pool = [form for form in RTL_FORMS if form.op in ops and config.has(form.feature)]
    programs = []
    for index in range(2):
        words = [instance(rng.choice(pool), rng) for _ in range(100)]
        programs.append(Program(f"overlap.{index}", words, initial_state(rng, svl, 3)))
    return programs


def zero_masks(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """All 256 ZERO masks; ZA is refilled between them (ADDHA on every .S tile, or LDR ZA)."""
    svl_bytes = svl // 8
    if config.has("I8I32"):
        refill = [assemble_line(f"addha za{k}.s, p0/m, p0/m, z1.s") for k in range(4)]
    else:
        refill = [assemble_line(f"ldr za[w12, {row}], [x0, #{row}, mul vl]")
                  for row in range(min(svl_bytes, 16))]
    words = []
    for mask in range(256):
        words.append(FORMS_BY_NAME["ZERO"].encode(mask=mask))
        words += refill

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.p[0] = 0xFF
        initial.z[1] = np.frombuffer(rng.randbytes(svl_bytes), np.uint8) | 1
        initial.x[12] = 0
        return initial

    return _programs("zero", words, state, size=len(refill) * 64 + 64)


def svcr_transitions(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """A walk over SVCR states using every SMSTART/SMSTOP/MSR SVCR from every state, with
    instructions after each step that make Z, P and ZA non-zero, so that the zeroing an SM or
    ZA change must (or must not) do is visible."""
    transitions = {name: FORMS_BY_NAME[name].value for name in
                   ("SMSTART", "SMSTART_SM", "SMSTART_ZA", "SMSTOP", "SMSTOP_SM", "SMSTOP_ZA")}
    for value in range(4):
        transitions[f"MSR_SVCR_{value}"] = FORMS_BY_NAME["MSR_SVCR"].encode(rt=16 + value)

    def after(svcr: int, name: str) -> int:
        if name.startswith("MSR_SVCR_"):
            return int(name[-1])
        params = FORMS_BY_NAME[name].params
        bit = (1 if params["set_sm"] else 0) | (2 if params["set_za"] else 0)
        return svcr | bit if params["start"] else svcr & ~bit

    observe = [assemble_line("mrs x20, svcr")]
    fill_sve = [assemble_line("mov z5.b, #7"), assemble_line("ptrue p2.h, vl3")]
    fill_za = [assemble_line("ldr za[w12, 1], [x0, #1, mul vl]")]
    unused = {(svcr, name) for svcr in range(4) for name in transitions}
    svcr, words = 0, []
    while unused:
        choices = [name for name in transitions if (svcr, name) in unused]
        name = rng.choice(choices) if choices else rng.choice(list(transitions))
        unused.discard((svcr, name))
        words.append(transitions[name])
        svcr = after(svcr, name)
        words += observe + (fill_sve if svcr & 1 else []) + (fill_za if svcr & 2 else [])

    def state() -> ArchState:
        initial = initial_state(rng, svl, 0)
        initial.x[12] = 0
        return initial

    return [Program("svcr.0", words, state())]


def traps_per_svcr(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """One instance of every form that does not write SVCR, in each of the four SVCR states."""
    programs = []
    for svcr in range(4):
        words = [instance(form, rng) for form in RTL_FORMS if form.op not in SVCR_WRITERS]
        rng.shuffle(words)
        programs += _programs(f"svcr{svcr}", words, lambda: initial_state(rng, svl, svcr),
                              size=170, check_every=False)
    return programs


def sme_disabled(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """sme_enable=0: every form of the table (SVCR writers too) traps with SMTC 0 and changes
    nothing; words outside the table stay UNDEF."""
    programs = []
    for svcr in (0, 3):
        words = [instance(form, rng) for form in RTL_FORMS] + [0x00000000, 0xFFFFFFFF]
        rng.shuffle(words)
        programs.append(Program(f"disabled{svcr}", words, initial_state(rng, svl, svcr),
                                sme_enabled=False, check_every=False))
    return programs


def unallocated(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Reserved MSR SVCRxx encodings, scalar+scalar loads/stores with Rm=XZR, words next to
    every form that decode to nothing, random words, and forms of absent features."""
    words = [0xD503407F | crm << 8 for crm in (0, 1, 8, 9, 10, 11, 12, 13, 14, 15)]
    for form in RTL_FORMS:
        if form.params.get("scalar_offset") is True:
            values = {f.name: rng.getrandbits(f.width) for f in form.fields}
            values["rm"] = 31
            words.append(form.encode(**values))
        for _ in range(2):
            for _ in range(50):
                word = (form.value | rng.getrandbits(32) & ~form.mask) \
                    ^ (1 << rng.choice([b for b in range(32) if form.mask >> b & 1]))
                if decode(word) is None:
                    words.append(word)
                    break
        if not config.has(form.feature):
            words.append(instance(form, rng))
    words += [word for word in (rng.getrandbits(32) for _ in range(60)) if decode(word) is None]
    rng.shuffle(words)
    return _programs("unallocated", words, lambda: initial_state(rng, svl, 3), size=200,
                     check_every=False)


def memory_errors(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Every memory form on unmapped, region-crossing, wrapping and edge addresses, with
    all-true, all-false and sparse predicates; stores that fault after writing their first
    beats; and random memory traffic under forced bus errors."""
    beat = config.mem_data_width // 8
    svl_bytes = svl // 8
    end = DATA_BASE + DATA_SIZE
    bases = {0: 0x1000,                       # unmapped
             1: end - beat // 2,              # first beat mapped, then the end of memory
             2: (1 << 64) - 8,                # wraps to address 0
             3: end - 4,                      # a few bytes before the end
             4: DATA_BASE,                    # fine
             5: end - svl_bytes,              # ends exactly at the end
             6: DATA_BASE - 8}                # starts just before the region
    forms = [form for form in RTL_FORMS if form.op in MEMORY_OPS]
    loads = [form for form in forms if form.op not in STORE_OPS]
    stores = [form for form in forms if form.op in STORE_OPS]

    def words_for(pool: list[Form]) -> list[int]:
        words = []
        for form in pool:
            names = {f.name for f in form.fields}
            for base in bases:
                pins = {"rn": base}
                if "rm" in names:
                    pins["rm"] = 31 if not form.params.get("scalar_offset") else 8
                if "imm4" in names:
                    pins["imm4"] = 0
                if "off" in names and form.op in ("ldr_za", "str_za"):
                    pins["off"] = 0
                if {"imm9h", "imm9l"} <= names:
                    pins.update(imm9h=0, imm9l=0)
                if "pg" in names:
                    pins["pg"] = rng.choice((0, 0, 1, 2))
                words.append(instance(form, rng, **pins))
        return words

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.x[0:7] = [bases[n] for n in range(7)]
        initial.x[8] = 0
        initial.p[0] = 0xFF
        initial.p[1] = 0
        initial.p[2] = predicate_pattern("sparse", 1, svl_bytes, rng)
        return initial

    programs = _programs("memory-loads", words_for(loads), state, size=150, check_every=False)
    programs += _programs("memory-stores", words_for(stores), state, size=150,
                          check_every=False)
    traffic = [instance(rng.choice(forms), rng) for _ in range(120)]
    programs.append(Program("memory-forced", traffic, initial_state(rng, svl, 3),
                            forced_error_rate=0.15, check_every=False, pauses="heavy"))
    return programs


def structures(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """LD2-4/ST2-4 with both addressings, their registers wrapping from Z31 to Z0 (Zt = 31 for
    two registers, 30 for three and four), under all-true, first-only and sparse predicates:
    in mapped memory, and with the end of memory in their second or third chunk (a load writes
    no register, a store has written its first chunks)."""
    svl_bytes = svl // 8
    end = DATA_BASE + DATA_SIZE
    bases = {0: DATA_BASE + 8,                     # fine
             1: end - svl_bytes - 4,               # the second chunk faults
             2: end - 2 * svl_bytes - 4}           # the third chunk faults (LD2/ST2 fit)
    words = []
    for form in RTL_FORMS:
        if form.op not in ("ld_structure", "st_structure"):
            continue
        zt = 31 if form.params["registers"] == 2 else 30
        for base in bases:
            for pg in range(3):
                pins = {"rn": base, "zt": zt, "pg": pg}
                if form.params["scalar_offset"]:
                    pins["rm"] = rng.choice((8, 9))
                else:
                    pins["imm4"] = 0
                words.append(instance(form, rng, **pins))
    rng.shuffle(words)

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.x[0:3] = [bases[n] for n in range(3)]
        initial.x[8:10] = (0, 1)
        initial.p[0] = 0xFF
        initial.p[1] = predicate_pattern("first_only", 1, svl_bytes, rng)
        initial.p[2] = predicate_pattern("sparse", 1, svl_bytes, rng)
        return initial

    return _programs("structures", words, state, size=100)


#: What :func:`decoupled` mixes (``{z}``, ``{a}``, ``{b}``: Z0-Z7; ``{p}``, ``{q}``: P0-P3;
#: ``{t}``: a .S tile; ``{x}``: X0/X1 in memory, X2 not). Loads and stores of Z and P, outer
#: products, tile-slice stores, vector arithmetic and a predicate writer, over few registers so
#: that they depend on one another.
_DECOUPLED_PATTERNS = (
    "ld1w {{z{z}.s}}, p{p}/z, [x{x}, x8, lsl #2]", "ld1b {{z{z}.b}}, p{p}/z, [x{x}, #1, mul vl]",
    "ldr z{z}, [x{x}, #2, mul vl]", "ldr p{p}, [x{x}]", "ld1rw {{z{z}.s}}, p{p}/z, [x{x}, #4]",
    "fmopa za{t}.s, p{p}/m, p{q}/m, z{a}.s, z{b}.s", "smopa za{t}.s, p{p}/m, p{q}/m, z{a}.b, z{b}.b",
    "fmopa za{t}.s, p{p}/m, p{q}/m, z{a}.s, z{b}.s", "st1w {{za{t}h.s[w12, 0]}}, p{p}, [x{x}]",
    "str za[w12, 1], [x{x}, #1, mul vl]", "st1w {{z{z}.s}}, p{p}, [x{x}, x8, lsl #2]",
    "add z{z}.s, z{a}.s, z{b}.s", "whilelo p{p}.s, x8, x9", "str p{p}, [x{x}, #3, mul vl]",
)


def decoupled(config: EngineConfig, svl: int, rng: random.Random) -> list[Program]:
    """Streams for the load queue: GEMM k steps (four loads, four outer products, registers
    alternating between steps), the same without alternating (each load overwrites what the
    previous step's outer products read), and random mixes of loads, stores, outer products and
    register writers over Z0-Z7 and P0-P3, with an occasional load from unmapped memory among
    outer products; runs of back-to-back stores (posted, several in flight), some faulting;
    every pause style; and every kind of load right behind an SVCR writer, in its issue
    transfer."""
    svl_bytes = svl // 8
    floats = config.has("F32F32")
    mopa = "fmopa za{t}.s, p0/m, p0/m, z{a}.s, z{b}.s" if floats else \
        "smopa za{t}.s, p0/m, p0/m, z{a}.b, z{b}.b"

    def gemm(steps: int, alternate: bool) -> list[int]:
        words = []
        for step in range(steps):
            first = 4 * (step % 2) if alternate else 0
            words += [assemble_line(f"ld1w {{z{first + n}.s}}, p0/z, [x{n % 2}, x8, lsl #2]")
                      for n in range(4)]
            words += [assemble_line(mopa.format(t=2 * a + b, a=first + a, b=first + 2 + b))
                      for a in range(2) for b in range(2)]
        return words

    def mix(count: int) -> list[int]:
        patterns = [p for p in _DECOUPLED_PATTERNS if floats or not p.startswith("fmopa")]
        return [assemble_line(rng.choice(patterns).format(
            z=rng.randrange(8), a=rng.randrange(8), b=rng.randrange(8), p=rng.randrange(4),
            q=rng.randrange(4), t=rng.randrange(4),
            x=2 if rng.random() < 0.04 else rng.randrange(2))) for _ in range(count)]

    def state() -> ArchState:
        initial = initial_state(rng, svl, 3)
        initial.x[0:3] = (DATA_BASE, DATA_BASE + 4 * svl_bytes, 0x1000)
        initial.x[8:10] = (1, 1 << 40)
        initial.x[12] = 0
        initial.p[0] = 0xFF
        return initial

    programs = [Program("decoupled.gemm", gemm(12, True), state(), lockstep=False,
                        check_every=False, pauses="none"),
                Program("decoupled.gemm-reuse", gemm(12, False), state(), lockstep=False,
                        check_every=False, pauses="light")]
    for index, style in enumerate(("none", "light", "heavy", "bursty")):
        programs.append(Program(f"decoupled.mix.{index}", mix(150), state(), lockstep=False,
                                check_every=False, pauses=style))
    # Posted stores: runs of back-to-back stores of every one-access kind (several in flight),
    # some to unmapped memory, between outer products and loads that wait for them.
    stores = [pattern for pattern in _DECOUPLED_PATTERNS if pattern.startswith(("st", "str"))]
    others = [pattern for pattern in _DECOUPLED_PATTERNS if not pattern.startswith(("st", "str"))
              and (floats or not pattern.startswith("fmopa"))]

    def posted_stores(runs: int) -> list[int]:
        words = []
        for _ in range(runs):
            chosen = [rng.choice(stores) for _ in range(rng.randint(2, 6))] + [rng.choice(others)]
            words += [assemble_line(pattern.format(
                z=rng.randrange(8), a=rng.randrange(8), b=rng.randrange(8), p=rng.randrange(4),
                q=rng.randrange(4), t=rng.randrange(4),
                x=2 if rng.random() < 0.15 else rng.randrange(2))) for pattern in chosen]
        return words

    for index, style in enumerate(("none", "light", "heavy", "bursty")):
        programs.append(Program(f"decoupled.posted-stores.{index}", posted_stores(30), state(),
                                lockstep=False, check_every=False, pauses=style))
    # Every kind of decoupled load right behind an SVCR writer, so that the two share an issue
    # transfer (pauses "none" pairs them) and the load goes to the execution queue; each round
    # loads other registers, and the program ends in streaming mode with ZA on, so that every
    # load's value is compared at the end.
    behind = []
    for step, writer in enumerate(("smstart za", "smstop za", "msr svcr, x12", "smstart",
                                   "smstart za")):
        loads = (f"ld1w {{z{8 + step}.s}}, p0/z, [x0, x8, lsl #2]",
                 f"ldr z{13 + step}, [x1, #1, mul vl]", f"ldr p{4 + step}, [x2]",
                 f"ld1rw {{z{18 + step}.s}}, p0/z, [x0, #8]",
                 mopa.format(t=1, a=8 + step, b=13 + step))
        for load in loads:
            behind += [assemble_line(writer), assemble_line(load)]
    programs.append(Program("decoupled.behind-svcr", behind, state(), lockstep=False,
                            check_every=False, pauses="none"))
    return programs


#: Directed groups by name (cocotb test ``directed_<name>`` runs one group).
DIRECTED: dict[str, Callable[[EngineConfig, int, random.Random], list[Program]]] = {
    "forms": every_form,
    "predicates": predicate_classes,
    "slices": slice_wrap,
    "overlap": overlapping_tiles,
    "zero_masks": zero_masks,
    "svcr": svcr_transitions,
    "traps": traps_per_svcr,
    "sme_disabled": sme_disabled,
    "unallocated": unallocated,
    "memory_errors": memory_errors,
    "structures": structures,
    "decoupled": decoupled,
}


def random_programs(config: EngineConfig, svl: int, rng: random.Random, count: int,
                    length: int) -> list[Program]:
    """``count`` programs from :func:`sim.progen.generate_program`, alternating lock-step and
    streaming issue and every pause style. Forms of features the configuration lacks get a small
    weight (they only UNDEF)."""
    weights = rtl_weights({form.op: 0.3 for form in RTL_FORMS if not config.has(form.feature)})
    styles = ("none", "light", "heavy", "bursty")
    programs = []
    for index in range(count):
        generated = generate_program(rng, svl, length, weights=weights)
        initial = generated.initial
        if not initial.sm:                    # Z/P at SM=0 are not loadable (tb.engine)
            initial.z[...] = 0
            initial.p[...] = 0
        words = [assemble_line(line) for line in generated.text.splitlines() if line.strip()]
        programs.append(Program(f"random.{index}", words, initial, lockstep=index % 2 == 0,
                                check_every=False, pauses=styles[index % len(styles)]))
    return programs

