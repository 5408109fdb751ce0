"""The shared engine configuration."""

import pytest

from zatile.sw.arch.config import FEATURES, EngineConfig


def test_defaults_support_every_svl_up_to_the_maximum():
    config = EngineConfig(max_svl=512)
    assert config.supported_svls == (128, 256, 512)
    assert config.mem_data_width == 512
    assert config.features == frozenset(FEATURES)
    assert (config.queue_depth, config.mem_outstanding) == (16, 4)
    assert config.array_rows == 16 and config.outer_products_per_cycle == 1.0
    assert config.vector_bits_per_cycle == 512 and config.issue_lanes == 2


def test_area_knobs_round_trip_and_an_older_description_means_whole_tiles_and_vectors():
    config = EngineConfig(max_svl=256, array_rows=2, vector_bits_per_cycle=64, issue_lanes=1)
    assert EngineConfig.from_json_dict(config.to_json_dict()) == config
    assert config.outer_products_per_cycle == 0.25
    older = {key: value for key, value in config.to_json_dict().items()
             if key not in ("array_rows", "vector_bits_per_cycle", "issue_lanes")}
    assert EngineConfig.from_json_dict(older).array_rows == 8
    assert EngineConfig.from_json_dict(older).vector_bits_per_cycle == 256
    assert EngineConfig.from_json_dict(older).issue_lanes == 2


def test_the_queue_knobs_round_trip_through_json_and_leave_the_id_register_alone():
    config = EngineConfig(max_svl=256, queue_depth=2, mem_outstanding=1)
    assert EngineConfig.from_json_dict(config.to_json_dict()) == config
    assert config.id_aa64smfr0 == EngineConfig(max_svl=256).id_aa64smfr0


@pytest.mark.parametrize("kwargs, quoted", [
    (dict(max_svl=384), "384"),
    (dict(max_svl=4096), "4096"),
    (dict(max_svl=512, supported_svls=(128, 256)), "must include max_svl"),
    (dict(max_svl=256, supported_svls=(256, 512)), "512"),
    (dict(features=frozenset({"F64F64", "F8F16"})), "F8F16"),
    (dict(max_svl=256, mem_data_width=512), "512"),
    (dict(mem_data_width=96), "96"),
    (dict(za_contexts=0), "0"),
    (dict(queue_depth=6), "queue_depth .* not 6"),
    (dict(queue_depth=1), "from 2 to 64, not 1"),
    (dict(queue_depth=128), "not 128"),
    (dict(mem_outstanding=0), "mem_outstanding .* not 0"),
    (dict(mem_outstanding=17), "not 17"),
    (dict(max_svl=128, array_rows=8), "array_rows must be a power of two from 1 to "
                                      "max_svl/32=4, not 8"),
    (dict(array_rows=3), "not 3"),
    (dict(array_rows=0), "not 0"),
    (dict(max_svl=128, vector_bits_per_cycle=256), "vector_bits_per_cycle must be a power of "
                                                   "two from 64 to max_svl=128, not 256"),
    (dict(vector_bits_per_cycle=32), "not 32"),
    (dict(vector_bits_per_cycle=96), "not 96"),
    (dict(issue_lanes=0), "issue_lanes must be 1 or 2, not 0"),
    (dict(issue_lanes=4), "not 4"),
    (dict(issue_lanes=1.0), "not 1.0"),
])
def test_invalid_combinations_are_rejected_quoting_the_value(kwargs, quoted):
    with pytest.raises(ValueError, match=quoted):
        EngineConfig(**kwargs)


@pytest.mark.parametrize("supported, request_bits, effective", [
    ((128, 256, 512), 384, 256),     # largest supported not above the request
    ((128, 256, 512), 2048, 512),
    ((512,), 256, 512),              # below the minimum: the minimum (docs/isa.md, "Vector lengths")
    ((256, 1024), 512, 256),
])
def test_effective_svl_rule(supported, request_bits, effective):
    config = EngineConfig(max_svl=max(supported), supported_svls=supported)
    assert config.effective_svl(request_bits) == effective


def test_smcr_len_selects_the_request():
    config = EngineConfig(max_svl=2048)
    assert config.effective_svl_for_len(0) == 128
    assert config.effective_svl_for_len(2) == 256     # 384 requested
    assert config.effective_svl_for_len(15) == 2048
    with pytest.raises(ValueError, match="16"):
        config.effective_svl_for_len(16)


def test_id_register_matches_qemu_max_for_all_features():
    # QEMU -cpu max reads 0x80F100FD00000000; it has FA64 (bit 63) and the engine does not.
    assert EngineConfig().id_aa64smfr0 == 0x80F100FD00000000 & ~(1 << 63)
    assert EngineConfig(features=frozenset({"I8I32"})).id_aa64smfr0 == 0xF << 36
