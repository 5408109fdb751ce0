"""Instruction decoder of the ZA tile engine, generated from the one instruction table.

Nothing here names an opcode. There is one match line per :data:`sw.isa.FORMS` entry,
``word & mask == value``; the forms are disjoint, so at most one matches. Its index
(:class:`FormMatcher`) reads a row of a table generated from the forms: the form's attributes
(operation, PSTATE class, element sizes, flags taken from ``Form.params``, which issue slot
carries each general-register operand, which values of the word exclude it) and, per field
name, which of its places in the word the form uses; the fields are extracted from there into a
normalised record (a word that matches no form reads the last row). A word that matches no
form, that matches a form the architecture excludes (scalar+scalar contiguous loads/stores with
``Rm = XZR``, reserved logical immediates), or whose feature is absent from the configuration
decodes with ``undef`` set.

A table rather than an OR tree of match lines per output bit, which made 5.9 MB of Verilog per
decoder: the table makes 0.9 MB, and the C++ Verilator makes of it compiles in half the time.

The index is not encoded from the match lines (11 OR trees of about 800 lines each): the bits
every form's mask covers (the top byte) select a group of forms, and each index bit is, per
group, whether the word is in (or outside) a few cubes, widened to be exact only on the group's
forms; whether the word matches a form at all is one more OR of the group's forms merged into
fewer cubes. The decoder uses no match line, so they cost nothing. For the SVL 128 FPGA
configuration the decoder maps to 3,737 LUT4, from 6,300 with the index encoded from the lines
(and the matcher a module synthesis kept whole, with the lines as outputs). The cubes make the
decoder's Verilog 1.7 MB (0.99 MB before) and its elaboration about twice as long.

The table is a submodule that synthesis maps alone (its name is in :data:`KEPT_PARTS`,
``hw/synthesis.py``): mapped together with the matcher, Yosys's LUT mapping tried to make each
table output one function of the 32 bits of the word, and had not finished a decoder after
85 minutes.
"""

from __future__ import annotations

import functools
import operator
from types import MappingProxyType

from amaranth import Cat, Const, Module, Mux, Shape, Signal, Value, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from zatile.sw.arch import isa
from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, check_config, derived_enum

__all__ = [
    "Op",
    "ops_of",
    "check_known_params",
    "Access",
    "FieldsLayout",
    "FlagsLayout",
    "ChoicesLayout",
    "PresentLayout",
    "CHOICES",
    "SlotsLayout",
    "DecodedLayout",
    "NO_SLOT",
    "source_slots",
    "KEPT_PARTS",
    "FormMatcher",
    "Decoder",
]


#: Semantic operation of an instruction: one member per ``sw.isa.OPS`` entry, upper-cased.
Op = derived_enum("Op", [op.upper() for op in isa.OPS],
                   Shape.cast(range(len(isa.OPS))).width)

#: PSTATE class an instruction needs (``sw.isa.Requires``), in the order the checks run.
Access = derived_enum("Access", [r.name for r in isa.Requires],
                       Shape.cast(range(len(isa.Requires))).width)

def ops_of(*traits: isa.Trait) -> tuple:
    """The :data:`Op` members of every operation with any of ``traits`` (:func:`isa.ops_with`)."""
    return tuple(Op[op.upper()] for op in isa.ops_with(*traits))


#: Slot value meaning "this register is not a source of the form".
NO_SLOT = 3


def _field_shapes() -> dict[str, Shape]:
    """One normalised shape per field name used anywhere in the table.

    The widest use wins; a name that is signed in one form and unsigned in another (``imm4``)
    gets one extra bit so both extensions are exact.
    """
    uses: dict[str, list[isa.Field]] = {}
    for form in isa.FORMS:
        for field in form.fields:
            uses.setdefault(field.name, []).append(field)
    shapes = {}
    for name, fields in uses.items():
        width = max(f.width for f in fields)
        signs = {f.signed for f in fields}
        if signs == {True}:
            shapes[name] = signed(width)
        elif signs == {False}:
            shapes[name] = unsigned(width)
        else:
            shapes[name] = signed(width + 1)
    return shapes


def _param_types(forms) -> dict[str, set]:
    values: dict[str, set] = {}
    for form in forms:
        for key, value in form.params.items():
            values.setdefault(key, set()).add(type(value))
    return values


def _flag_params() -> list[str]:
    """Boolean ``Form.params`` keys: each becomes a one-bit flag."""
    return sorted(key for key, types in _param_types(isa.FORMS).items() if types == {bool})


