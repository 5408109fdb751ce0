"""The SME ABI support routines, in A64 assembly, that ``zatile cc`` links into every program.

``sme_abi.S`` implements the AAPCS64 routines clang calls (``__arm_tpidr2_save``,
``__arm_tpidr2_restore``, ``__arm_sme_state``, ``__arm_za_disable``, ``__arm_get_current_vg``,
``__arm_sme_state_size``, ``__arm_sme_save``, ``__arm_sme_restore``) with the contracts of the
AAPCS64 (preserved registers, abort cases, buffer layouts) as compiler-rt's ``sme-abi.S``
implements them, and the streaming-compatible ``__arm_sc_memcpy``, ``__arm_sc_memmove``,
``__arm_sc_memset`` and ``__arm_sc_memchr`` (general-register code only).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["RUNTIME_SOURCES"]

#: The assembly files linked into every program.
RUNTIME_SOURCES = (Path(__file__).with_name("sme_abi.S"),)
