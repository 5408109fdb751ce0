"""The runtime that ``zatile cc`` links into every program: the SME ABI support routines in
A64 assembly, and the virtual ZA context calls in C with their header.

``sme_abi.S`` implements the AAPCS64 routines clang calls (``__arm_tpidr2_save``,
``__arm_tpidr2_restore``, ``__arm_sme_state``, ``__arm_za_disable``, ``__arm_get_current_vg``,
``__arm_sme_state_size``, ``__arm_sme_save``, ``__arm_sme_restore``) with the contracts of the
AAPCS64 (preserved registers, abort cases, buffer layouts) as compiler-rt's ``sme-abi.S``
implements them, and the streaming-compatible ``__arm_sc_memcpy``, ``__arm_sc_memmove``,
``__arm_sc_memset`` and ``__arm_sc_memchr`` (general-register code only).

``zatile_za.c`` implements ``zatile_za_open``, ``zatile_za_select`` and ``zatile_za_close``,
declared in ``zatile_za.h`` with the zatile prctl options behind them (``PR_ZATILE_ZA_OPEN``,
``PR_ZATILE_ZA_SELECT``, ``PR_ZATILE_ZA_CLOSE``; docs/abi.md, "Virtual ZA contexts"). Every
compilation has :data:`INCLUDE_DIRECTORY` on its system include path, so a program writes
``#include <zatile_za.h>``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["INCLUDE_DIRECTORY", "RUNTIME_HEADERS", "RUNTIME_SOURCES"]

#: The directory of the runtime's headers, given to every compilation with ``-isystem``.
INCLUDE_DIRECTORY = Path(__file__).parent

#: The headers programs may include.
RUNTIME_HEADERS = (INCLUDE_DIRECTORY / "zatile_za.h",)

#: The sources (assembly and C) linked into every program.
RUNTIME_SOURCES = (INCLUDE_DIRECTORY / "sme_abi.S", INCLUDE_DIRECTORY / "zatile_za.c")