def _choice_params() -> dict[str, type]:
    """String-valued ``Form.params`` keys (a compare's ``cond``, a predicate operation's
    ``logic``, a count's ``saturate``): each becomes an enum output of its values, upper-cased,
    after ``NONE`` (0, the value for a form without the parameter or with it None)."""
    values: dict[str, set] = {}
    for form in isa.FORMS:
        for key, value in form.params.items():
            values.setdefault(key, set()).add(value)
    choices = {}
    for key, found in sorted(values.items()):
        found.discard(None)           # a form whose parameter is None has it NONE
        if found and all(isinstance(value, str) for value in found):
            members = ["NONE", *sorted(value.upper() for value in found)]
            choices[key] = derived_enum(key.title().replace("_", ""), members,
                                        Shape.cast(range(len(members))).width)
    return choices


#: The non-boolean parameters the decoder turns into fields (``ways`` and a reduction's
#: ``result_size`` the datapath derives from the operation).
_KNOWN_PARAMS = frozenset({"esize", "msize", "registers", "unit", "ways", "width",
                           "result_size"})


def check_known_params(ops) -> None:
    """Check that the decoder turns every parameter of the forms of ``ops`` into an output.

    Booleans become :data:`FlagsLayout` bits and strings :data:`CHOICES` enums; any other
    parameter must be taught to the decoder, never silently dropped; the engine
    calls this for the operations it performs (the others may have any parameters).

    Raises
    ------
    RuntimeError
        Naming the parameters the decoder does not know.
    """
    forms = [form for form in isa.FORMS if Op[form.op.upper()] in ops]
    unknown = sorted(key for key, types in _param_types(forms).items()
                     if types not in ({bool}, {str}, {str, type(None)})
                     and key not in _KNOWN_PARAMS)
    if unknown:
        raise RuntimeError(f"hw.decoder does not know the form parameter(s) {unknown!r}")


def source_slots(form: isa.Form) -> dict[str, int]:
    """Issue slot (``src0``..``src2``) of each general-register source field of ``form``.

    Derived from :func:`sw.isa.scalar_sources`, the order the host fills the slots in.
    """
    decoded = isa.Decoded(form.value, form, MappingProxyType(form.fields_of(form.value)))
    slots = {register.field: slot for slot, register in enumerate(isa.scalar_sources(decoded))}
    if len(slots) > NO_SLOT:
        raise RuntimeError(f"{form.name} reads {len(slots)} general registers; the issue port "
                           "has 3")
    return slots


def _slot_fields() -> list[str]:
    names: dict[str, None] = {}
    for form in isa.FORMS:
        names.update(dict.fromkeys(source_slots(form)))
    return list(names)


_FIELD_SHAPES = _field_shapes()
_FLAGS = _flag_params()
_SLOT_FIELDS = _slot_fields()
#: The enum of each string-valued form parameter (``CHOICES["cond"].EQ``).
CHOICES: dict[str, type] = _choice_params()

#: Every field of every form, by name (absent fields decode as 0).
FieldsLayout = data.StructLayout(_FIELD_SHAPES)
#: Boolean form parameters (``vertical``, ``subtract``, ``set_sm``, ...).
FlagsLayout = data.StructLayout({name: 1 for name in _FLAGS})
#: String-valued form parameters, one :data:`CHOICES` enum each.
ChoicesLayout = data.StructLayout(CHOICES)
#: Which fields the form has (every field of :data:`FieldsLayout`, one bit each).
PresentLayout = data.StructLayout({name: 1 for name in _FIELD_SHAPES})
#: Issue slot of each general-register source field; :data:`NO_SLOT` when it is not a source.
SlotsLayout = data.StructLayout({name: range(NO_SLOT + 1) for name in _SLOT_FIELDS})

#: What the decoder says about one word.
DecodedLayout = data.StructLayout({
    "undef": 1,                           # UNDEF: unallocated, excluded, or feature absent
    "form": range(len(isa.FORMS) + 1),    # index into sw.isa.FORMS; len(FORMS) when unallocated
    "op": Op,
    "access": Access,
    "esize_log2": range(5),               # params["esize"]: element (tile) size, log2 bytes
    "msize_log2": range(4),               # params["msize"]: memory element size, log2 bytes
    "registers": range(5),                # params["registers"]: Z registers of LD2-4/ST2-4, else 1
    "unit_pred": 1,                       # params["unit"] == "svl_pred_bytes" (ADDSPL)
    "width_32": 1,                        # params["width"] == 32: a W-register count or WHILE
    "flags": FlagsLayout,
    "choices": ChoicesLayout,
    "present": PresentLayout,
    "slots": SlotsLayout,
    "fields": FieldsLayout,
})


