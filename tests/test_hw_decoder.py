"""hw.decoder against sw.isa.decode: every form, random words, exclusions, feature gating."""

import dataclasses
import gc
import random
import warnings

import pytest
from amaranth.hdl import Fragment, UnusedElaboratable
from amaranth.sim import Simulator

from zatile.hw.decoder import (
    CHOICES, NO_SLOT, Access, Decoder, FieldsLayout, FormMatcher, Op, check_known_params,
    source_slots,
)
from zatile.hw.fp.align_add import FpAlignAdd
from zatile.hw.fp.format import FP32
from zatile.hw.fp.round import FpRound
from zatile.hw.za_storage import ZaStorage
from zatile.sw.arch import isa
from zatile.sw.arch.config import FEATURES, EngineConfig


FIELD_NAMES = [name for name, _ in FieldsLayout]


def _expected(word: int, config: EngineConfig):
    decoded = isa.decode(word)
    if decoded is None:
        return None
    form = decoded.form
    present = config.has(form.feature)
    return decoded, present


def _random_instance(form: isa.Form, rng: random.Random) -> int:
    word = form.value
    for field in form.fields:
        word |= rng.getrandbits(field.width) << field.lo
    return word


def _run_words(config: EngineConfig, words: list[int], ops=None) -> None:
    dut = Decoder(config, ops)

    async def bench(ctx):
        for word in words:
            ctx.set(dut.word, word)
            expected = _expected(word, config)
            out = dut.decoded
            if expected is None:
                assert ctx.get(out.undef) == 1, hex(word)
                form_index = ctx.get(out.form)
                # Unallocated, or an excluded word of a form (Rm = XZR scalar+scalar, a
                # reserved logical immediate).
                assert form_index == len(isa.FORMS) or \
                    isa.FORMS[form_index].unallocated, hex(word)
                continue
            decoded, present = expected
            form = decoded.form
            assert ctx.get(out.form) == isa.FORMS.index(form), (hex(word), form.name)
            performed = ops is None or Op[form.op.upper()] in ops
            assert ctx.get(out.undef) == (not (present and performed)), (hex(word), form.name)
            if not performed:
                # Only form and undef are decoded for an operation the engine does not perform.
                assert ctx.get(out.op.as_value()) == 0 and not any(
                    ctx.get(out.fields[name]) for name in FIELD_NAMES), (hex(word), form.name)
                continue
            assert ctx.get(out.op) == Op[form.op.upper()]
            assert ctx.get(out.access) == Access[form.requires.name]
            assert 1 << ctx.get(out.esize_log2) == form.params.get("esize", 1)
            assert 1 << ctx.get(out.msize_log2) == form.params.get("msize", 1)
            assert ctx.get(out.registers) == form.params.get("registers", 1)
            for name, value in decoded.fields.items():
                assert ctx.get(out.fields[name]) == value, (form.name, name)
            for name, value in form.params.items():
                if isinstance(value, bool):
                    assert ctx.get(out.flags[name]) == value, (form.name, name)
            for key, choice in CHOICES.items():
                expected = (choice[form.params[key].upper()] if form.params.get(key) is not None
                            else choice.NONE)
                assert ctx.get(out.choices[key]) == expected, (form.name, key)
            for name in decoded.fields:
                assert ctx.get(out.present[name]) == 1, (form.name, name)
            assert sum(ctx.get(out.present[name]) for name in FIELD_NAMES) == len(form.fields)
            slots = source_slots(form)
            for name in slots:
                assert ctx.get(out.slots[name]) == slots[name]
            sources = isa.scalar_sources(decoded)
            for slot, register in enumerate(sources):
                assert ctx.get(out.slots[register.field]) == slot

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_every_form_and_random_words():
    rng = random.Random(1)
    config = EngineConfig(max_svl=128)
    words = [_random_instance(form, rng) for form in isa.FORMS for _ in range(6)]
    words += [rng.getrandbits(32) for _ in range(1500)]
    # Random words inside the subset's top bytes hit near misses of every mask.
    tops = sorted({form.value >> 24 for form in isa.FORMS})
    words += [rng.choice(tops) << 24 | rng.getrandbits(24) for _ in range(2500)]
    _run_words(config, words)


def _near_misses(rng: random.Random) -> list[int]:
    """Per form, an instance with one bit below the top byte (which selects the form's group in
    the matcher) that its mask covers flipped: it matches another form of the group or none."""
    words = []
    for form in isa.FORMS:
        bits = [bit for bit in range(24) if form.mask >> bit & 1]
        words.append(_random_instance(form, rng) ^ 1 << rng.choice(bits))
    return words


