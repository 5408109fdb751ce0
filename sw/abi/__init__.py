"""The kernel side of the Linux arm64 SME ABI, modelled over one zatile engine.

Modules, in the order a reader follows a system call:

* :mod:`sw.abi.constants` — every Linux constant by name (docs/abi.md, "Constants").
* :mod:`sw.abi.layouts` — the byte layouts (signal records, ``rt_sigframe``, ptrace headers,
  TPIDR2 block, ELF core structures) and the uapi size macros.
* :mod:`sw.abi.cpufeatures` — SME vector lengths, HWCAPs and cpuinfo from the engine.
* :mod:`sw.abi.program` — executables: engine instructions plus CPU steps.
* :mod:`sw.abi.task`, :mod:`sw.abi.mm` — threads, processes, address spaces, kernel heap, bus.
* :mod:`sw.abi.fpsimd` — FP/SME state management (buffers, views, VL changes).
* :mod:`sw.abi.sigframe`, :mod:`sw.abi.regsets`, :mod:`sw.abi.coredump` — signal frames,
  ptrace regsets, core files.
* :mod:`sw.abi.kernel` — the :class:`~sw.abi.kernel.Kernel`: scheduling, context switching on
  the engine, traps, system calls, signals, ptrace.
* :mod:`sw.abi.libc` — user-space wrappers for programs' Python steps.
"""

from zatile.sw.abi.kernel import Kernel, KernelStats, UserContext
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Mrs, Msr, Ret, Svc, Symbol, Syscall

__all__ = ["Kernel", "KernelStats", "UserContext", "Executable", "Brk", "Call", "Mov", "Mrs", "Msr",
           "Ret", "Svc", "Symbol", "Syscall"]