@functools.cache
def _exclusion_sets() -> list[tuple[tuple[int, int, int], ...]]:
    """Every distinct ``Form.unallocated`` of the forms, as the (lo, hi, value) places of the
    word whose values make a matching word unallocated."""
    sets: dict[tuple, None] = {}
    for form in isa.FORMS:
        if form.unallocated:
            sets[_exclusion_set(form)] = None
    return list(sets)


def _exclusion_set(form: isa.Form) -> tuple[tuple[int, int, int], ...]:
    """``form.unallocated`` as (lo, hi, value) places of the word."""
    return tuple((form.field_map[name].lo, form.field_map[name].hi, value)
                 for name, value in form.unallocated)


#: The submodule name of a decoder's table, which synthesis maps alone.
KEPT_PARTS = ("form_table",)

#: The bits of the word that every form's mask covers: they select a form's group.
_GROUP_MASK = functools.reduce(operator.and_, (form.mask for form in isa.FORMS))

#: A cube of words: those with ``word & mask == value``.
_Cube = tuple[int, int]


@functools.cache
def _form_groups() -> dict[int, list[int]]:
    """The numbers of the forms of each group, by the group's value of :data:`_GROUP_MASK`."""
    groups: dict[int, list[int]] = {}
    for number, form in enumerate(isa.FORMS):
        groups.setdefault(form.value & _GROUP_MASK, []).append(number)
    return groups


def _local_cube(number: int) -> _Cube:
    """Form ``number``'s cube without its group's bits."""
    form = isa.FORMS[number]
    return form.mask & ~_GROUP_MASK, form.value & ~_GROUP_MASK


def _merge_cubes(cubes) -> list[_Cube]:
    """The same words as the union of ``cubes``, in fewer cubes: two cubes of one mask whose
    values differ in one bit merge into one without that bit, until none do."""
    cubes = set(cubes)
    while True:
        values: dict[int, set[int]] = {}
        for mask, value in cubes:
            values.setdefault(mask, set()).add(value)
        merged, replaced = set(), set()
        for mask, found in values.items():
            for value in found:
                for bit in range(32):
                    if mask >> bit & 1 and value ^ 1 << bit in found:
                        merged.add((mask & ~(1 << bit), value & ~(1 << bit)))
                        replaced.update({(mask, value), (mask, value ^ 1 << bit)})
        if not merged:
            return sorted(cubes)
        cubes = (cubes - replaced) | merged


def _widen_cubes(inside: list[_Cube], outside: list[_Cube], bits) -> list[_Cube]:
    """Cubes holding every word of ``inside``, and no word of ``outside``, with as few mask
    bits as a greedy search finds, dropping a cube's mask ``bits`` in that order (words in
    neither are free to fall either way)."""
    def meets(mask: int, value: int) -> bool:
        return any((value ^ other_value) & mask & other_mask == 0
                   for other_mask, other_value in outside)

    widened = set()
    for mask, value in inside:
        for bit in bits:
            if mask >> bit & 1 and not meets(mask & ~(1 << bit), value):
                mask &= ~(1 << bit)
        widened.add((mask, value & mask))
    return sorted(cube for cube in widened
                  if not any(other != cube and other[0] & cube[0] == other[0]
                             and cube[1] & other[0] == other[1] for other in widened))


@functools.cache
def _matched_cubes() -> dict[int, list[_Cube]]:
    """Per group, the local cubes of the words that match one of its forms."""
    return {group: _merge_cubes(_local_cube(number) for number in numbers)
            for group, numbers in _form_groups().items()}


@functools.cache
def _index_bit_cubes(bit: int) -> dict[int, tuple[bool, list[_Cube]]]:
    """Per group of forms with ``bit`` set in some form's number: whether the bit is set for
    the words outside the cubes rather than inside, and local cubes that tell the group's forms
    with the bit set from those with it clear (the fewer cubes of covering either, each
    widened from the low or from the high bits)."""
    cubes = {}
    for group, numbers in _form_groups().items():
        sides = {is_set: [_local_cube(number) for number in numbers
                          if bool(number >> bit & 1) == is_set] for is_set in (True, False)}
        if not sides[True]:
            continue
        choices = [(not is_set, _widen_cubes(sides[is_set], sides[not is_set], bits))
                   for is_set in (True, False) if sides[is_set]
                   for bits in (range(32), range(31, -1, -1))]
        cubes[group] = min(choices, key=lambda choice: (
            len(choice[1]), sum(bin(mask).count("1") for mask, _ in choice[1])))
    return cubes


