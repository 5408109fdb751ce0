"""What the kernel learns from the engine at boot: SME vector lengths, HWCAPs, cpuinfo.

The kernel model never hard-codes an engine property. The supported streaming vector lengths
come from ``EngineConfig.supported_svls`` (the ``vq_map`` the kernel would probe by writing
SMCR_EL1.LEN), the HWCAPs and the ``/proc/cpuinfo`` feature names from ID_AA64SMFR0_EL1 as the
engine reports it (``Engine.id_aa64smfr0``), decoded with the kernel's ``arm64_elf_hwcaps``
rules (a feature is present when its ID field is at least the listed value).
"""

from __future__ import annotations

from dataclasses import dataclass

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import sve_vl_valid
from zatile.sw.arch.config import EngineConfig

__all__ = ["SmeVectorLengths", "HwcapRule", "SME_HWCAP_RULES", "hwcap2_from_id",
           "cpuinfo_features"]


@dataclass(frozen=True)
class SmeVectorLengths:
    """``vl_info[ARM64_VEC_SME]``: the SME vector lengths (bytes) the engine supports.

    Parameters
    ----------
    supported : tuple of int
        Supported vector lengths in bytes, ascending (need not include 16; may be sparse).
    """

    supported: tuple[int, ...]

    @classmethod
    def from_config(cls, config: EngineConfig) -> "SmeVectorLengths":
        return cls(tuple(svl // 8 for svl in config.supported_svls))

    @property
    def min_vl(self) -> int:
        return self.supported[0]

    @property
    def max_vl(self) -> int:
        return self.supported[-1]

    def find_supported(self, vl: int) -> int:
        """``find_supported_vector_length``: clamp, round down (docs/abi.md, "prctl")."""
        if not sve_vl_valid(vl):
            vl = self.min_vl
        vl = min(max(vl, self.min_vl), self.max_vl)
        return max(supported for supported in self.supported if supported <= vl)

    def requested(self, vl: int, flags: int) -> int:
        """The length ``PR_SME_SET_VL(vl | flags)`` selects, or -EINVAL for unknown flags or an
        invalid length (docs/abi.md, "prctl")."""
        if flags & ~(c.PR_SME_VL_INHERIT | c.PR_SME_SET_VL_ONEXEC) or not sve_vl_valid(vl):
            return -c.EINVAL
        return self.find_supported(min(vl, c.VL_ARCH_MAX))

    @property
    def boot_default(self) -> int:
        """The boot-time default SME VL: 32 bytes if supported, rounded (docs/abi.md, "sysctl")."""
        return self.find_supported(32)


@dataclass(frozen=True)
class HwcapRule:
    """One ``HWCAP_CAP`` line: ID_AA64SMFR0_EL1[shift +: width] >= minimum sets ``hwcap``."""

    name: str
    shift: int
    width: int
    minimum: int
    hwcap: int


#: The SME entries of ``arm64_elf_hwcaps`` (ID_AA64SMFR0_EL1 fields, docs/isa.md, "ID registers").
SME_HWCAP_RULES: tuple[HwcapRule, ...] = (
    HwcapRule("smei16i64", 52, 4, 0xF, c.HWCAP2_SME_I16I64),
    HwcapRule("smef64f64", 48, 1, 1, c.HWCAP2_SME_F64F64),
    HwcapRule("smei8i32", 36, 4, 0xF, c.HWCAP2_SME_I8I32),
    HwcapRule("smef16f32", 35, 1, 1, c.HWCAP2_SME_F16F32),
    HwcapRule("smeb16f32", 34, 1, 1, c.HWCAP2_SME_B16F32),
    HwcapRule("smef32f32", 32, 1, 1, c.HWCAP2_SME_F32F32),
    HwcapRule("smefa64", 63, 1, 1, c.HWCAP2_SME_FA64),
    HwcapRule("sme2", 56, 4, 1, c.HWCAP2_SME2),
    HwcapRule("sme2p1", 56, 4, 2, c.HWCAP2_SME2P1),
    HwcapRule("smei16i32", 44, 4, 5, c.HWCAP2_SME_I16I32),
    HwcapRule("smebi32i32", 33, 1, 1, c.HWCAP2_SME_BI32I32),
    HwcapRule("smeb16b16", 43, 1, 1, c.HWCAP2_SME_B16B16),
    HwcapRule("smef16f16", 42, 1, 1, c.HWCAP2_SME_F16F16),
    HwcapRule("smelutv2", 60, 1, 1, c.HWCAP2_SME_LUTV2),
    HwcapRule("smef8f16", 41, 1, 1, c.HWCAP2_SME_F8F16),
    HwcapRule("smef8f32", 40, 1, 1, c.HWCAP2_SME_F8F32),
    HwcapRule("smesf8fma", 30, 1, 1, c.HWCAP2_SME_SF8FMA),
    HwcapRule("smesf8dp4", 29, 1, 1, c.HWCAP2_SME_SF8DP4),
    HwcapRule("smesf8dp2", 28, 1, 1, c.HWCAP2_SME_SF8DP2),
)


def hwcap2_from_id(id_aa64smfr0: int) -> int:
    """AT_HWCAP2 of an SME engine with this ID_AA64SMFR0_EL1 (SME itself is always set)."""
    hwcap2 = c.HWCAP2_SME
    for rule in SME_HWCAP_RULES:
        if (id_aa64smfr0 >> rule.shift) & ((1 << rule.width) - 1) >= rule.minimum:
            hwcap2 |= rule.hwcap
    return hwcap2


def cpuinfo_features(hwcap2: int) -> str:
    """The ``Features`` line of ``/proc/cpuinfo`` for the SME HWCAPs in ``hwcap2``.

    Names are printed in HWCAP bit order, as ``c_show`` walks ``hwcap_str``. Only the SME
    names appear: the CPU's own (``fp``, ``asimd``, ...) are outside the model.
    """
    names = [("sme", c.HWCAP2_SME)] + [(rule.name, rule.hwcap) for rule in SME_HWCAP_RULES]
    present = sorted((bit, name) for name, bit in names if hwcap2 & bit)
    return "Features\t:" + "".join(f" {name}" for _, name in present)
