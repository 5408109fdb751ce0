"""The register map of the SoC wrapper's control port (hw/soc/registers.py): packing and
unpacking register fields as a host does, and the map as the generated JSON lists it."""

from __future__ import annotations

import pytest

from zatile.hw.soc.registers import (DEBUG_WINDOW, REGISTERS, pack_register,
                                     register_map_json, unpack_register)
from zatile.sw.arch.config import EngineConfig


def test_register_fields_pack_and_unpack():
    value = pack_register("CONTROL", SME_ENABLE=1, SMCR_LEN=3, IRQ_ENABLE=1)
    assert unpack_register("CONTROL", value) == {"SME_ENABLE": 1, "SMCR_LEN": 3,
                                                 "ZA_CONTEXT": 0, "IRQ_ENABLE": 1}
    with pytest.raises(ValueError, match="SMCR_LEN=0x10"):
        pack_register("CONTROL", SMCR_LEN=16)
    with pytest.raises(ValueError, match="'LEN'"):
        pack_register("CONTROL", LEN=1)


def test_the_json_map_lists_every_register_and_the_debug_window():
    entries = register_map_json(EngineConfig(max_svl=256))
    assert [entry["name"] for entry in entries[:len(REGISTERS)]] == [r.name for r in REGISTERS]
    window = entries[len(REGISTERS):]
    assert [entry["offset"] for entry in window] == [DEBUG_WINDOW + 4 * k for k in range(8)]
    offsets = [entry["offset"] for entry in entries]
    assert len(set(offsets)) == len(offsets) and all(offset % 4 == 0 for offset in offsets)
