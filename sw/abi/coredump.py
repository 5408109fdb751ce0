"""Core dumps (docs/abi.md, "Core dumps"): ELF64 core files as ``binfmt_elf``'s
``elf_core_dump`` writes them for arm64, and the kernel's :class:`CoreDumpsMixin`.

Layout: the ELF header, one PT_NOTE program header followed by a PT_LOAD per mapping, the
notes, then the mappings' bytes at page-aligned offsets. Notes come per thread, the dumping
thread first: NT_PRSTATUS ("CORE"), for the first thread only the process-wide NT_PRPSINFO,
NT_SIGINFO, NT_AUXV and NT_FILE ("CORE"), then one note per active regset in view order —
NT_PRFPREG under "CORE", the arm64 ones (NT_ARM_TLS, NT_ARM_SSVE, NT_ARM_ZA) under "LINUX" —
each as long as what the regset getter produced.
"""

from __future__ import annotations

from dataclasses import dataclass

from zatile.sw.abi import constants as c
from zatile.sw.abi.layouts import (
    Elf64Ehdr, Elf64Nhdr, Elf64Phdr, ElfPrpsinfo, ElfPrstatus, round_up,
)
from zatile.sw.abi.task import Process, Thread, ThreadState

__all__ = ["CoreNote", "CoreSegment", "elf_core", "PAGE_SIZE", "CORE_DUMP_LIMIT",
           "CoreDumpsMixin"]

PAGE_SIZE = 4096
#: The most memory contents a core dump holds (RLIMIT_CORE-like): mappings past it are dumped
#: as headers only (``p_filesz`` short of ``p_memsz``), as are unreadable ones.
CORE_DUMP_LIMIT = 64 << 20


@dataclass(frozen=True)
class CoreNote:
    """One ELF note: owner name, type, descriptor bytes."""

    name: str
    note_type: int
    desc: bytes

    def pack(self) -> bytes:
        name = self.name.encode() + b"\0"
        header = Elf64Nhdr(n_namesz=len(name), n_descsz=len(self.desc),
                           n_type=self.note_type).pack()
        return (header + name + bytes(round_up(len(name), 4) - len(name))
                + self.desc + bytes(round_up(len(self.desc), 4) - len(self.desc)))


@dataclass(frozen=True)
class CoreSegment:
    """One mapping dumped as PT_LOAD: its first ``len(data)`` bytes of ``size`` (by default
    all of it)."""

    address: int
    data: bytes
    flags: int = c.PF_R | c.PF_W
    size: int | None = None


def elf_core(notes: list[CoreNote], segments: list[CoreSegment]) -> bytes:
    """The bytes of an ET_CORE file for EM_AARCH64."""
    phnum = 1 + len(segments)
    notes_bytes = b"".join(note.pack() for note in notes)
    notes_offset = Elf64Ehdr.SIZE + phnum * Elf64Phdr.SIZE
    data_offset = round_up(notes_offset + len(notes_bytes), PAGE_SIZE)
    ident = (b"\x7fELF" + bytes([c.ELFCLASS64, c.ELFDATA2LSB, c.EV_CURRENT, c.ELFOSABI_NONE])
             + bytes(8))
    header = Elf64Ehdr(e_ident=ident, e_type=c.ET_CORE, e_machine=c.EM_AARCH64,
                       e_version=c.EV_CURRENT, e_entry=0, e_phoff=Elf64Ehdr.SIZE, e_shoff=0,
                       e_flags=0, e_ehsize=Elf64Ehdr.SIZE, e_phentsize=Elf64Phdr.SIZE,
                       e_phnum=phnum, e_shentsize=0, e_shnum=0, e_shstrndx=0)
    program_headers = [Elf64Phdr(p_type=c.PT_NOTE, p_flags=0, p_offset=notes_offset, p_vaddr=0,
                                 p_paddr=0, p_filesz=len(notes_bytes), p_memsz=0, p_align=4)]
    offset = data_offset
    for segment in segments:
        program_headers.append(Elf64Phdr(p_type=c.PT_LOAD, p_flags=segment.flags,
                                         p_offset=offset, p_vaddr=segment.address, p_paddr=0,
                                         p_filesz=len(segment.data),
                                         p_memsz=segment.size or len(segment.data),
                                         p_align=PAGE_SIZE))
        offset = round_up(offset + len(segment.data), PAGE_SIZE)
    image = bytearray(header.pack() + b"".join(p.pack() for p in program_headers) + notes_bytes)
    for segment, phdr in zip(segments, program_headers[1:]):
        image.extend(bytes(phdr.p_offset - len(image)))
        image.extend(segment.data)
    return bytes(image)


class CoreDumpsMixin:
    """Writing core files.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel`: it uses the kernel's threads, engine and
    save areas directly.
    """

    def core_dump(self, process: Process, dumper: Thread, signo: int, siginfo: bytes) -> bytes:
        """The ELF core file of ``process`` killed by ``signo`` in ``dumper``."""
        others = [t for t in reversed(process.threads)
                  if t is not dumper and t.state is ThreadState.RUNNABLE]
        notes = []
        for index, thread in enumerate([dumper] + others):
            self._preserve(thread)
            cpu = thread.cpu
            pending = 0
            for queued in thread.pending:
                pending |= 1 << (queued.signo - 1)
            notes.append(CoreNote("CORE", c.NT_PRSTATUS, ElfPrstatus(
                si_signo=signo, si_code=0, si_errno=0, pr_cursig=signo, pr_sigpend=pending,
                pr_sighold=thread.blocked, pr_pid=thread.tid, pr_ppid=process.parent_pid,
                pr_pgrp=process.pid, pr_sid=process.pid, regs=tuple(cpu.x), sp=cpu.sp,
                pc=cpu.pc, pstate=cpu.pstate, pr_fpvalid=1).pack()))
            if index == 0:
                notes.append(CoreNote("CORE", c.NT_PRPSINFO, ElfPrpsinfo(
                    pr_state=0, pr_sname=ord("R"), pr_zomb=0, pr_nice=0, pr_flag=0, pr_uid=0,
                    pr_gid=0, pr_pid=process.pid, pr_ppid=process.parent_pid,
                    pr_pgrp=process.pid, pr_sid=process.pid,
                    pr_fname=process.name.encode()[:15], pr_psargs=process.name.encode()[:79])
                    .pack()))
                notes.append(CoreNote("CORE", c.NT_SIGINFO, siginfo))
                notes.append(CoreNote("CORE", c.NT_AUXV, self._auxv_bytes(process)))
                # No file-backed mappings: a zero count and the page size.
                notes.append(CoreNote("CORE", c.NT_FILE, (0).to_bytes(8, "little")
                                      + (4096).to_bytes(8, "little")))
            for regset in self.regsets.regsets[1:]:
                produced = regset.get(thread)
                if isinstance(produced, bytes):
                    notes.append(CoreNote(regset.core_name, regset.note_type,
                                          produced[:regset.max_bytes]))
        segments, budget = [], CORE_DUMP_LIMIT
        memory = process.mm.memory
        for base, size, readable in memory.ranges():
            dumped = min(size, budget) if readable else 0
            budget -= dumped
            segments.append(CoreSegment(base, bytes(memory.read(base, dumped)), size=size))
        return elf_core(notes, segments)