class FormMatcher(wiring.Component):
    """Which form of :data:`sw.isa.FORMS` a word matches: one match line per form.

    The index is not encoded from the match lines: the bits :data:`_GROUP_MASK` covers select
    one group of forms; a word that matches a form of its group (the group's forms, merged
    into fewer cubes) reads an index whose every bit is, per group, whether the word is in one
    of :func:`_index_bit_cubes` (or in none of them).

    Attributes
    ----------
    word : Signal(32), in
    lines : Signal(len(FORMS)), out
        Bit ``k``: ``word & FORMS[k].mask == FORMS[k].value``. The forms are disjoint: at most
        one is set. The decoder does not use them (unused, they cost no logic).
    index : Signal(range(len(FORMS) + 1)), out
        The set line's number; ``len(FORMS)`` when none is.
    """

    def __init__(self):
        forms = len(isa.FORMS)
        super().__init__({"word": In(32), "lines": Out(forms), "index": Out(range(forms + 1))})

    def elaborate(self, platform):
        m = Module()
        word = self.word
        for number, form in enumerate(isa.FORMS):
            m.d.comb += self.lines[number].eq((word & form.mask) == form.value)

        # Whether the word is in each group: one comparison per group, which every cube of
        # the group shares.
        in_group = {}
        for group in _form_groups():
            in_group[group] = Signal(name=f"group_{group:08x}")
            m.d.comb += in_group[group].eq((word & _GROUP_MASK) == group)

        def in_cubes(group: int, cubes: list[_Cube]) -> Value:
            """Whether the word is in one of local ``cubes`` of ``group``."""
            return in_group[group] & _or((word & mask) == value for mask, value in cubes)

        def index_bit(bit: int) -> Value:
            """Bit ``bit`` of the index of the form the word matches, if it matches one."""
            return _or(in_group[group] & ~_or((word & mask) == value for mask, value in cubes)
                       if outside else in_cubes(group, cubes)
                       for group, (outside, cubes) in _index_bit_cubes(bit).items())

        matched = _or(in_cubes(group, cubes) for group, cubes in _matched_cubes().items())
        m.d.comb += self.index.eq(Mux(matched, Cat(index_bit(bit)
                                                   for bit in range(len(self.index))),
                                      len(isa.FORMS)))
        return m