def test_near_misses_of_every_form():
    _run_words(EngineConfig(max_svl=128), _near_misses(random.Random(3)))


def test_matcher_lines_and_index():
    rng = random.Random(4)
    words = [_random_instance(form, rng) for form in rng.sample(isa.FORMS, 300)]
    words += rng.sample(_near_misses(rng), 300)
    dut = FormMatcher()

    async def bench(ctx):
        for word in words:
            ctx.set(dut.word, word)
            decoded = isa.decode(word)
            number = len(isa.FORMS) if decoded is None else isa.FORMS.index(decoded.form)
            matching = [k for k, form in enumerate(isa.FORMS)
                        if word & form.mask == form.value]
            assert ctx.get(dut.lines) == sum(1 << k for k in matching), hex(word)
            assert ctx.get(dut.index) == (matching[0] if matching else len(isa.FORMS)), hex(word)
            assert matching in ([], [number]) or isa.FORMS[matching[0]].unallocated, hex(word)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_excluded_scalar_plus_scalar_xzr_is_undef():
    config = EngineConfig(max_svl=128)
    words = [form.encode(rm=31) for form in isa.FORMS if form.params.get("scalar_offset")]
    assert words and all(isa.decode(w) is None for w in words)
    _run_words(config, words)


@pytest.mark.parametrize("features", [frozenset(), frozenset({"I8I32"}),
                                      frozenset({"I16I64", "F32F32"}), frozenset(FEATURES)])
def test_feature_gating(features):
    rng = random.Random(2)
    config = EngineConfig(max_svl=256, features=features)
    words = [_random_instance(form, rng) for form in isa.FORMS if form.feature
             for _ in range(2)]
    _run_words(config, words)


def test_slots_follow_scalar_sources():
    ld1 = isa.FORMS_BY_NAME["LD1W_ZA_H"]
    assert source_slots(ld1) == {"rs": 0, "rn": 1, "rm": 2}
    assert source_slots(isa.FORMS_BY_NAME["MRS_SVCR"]) == {}
    assert source_slots(isa.FORMS_BY_NAME["MSR_SVCR"]) == {"rt": 0}
    assert NO_SLOT == 3


def test_a_parameter_the_decoder_does_not_know_is_refused_for_a_performed_operation(
        monkeypatch):
    """The engine's operations pass; a form that carries a parameter the decoder has no
    output for (a planted integer ``stride``) is refused by name, and only for an operation
    the engine performs."""
    from zatile.hw.engine import IMPLEMENTED_OPS
    check_known_params(IMPLEMENTED_OPS)
    form = isa.FORMS_BY_NAME["INCB_X"]
    planted = dataclasses.replace(form, params={**form.params, "stride": 2})
    monkeypatch.setattr(isa, "FORMS", (*isa.FORMS, planted))
    check_known_params(set(IMPLEMENTED_OPS) - {Op.COUNT_SCALAR})
    with pytest.raises(RuntimeError, match="'stride'"):
        check_known_params({*IMPLEMENTED_OPS, Op.COUNT_SCALAR})


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="EngineConfig"):
        Decoder(128)


def _unused_warnings(make) -> list[str]:
    """The "created but never used" warnings left once ``make()``'s component is gone.

    Amaranth arms the warning at the first elaboration in the process, so one is done first.
    """
    Fragment.get(Decoder(EngineConfig()), platform=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            make()
        except (TypeError, ValueError):
            pass
        gc.collect()
    return [str(w.message) for w in caught if issubclass(w.category, UnusedElaboratable)]


@pytest.mark.parametrize("make", [
    lambda: Decoder(128),
    lambda: ZaStorage(EngineConfig(), tile_ports=0),
    lambda: FpRound(FP32, width=0, exponent_bits=9),
    lambda: FpAlignAdd(augend_width=24, addend_width=48, exponent_bits=10, guard_bits=3,
                       headroom_bits=2, order_by_exponent=True),
], ids=["decoder", "za_storage", "fp_round", "fp_align_add"])
def test_a_rejected_component_leaves_no_unused_warning(make):
    assert _unused_warnings(make) == []


def test_the_unused_warning_check_sees_a_dropped_component():
    """The check above can fail: a valid component dropped without elaboration is reported."""
    assert any("Decoder" in message for message in _unused_warnings(lambda: Decoder(EngineConfig())))


def test_forms_of_operations_the_engine_does_not_perform_are_undef():
    rng = random.Random(5)
    ops = {op for op in Op if op not in (Op.WHILE, Op.INT_MOPA)}
    words = [_random_instance(form, rng) for form in isa.FORMS for _ in range(2)]
    _run_words(EngineConfig(max_svl=256), words, ops)
