"""The kernel side of the Linux arm64 SME ABI, modelled over one zatile engine.

Modules, in the order a reader follows a system call:

* :mod:`zatile.sw.abi.constants` — every Linux constant by name (docs/abi.md, "Constants").
* :mod:`zatile.sw.abi.layouts` — the byte layouts (signal records, ``rt_sigframe``, ptrace headers,
  TPIDR2 block, ELF core structures) and the uapi size macros.
* :mod:`zatile.sw.abi.cpufeatures` — SME vector lengths, HWCAPs and cpuinfo from the engine.
* :mod:`zatile.sw.abi.program` — executables: engine instructions plus CPU steps.
* :mod:`zatile.sw.abi.task`, :mod:`zatile.sw.abi.mm` — threads, processes, address spaces, kernel heap, bus.
* :mod:`zatile.sw.abi.fpsimd` — FP/SME state management (buffers, views, VL changes).
* :mod:`zatile.sw.abi.sigframe`, :mod:`zatile.sw.abi.regsets`, :mod:`zatile.sw.abi.coredump` — signal frames,
  ptrace regsets, core files.
* :mod:`zatile.sw.abi.kernel` — the :class:`~zatile.sw.abi.kernel.Kernel`: scheduling, stepping, system-call
  dispatch; it combines :mod:`zatile.sw.abi.engine_context` (SME state on the engine, the SME trap),
  :mod:`zatile.sw.abi.za_contexts` (ZA resident in the engine's physical ZA contexts, virtual ZA
  contexts),
  :mod:`zatile.sw.abi.signals` (delivery, sigreturn), :mod:`zatile.sw.abi.processes` (clone, execve, exit),
  :mod:`zatile.sw.abi.ptrace`, :mod:`zatile.sw.abi.procfs` (sysctl, cpuinfo, auxv) and the core dumps of
  :mod:`zatile.sw.abi.coredump`.
* :mod:`zatile.sw.abi.libc` — user-space wrappers for programs' Python steps.
"""

from zatile.sw.abi.kernel import Kernel, KernelStats, UserContext
from zatile.sw.abi.program import Brk, Call, Executable, Mov, Mrs, Msr, Ret, Svc, Symbol, Syscall

__all__ = ["Kernel", "KernelStats", "UserContext", "Executable", "Brk", "Call", "Mov", "Mrs", "Msr",
           "Ret", "Svc", "Symbol", "Syscall"]
