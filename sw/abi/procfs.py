"""The files the model serves: ``/proc/sys/abi/sme_default_vector_length`` (docs/abi.md,
"sysctl"), ``/proc/cpuinfo`` and the auxiliary vector.
"""

from __future__ import annotations


from zatile.sw.abi import constants as c
from zatile.sw.abi.cpufeatures import cpuinfo_features
from zatile.sw.abi.task import Process

__all__ = ["ProcfsMixin", "SYSCTL_SME_DEFAULT_VL"]

SYSCTL_SME_DEFAULT_VL = "/proc/sys/abi/sme_default_vector_length"


class ProcfsMixin:
    """The files of the model's file system view: sysctl, ``/proc/cpuinfo``, auxv.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel` and of
    :class:`~zatile.sw.abi.elf_process.ElfProcess`: it uses their ``sme_default_vl``,
    ``hwcap2``, ``lengths`` and ``processes``.
    """

    def read_file(self, path: str) -> bytes | int:
        """Read a /proc file: the contents, or a negative errno."""
        if path == SYSCTL_SME_DEFAULT_VL:
            return f"{self.sme_default_vl}\n".encode()
        if path == "/proc/cpuinfo":
            return f"processor\t: 0\n{cpuinfo_features(self.hwcap2)}\n\n".encode()
        parts = path.split("/")
        if len(parts) == 4 and parts[:2] == ["", "proc"] and parts[3] == "auxv" \
                and parts[2].isdigit() and int(parts[2]) in self.processes:
            return self._auxv_bytes(self.processes[int(parts[2])])
        return -c.ENOENT

    def write_file(self, path: str, data: bytes) -> int:
        """Write a /proc file: bytes consumed, or a negative errno.

        The SME default-VL sysctl parses like ``proc_dointvec``; ``-1`` means the maximum;
        an invalid VL is -EINVAL, a valid one is rounded as PR_SME_SET_VL would (docs/abi.md,
        "sysctl").
        """
        if path == "/proc/cpuinfo" or (path.startswith("/proc/") and path.endswith("/auxv")):
            return -c.EACCES
        if path != SYSCTL_SME_DEFAULT_VL:
            return -c.ENOENT
        vl = _parse_proc_int(bytes(data).decode("ascii", "replace"))
        if vl is None:
            return -c.EINVAL
        if vl == -1:
            vl = self.lengths.max_vl
        if vl % 16 or not 16 <= vl <= c.SVE_VL_MAX:
            return -c.EINVAL
        self.sme_default_vl = self.lengths.find_supported(vl)
        return len(data)

    def _auxv(self) -> tuple[tuple[int, int], ...]:
        return ((c.AT_HWCAP2, self.hwcap2), (c.AT_MINSIGSTKSZ, self.minsigstksz))

    @staticmethod
    def _auxv_bytes(process: Process) -> bytes:
        pairs = list(process.auxv) + [(c.AT_NULL, 0)]
        return b"".join(key.to_bytes(8, "little") + value.to_bytes(8, "little")
                        for key, value in pairs)


def _parse_proc_int(text: str) -> int | None:
    """One integer as ``proc_dointvec`` reads it (base 0, optional '-', whitespace around)."""
    stripped = text.strip()
    negative = stripped.startswith("-")
    digits = stripped[1:] if negative else stripped
    try:
        if digits[:2].lower() == "0x":
            value = int(digits[2:], 16)
        elif len(digits) > 1 and digits.startswith("0"):
            value = int(digits[1:], 8)
        else:
            value = int(digits, 10)
    except ValueError:
        return None
    if not digits[-1:].isalnum() or "_" in digits or digits[:1] in "+-":
        return None
    value = -value if negative else value
    return value if -(1 << 31) <= value < 1 << 31 else None
