"""The vocabulary every other part of zatile speaks (imports nothing else of the project).

* :mod:`.isa` — the instruction table, its syntax, decoding and operands;
* :mod:`.asm` — the assembler and disassembler built on it;
* :mod:`.config` — :class:`~.config.EngineConfig`, what one engine implements;
* :mod:`.constants` — architectural constants (SVCR bits, SME trap codes, FPSR reset value);
* :mod:`.engine` — the engine interface a CPU drives, and the result of one instruction.
"""
