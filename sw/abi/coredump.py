"""ELF64 core files as ``binfmt_elf``'s ``elf_core_dump`` writes them for arm64.

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
from zatile.sw.abi.layouts import Elf64Ehdr, Elf64Nhdr, Elf64Phdr, round_up

__all__ = ["CoreNote", "CoreSegment", "elf_core", "PAGE_SIZE"]

PAGE_SIZE = 4096


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
    """One mapping dumped as PT_LOAD."""

    address: int
    data: bytes
    flags: int = c.PF_R | c.PF_W


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
                                         p_filesz=len(segment.data), p_memsz=len(segment.data),
                                         p_align=PAGE_SIZE))
        offset = round_up(offset + len(segment.data), PAGE_SIZE)
    image = bytearray(header.pack() + b"".join(p.pack() for p in program_headers) + notes_bytes)
    for segment, phdr in zip(segments, program_headers[1:]):
        image.extend(bytes(phdr.p_offset - len(image)))
        image.extend(segment.data)
    return bytes(image)