class _FormTable(wiring.Component):
    """A read-only table of ``rows`` (values of ``layout``), read combinationally at ``index``."""

    def __init__(self, layout: data.StructLayout, rows: list):
        self._rows = rows
        super().__init__({"index": In(range(len(rows))), "row": Out(layout)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = Memory(shape=self.row.shape(), depth=len(self._rows),
                                            init=self._rows)
        port = table.read_port(domain="comb")
        m.d.comb += [port.addr.eq(self.index), self.row.eq(port.data)]
        return m


class Decoder(ConfigComponent):
    """Combinational decoder of one instruction word.

    Parameters
    ----------
    config : EngineConfig
        Decides which feature-gated forms are present.
    ops : collection of Op, optional
        The operations the engine around the decoder performs; the forms of any other decode
        as UNDEF. Defaults to every operation of the table.

    Attributes
    ----------
    word : Signal(32), in
        The instruction word.
    decoded : View(DecodedLayout), out
        Form index, operation, PSTATE class, static parameters, source slots and fields. For a
        form of an operation not in ``ops`` only ``form`` and ``undef`` are decoded (the rest
        reads 0: an engine ignores an UNDEF word's other outputs).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`, or ``ops`` holds something not an :data:`Op`.
    """

    @staticmethod
    def check_arguments(config: EngineConfig, ops=None) -> None:
        check_config(config)
        if ops is not None and not all(isinstance(op, Op) for op in ops):
            raise TypeError(f"ops must be members of Op, not {ops!r}")

    def __init__(self, config: EngineConfig, ops=None):
        self._ops = frozenset(Op if ops is None else ops)
        super().__init__(config, {"word": In(32), "decoded": Out(DecodedLayout)})

    def form_present(self, form: isa.Form) -> bool:
        """Whether ``form`` executes in this configuration (otherwise it is UNDEF)."""
        return self._config.has(form.feature) and Op[form.op.upper()] in self._ops

    def elaborate(self, platform):
        m = Module()
        word, out = self.word, self.decoded
        forms = isa.FORMS
        table, = KEPT_PARTS
        m.submodules.form_match = matcher = FormMatcher()
        # The matching form's index reads the row of the table that holds everything else the
        # decoder says about the form (the last row when no form matches).
        places = _placements()
        row_layout = _row_layout(places)
        m.submodules[table] = rows = _FormTable(
            row_layout, [self._row(form, places) for form in forms] + [{"absent": 1}])
        row = rows.row
        m.d.comb += [matcher.word.eq(word), rows.index.eq(matcher.index),
                     out.form.eq(matcher.index)]
        for name, _ in row_layout:
            if name not in ("absent", "exclusion", "place"):
                m.d.comb += Value.cast(getattr(out, name)).eq(Value.cast(getattr(row, name)))
        # Each field name sits at a few places of the word; the row says which one the form
        # uses (0: the form has no such field).
        for name, spots in places.items():
            shape = _FIELD_SHAPES[name]
            terms = []
            for number, (lo, hi, is_signed) in enumerate(spots, start=1):
                bits = word[lo:hi + 1]
                extended = Signal(shape, name=f"{name}_{lo}_{hi}")
                m.d.comb += extended.eq(bits.as_signed() if is_signed else bits)
                terms.append((row.place[name] == number).replicate(shape.width)
                             & extended.as_unsigned())
            m.d.comb += Value.cast(out.fields[name]).eq(_or(terms))
        # UNDEF: no form, a form whose feature is absent or whose operation is not performed,
        # or an excluded word of a form (the row says which values of the word exclude it).
        undefined = [row.absent]
        for number, excluded in enumerate(_exclusion_sets(), start=1):
            undefined.append((row.exclusion == number)
                             & Cat(word[lo:hi + 1] == value for lo, hi, value in excluded).any())
        m.d.comb += out.undef.eq(Cat(*undefined).any())
        return m

    def _row(self, form: isa.Form, places: dict) -> dict:
        """The table row of ``form``: its constants, or only ``absent`` for a form of an
        operation not performed (its other outputs do not matter)."""
        if Op[form.op.upper()] not in self._ops:
            return {"absent": 1}
        params, slots = form.params, source_slots(form)
        return {
            "absent": int(not self.form_present(form)),
            "op": Op[form.op.upper()],
            "access": Access[form.requires.name],
            "esize_log2": params.get("esize", 1).bit_length() - 1,
            "msize_log2": params.get("msize", 1).bit_length() - 1,
            "registers": params.get("registers", 1),
            "unit_pred": int(params.get("unit") == "svl_pred_bytes"),
            "width_32": int(params.get("width") == 32),
            "flags": {flag: int(bool(params.get(flag, False))) for flag in _FLAGS},
            "choices": {key: choice[params[key].upper()] if params.get(key) is not None
                        else choice.NONE for key, choice in CHOICES.items()},
            "present": {name: int(name in form.field_map) for name in _FIELD_SHAPES},
            "slots": {name: slots.get(name, NO_SLOT) for name in _SLOT_FIELDS},
            "exclusion": (_exclusion_sets().index(_exclusion_set(form)) + 1
                          if form.unallocated else 0),
            "place": {field.name: places[field.name].index((field.lo, field.hi, field.signed)) + 1
                      for field in form.fields},
        }


def _placements() -> dict[str, list[tuple[int, int, bool]]]:
    """Every place (lo, hi, signed) of each field name in the table's forms."""
    places: dict[str, list] = {}
    for form in isa.FORMS:
        for field in form.fields:
            spots = places.setdefault(field.name, [])
            if (field.lo, field.hi, field.signed) not in spots:
                spots.append((field.lo, field.hi, field.signed))
    return places


def _row_layout(places: dict) -> data.StructLayout:
    """A row of the decoder's table: the form's constants of :data:`DecodedLayout`, whether it
    is UNDEF here (``absent``), which values of the word exclude it (``exclusion``: 0 for none,
    else 1 + the position of its set in :func:`_exclusion_sets`) and which place of the word
    each field comes from."""
    constants = {name: field.shape for name, field in DecodedLayout
                 if name not in ("undef", "form", "fields")}
    return data.StructLayout({"absent": 1, "exclusion": range(len(_exclusion_sets()) + 1),
                              **constants, "place": data.StructLayout(
        {name: range(len(spots) + 1) for name, spots in places.items()})})


def _or(terms):
    """Bitwise OR of a list of values (0 for an empty list), as a balanced tree."""
    terms = list(terms)
    if not terms:
        return Const(0, 1)
    while len(terms) > 1:
        terms = [terms[i] | terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]
