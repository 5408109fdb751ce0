"""Memory management of the kernel model: address spaces, the kernel heap, the engine's bus.

The engine has one memory port. :class:`SystemBus` is what it is connected to, playing the
part of the CPU's MMU for the engine's loads and stores:

* addresses below :data:`KERNEL_BASE` go to the current process's :class:`AddressSpace`
  (TTBR0; the kernel switches it on every context switch);
* addresses at or above it go to kernel memory (TTBR1), and only while the issuing CPU is at
  EL1 (:meth:`SystemBus.kernel_mode`), i.e. during the kernel's own save/restore sequences.
  A user instruction that names a kernel address faults like an EL0 access to a kernel page.
  The one other EL1 master is a host CPU moving V registers to and from the engine's Z
  (:class:`~zatile.sim.host_cpu.HostCpu`): while it does, its memory is ``privileged`` and
  its own scratch buffer (above :data:`KERNEL_BASE` too) is what those addresses reach.

:class:`KernelHeap` is ``kmalloc``/``kfree`` over kernel memory; the per-thread SME save areas
(``sve_state``, ``sme_state``) live there, so the engine can store a thread's registers into
them with its own instructions.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from zatile.sim.state import Memory, MemoryFault

__all__ = ["KERNEL_BASE", "TEXT_BASE", "VDSO_BASE", "DATA_BASE", "STACK_TOP",
           "KernelHeap", "AddressSpace", "SystemBus"]

#: First kernel (TTBR1) address; everything below is user space.
KERNEL_BASE = 0xFFFF_0000_0000_0000
#: Where an executable's functions are laid out (4 bytes per step).
TEXT_BASE = 0x0000_0000_0040_0000
#: The vDSO: the signal trampoline ``__kernel_rt_sigreturn`` lives here.
VDSO_BASE = 0x0000_0000_0030_0000
#: An executable's data segment.
DATA_BASE = 0x0000_0000_1000_0000
#: Top of the main thread's stack (the stack grows down from here).
STACK_TOP = 0x0000_7FFF_FFFF_0000

_ALIGNMENT = 16


class KernelHeap:
    """A first-fit allocator over one region of kernel memory (16-byte aligned blocks).

    Parameters
    ----------
    memory : Memory
        Kernel memory; the heap maps its region there.
    base, size : int
        The heap's region.
    """

    def __init__(self, memory: Memory, base: int, size: int):
        memory.map(base, np.zeros(size, np.uint8))
        self._memory = memory
        self._free: list[tuple[int, int]] = [(base, size)]
        self._allocated: dict[int, int] = {}

    def alloc(self, size: int) -> int | None:
        """Address of ``size`` zeroed bytes (``kzalloc``), or None when the heap is exhausted."""
        size = max(_ALIGNMENT, (size + _ALIGNMENT - 1) & ~(_ALIGNMENT - 1))
        for index, (start, length) in enumerate(self._free):
            if length >= size:
                if length == size:
                    del self._free[index]
                else:
                    self._free[index] = (start + size, length - size)
                self._allocated[start] = size
                self._memory.write(start, np.zeros(size, np.uint8))
                return start
        return None

    def free(self, address: int) -> None:
        """Return a block (``kfree``); neighbouring free blocks merge."""
        size = self._allocated.pop(address)
        self._free.append((address, size))
        self._free.sort()
        merged: list[tuple[int, int]] = []
        for start, length in self._free:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        self._free = merged

    @property
    def blocks_in_use(self) -> int:
        """Allocations not yet freed (zero once every thread has exited: nothing leaked)."""
        return len(self._allocated)


@dataclass
class AddressSpace:
    """One process's ``mm_struct``: its anonymous mappings and its loaded code.

    Attributes
    ----------
    memory : Memory
        Data, stack and any other mapped bytes.
    text : dict
        Loaded program steps by address (code is not readable as data in this model).
    symbols : dict
        Addresses of the loaded functions by name.
    """

    memory: Memory = field(default_factory=Memory)
    text: dict[int, object] = field(default_factory=dict)
    symbols: dict[str, int] = field(default_factory=dict)

    def duplicate(self) -> "AddressSpace":
        """A copy-on-fork duplicate: private memory, the same (immutable) code."""
        return AddressSpace(self.memory.copy(), dict(self.text), dict(self.symbols))


class SystemBus(Memory):
    """The engine's memory port: user addresses through TTBR0, kernel addresses at EL1 only.

    Parameters
    ----------
    kernel_memory : Memory
        What addresses at or above :data:`KERNEL_BASE` reach.
    """

    def __init__(self, kernel_memory: Memory):
        super().__init__()
        self.kernel_memory = kernel_memory
        #: The current process's memory (None: nothing mapped below KERNEL_BASE).
        self.user_memory: Memory | None = None
        self._privileged = False

    @contextmanager
    def kernel_mode(self) -> Iterator[None]:
        """Accesses made inside the block come from EL1 and may reach kernel memory."""
        self._privileged = True
        try:
            yield
        finally:
            self._privileged = False

    def _target(self, address: int, write: bool) -> Memory:
        if address >= KERNEL_BASE:
            if self._privileged:
                return self.kernel_memory
            if getattr(self.user_memory, "privileged", False):
                return self.user_memory            # a host CPU's V<->Z transfer
            raise MemoryFault(address, write)
        if self.user_memory is None:
            raise MemoryFault(address, write)
        return self.user_memory

    def check(self, address: int, length: int, write: bool = False) -> None:
        if length:
            self._target(address, write).check(address, length, write)

    def read(self, address: int, length: int) -> np.ndarray:
        if length == 0:
            return np.zeros(0, np.uint8)
        return self._target(address, False).read(address, length)

    def write(self, address: int, payload) -> None:
        data = payload if isinstance(payload, np.ndarray) else np.frombuffer(bytes(payload), np.uint8)
        if data.size:
            self._target(address, True).write(address, data)
