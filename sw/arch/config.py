"""The one configuration object shared by the RTL generator, the reference model and the driver.

An :class:`EngineConfig` says which streaming vector lengths an implementation supports, which
optional SME features it has, how wide its memory bus is and how many physical ZA contexts it
holds. Every other part of zatile derives its parameters from one instance of it, so the RTL, the
model and the kernel model can never disagree about what the engine is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "FEATURES",
    "ISSUE_LANES",
    "SVL_CHOICES",
    "MAX_ZA_CONTEXTS",
    "EngineConfig",
]

#: Every streaming vector length the architecture allows, in bits.
SVL_CHOICES: tuple[int, ...] = (128, 256, 512, 1024, 2048)
#: The most physical ZA contexts an engine may have (``EngineConfig.za_contexts``).
MAX_ZA_CONTEXTS = 16

#: Optional SME features, named as in ID_AA64SMFR0_EL1 (docs/isa.md, "ID registers").
FEATURES: tuple[str, ...] = ("I8I32", "I16I64", "F32F32", "F64F64", "F16F32", "B16F32")

#: The most instructions one transfer of the engine's issue port (and of its result port) carries,
#: and its queues take and give per cycle (docs/architecture.md, "Decoupled execution"); an
#: engine has this many lanes or one (``EngineConfig.issue_lanes``). Not architectural.
ISSUE_LANES = 2

# ID_AA64SMFR0_EL1 field for each feature: (bit position, value when present).
_SMFR0_FIELDS: dict[str, tuple[int, int]] = {
    "I16I64": (52, 0xF),
    "F64F64": (48, 0x1),
    "I8I32": (36, 0xF),
    "F16F32": (35, 0x1),
    "B16F32": (34, 0x1),
    "F32F32": (32, 0x1),
}


@dataclass(frozen=True)
class EngineConfig:
    """Parameters of one zatile engine.

    Parameters
    ----------
    max_svl : int
        Largest supported streaming vector length in bits; sizes the ZA storage and Z/P files.
    supported_svls : tuple of int, optional
        Every SVL (bits) the implementation supports. Defaults to all powers of two from 128 up
        to ``max_svl``. Must contain ``max_svl``.
    features : frozenset of str
        Optional features, a subset of :data:`FEATURES`. Defaults to all of them.
    mem_data_width : int, optional
        Memory data bus width in bits. Defaults to ``max_svl`` (one ZA slice per beat).
    za_contexts : int
        Number of physical ZA state contexts in the engine.
    queue_depth : int
        Instructions each of the engine's two queues holds between the issue port and
        execution (the execution queue and the load queue, docs/architecture.md, "Decoupled
        execution"); a power of two from :data:`ISSUE_LANES` to 64. Not architectural. The
        default, 16, is the smallest that runs the GEMM inner loop of ``tb/bench.py`` at one
        outer product per cycle (8 ran it at 0.69).
    mem_outstanding : int
        Memory beats the load/store unit may have requested and not yet seen answered, from 1
        to 16. Not architectural.
    array_rows : int, optional
        Rows of a 32-bit-element tile that each outer-product array computes per cycle: a power
        of two from 1 to ``max_svl // 32``, the default (a whole tile per cycle). With fewer,
        an outer product takes ``max_svl // 32 // array_rows`` cycles on that many times fewer
        multipliers and FP units (the FPGA area knob, ``zatile fpga --lanes``; a 64-bit tile
        has half the rows, and takes at most as many rows per cycle). Not architectural.
    vector_bits_per_cycle : int, optional
        Bits of a vector the vector unit's ALU, shifter and floating-point compare unit make
        per cycle: a power of two from 64 to ``max_svl``, the default (a whole vector per
        cycle). With fewer, their instructions take ``SVL / vector_bits_per_cycle`` cycles on
        that many times fewer element datapaths (the FPGA area knob ``--vector-bits``). Not
        architectural.
    issue_lanes : int
        Instructions one transfer of the issue port (and of the result port) carries: 1 or
        :data:`ISSUE_LANES`, the default. Each lane has a decoder of its own; the SoC wrapper's
        control block issues one instruction per transfer, so one lane loses it nothing (the
        FPGA area knob ``--issue-lanes``). Not architectural.

    Raises
    ------
    ValueError
        If any parameter is outside what the architecture or the RTL allows; the message quotes
        the bad value.
    """

    max_svl: int = 512
    supported_svls: tuple[int, ...] | None = None
    features: frozenset[str] = field(default_factory=lambda: frozenset(FEATURES))
    mem_data_width: int | None = None
    za_contexts: int = 1
    queue_depth: int = 16
    mem_outstanding: int = 4
    array_rows: int | None = None
    vector_bits_per_cycle: int | None = None
    issue_lanes: int = ISSUE_LANES

    def __post_init__(self) -> None:
        if self.max_svl not in SVL_CHOICES:
            raise ValueError(
                f"SVL must be a power of two between 128 and 2048 bits, not {self.max_svl!r}")
        if self.supported_svls is None:
            object.__setattr__(self, "supported_svls",
                               tuple(s for s in SVL_CHOICES if s <= self.max_svl))
        else:
            svls = tuple(sorted(set(self.supported_svls)))
            for svl in svls:
                if svl not in SVL_CHOICES or svl > self.max_svl:
                    raise ValueError(
                        f"supported SVL {svl!r} is not a power of two between 128 and "
                        f"max_svl={self.max_svl}")
            if self.max_svl not in svls:
                raise ValueError(
                    f"supported_svls {svls!r} must include max_svl={self.max_svl}")
            object.__setattr__(self, "supported_svls", svls)
        features = frozenset(self.features)
        unknown = sorted(features - set(FEATURES))
        if unknown:
            raise ValueError(f"unknown SME feature(s) {unknown!r}; known: {', '.join(FEATURES)}")
        object.__setattr__(self, "features", features)
        if self.mem_data_width is None:
            object.__setattr__(self, "mem_data_width", self.max_svl)
        width = self.mem_data_width
        if not isinstance(width, int) or width < 64 or width > self.max_svl or width & (width - 1):
            raise ValueError(
                f"memory data width must be a power of two between 64 and max_svl="
                f"{self.max_svl} bits, not {width!r}")
        if not isinstance(self.za_contexts, int) or not 1 <= self.za_contexts <= MAX_ZA_CONTEXTS:
            raise ValueError(f"za_contexts must be between 1 and {MAX_ZA_CONTEXTS}, "
                             f"not {self.za_contexts!r}")
        depth = self.queue_depth
        if not isinstance(depth, int) or not ISSUE_LANES <= depth <= 64 or depth & (depth - 1):
            raise ValueError(f"queue_depth must be a power of two from {ISSUE_LANES} to 64, "
                             f"not {depth!r}")
        if not isinstance(self.mem_outstanding, int) or not 1 <= self.mem_outstanding <= 16:
            raise ValueError(
                f"mem_outstanding must be between 1 and 16, not {self.mem_outstanding!r}")
        rows = self.max_svl // 32
        if self.array_rows is None:
            object.__setattr__(self, "array_rows", rows)
        if not isinstance(self.array_rows, int) or not 1 <= self.array_rows <= rows \
                or self.array_rows & (self.array_rows - 1):
            raise ValueError(f"array_rows must be a power of two from 1 to max_svl/32={rows}, "
                             f"not {self.array_rows!r}")
        if self.vector_bits_per_cycle is None:
            object.__setattr__(self, "vector_bits_per_cycle", self.max_svl)
        bits = self.vector_bits_per_cycle
        if not isinstance(bits, int) or not 64 <= bits <= self.max_svl or bits & (bits - 1):
            raise ValueError(f"vector_bits_per_cycle must be a power of two from 64 to max_svl="
                             f"{self.max_svl}, not {bits!r}")
        if not isinstance(self.issue_lanes, int) or self.issue_lanes not in (1, ISSUE_LANES):
            raise ValueError(f"issue_lanes must be 1 or {ISSUE_LANES}, not {self.issue_lanes!r}")

    @property
    def outer_products_per_cycle(self) -> float:
        """Outer products into 32-bit-element tiles each array starts per cycle at most."""
        return self.array_rows / (self.max_svl // 32)

    @property
    def min_svl(self) -> int:
        """Smallest supported SVL in bits."""
        return self.supported_svls[0]

    def has(self, feature: str) -> bool:
        """Whether ``feature`` (a name from :data:`FEATURES`, or ``None`` for base SME) is present."""
        return feature is None or feature in self.features

    def effective_svl(self, requested_bits: int) -> int:
        """The SVL an SMCR_ELx.LEN request selects (docs/isa.md, "Vector lengths").

        The largest supported length not above the request; the minimum supported length when
        the request is below all of them.
        """
        fitting = [s for s in self.supported_svls if s <= requested_bits]
        return fitting[-1] if fitting else self.min_svl

    def effective_svl_for_len(self, smcr_len: int) -> int:
        """The SVL selected by an SMCR_ELx.LEN field value (request = (LEN+1)*128 bits)."""
        if not 0 <= smcr_len <= 15:
            raise ValueError(f"SMCR.LEN is a 4-bit field, not {smcr_len!r}")
        return self.effective_svl((smcr_len + 1) * 128)

    @property
    def id_aa64smfr0(self) -> int:
        """ID_AA64SMFR0_EL1 as this engine reports it (FA64=0, SMEver=0: SME1 without FA64)."""
        value = 0
        for feature in self.features:
            position, field_value = _SMFR0_FIELDS[feature]
            value |= field_value << position
        return value

    def to_json_dict(self) -> dict:
        """A JSON-serialisable description: the constructor arguments, and the ID register value
        they imply (written beside generated Verilog, passed to simulations).
        """
        return {
            "max_svl": self.max_svl,
            "supported_svls": list(self.supported_svls),
            "features": sorted(self.features),
            "mem_data_width": self.mem_data_width,
            "za_contexts": self.za_contexts,
            "queue_depth": self.queue_depth,
            "mem_outstanding": self.mem_outstanding,
            "array_rows": self.array_rows,
            "vector_bits_per_cycle": self.vector_bits_per_cycle,
            "issue_lanes": self.issue_lanes,
            "id_aa64smfr0_el1": f"0x{self.id_aa64smfr0:016x}",
        }

    @classmethod
    def from_json_dict(cls, fields: dict) -> "EngineConfig":
        """The configuration :meth:`to_json_dict` describes (derived keys are ignored; without
        ``array_rows``, ``vector_bits_per_cycle`` or ``issue_lanes``, written before they
        existed, the defaults).

        Raises
        ------
        ValueError
            If a constructor argument is missing or invalid.
        """
        try:
            return cls(max_svl=fields["max_svl"], supported_svls=tuple(fields["supported_svls"]),
                       features=frozenset(fields["features"]),
                       mem_data_width=fields["mem_data_width"], za_contexts=fields["za_contexts"],
                       queue_depth=fields["queue_depth"],
                       mem_outstanding=fields["mem_outstanding"],
                       array_rows=fields.get("array_rows"),
                       vector_bits_per_cycle=fields.get("vector_bits_per_cycle"),
                       issue_lanes=fields.get("issue_lanes", ISSUE_LANES))
        except (KeyError, TypeError) as problem:
            raise ValueError(f"not an engine configuration: {problem!r}") from None
