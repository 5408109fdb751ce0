"""The floating-point outer-product array: FMOPA/FMOPS (.S, .D, widening) and BFMOPA/BFMOPS.

One operation updates a whole ZA tile: every element ``(row, col)`` of the tile gets
``acc + Zn[row]·Zm[col]`` (or the 2-way dot for the widening forms, docs/isa.md, "Widening outer products") from its
own pipelined unit, so the array accepts one outer product per cycle — or, with fewer rows per
cycle (``config.array_rows``, "Passes" below), from a unit shared by the rows of its slot.

Tile interface
--------------
The array reads the accumulator itself, through :func:`AccumulatorReadSignature` (the same
members as ``ZaStorage.tile_read``: the rows of one pass), combinationally, *in the cycle it
accepts the operation* (or its pass). It hands back the updated rows of the pass on its
``result`` stream, with one write enable per 32-bit lane (a .D element enables both of its
lanes); that payload has the members of ``ZaStorage.tile_write``, which the consumer must
perform in the cycle of the transfer. Inactive elements have their enables clear.

Back-to-back operations on one tile
-----------------------------------
The accumulator is read at acceptance and every unit needs it at most one stage later, so an
operation can only start once every earlier operation on an overlapping tile has written back —
with one exception, forwarding: if the operation in the output register (being written back in
this very cycle) targets the *same* tile with the same element size, its enabled results replace
the stale ZA values on the way in. The array enforces this itself by holding ``op.ready`` low
(interlock); the consumer needs no hazard logic for outer products. Hence, with ``latency`` = 4:

* independent tiles: 1 outer product per cycle;
* the same tile: one every ``latency`` = 4 cycles (so a kernel rotating over the four .S tiles
  runs at full rate);
* overlapping tiles of different sizes (``za0.s`` after ``za4.d``): one every ``latency + 1``.

Passes
------
With ``config.array_rows`` below a .S tile's rows, the units cover that many rows (slots): an
operation is offered in ``passes`` consecutive cycles (a .D tile has half the rows, so half the
passes, at least one), pass ``p`` computing tile rows ``p·array_rows`` on, and ``op.ready`` is
high only for the first pass (the operation is held for the rest). Each pass reads its rows of
the accumulator when it starts and is written back ``latency`` cycles later, on its rows only.
Passes of one tile touch different rows, so they never wait for each other; a pass waits for
an earlier operation's pass on the same rows as above, and forwards only from the output
register's pass on the same rows. Independent tiles then start one outer product every
``passes`` cycles, and one tile one every ``max(passes, latency)``.

Other ZA writers and readers (loads, stores, MOVA, ZERO, the integer array) must stay away from
the ZA rows an in-flight operation will write; ``busy`` lists them.
"""

from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from zatile.sw.arch.config import EngineConfig

from zatile.hw._common import ConfigComponent, check_config
from zatile.hw.library import ModuleLibrary, place
from zatile.hw.za_storage import PassShape

from zatile.hw.fp.bf_dot_add import BfDotAdd
from zatile.hw.fp.dot_add16 import FpDotAdd16
from zatile.hw.fp.format import FP32, FP64
from zatile.hw.fp.mul_add import FpMulAdd

__all__ = ["AccumulatorReadSignature", "FpOuterProductArray", "FpOuterProductKind",
           "FpcrFieldsLayout", "OuterProductLayout", "PassRowsLayout", "TileUpdateLayout",
           "VectorLayout"]


class FpOuterProductKind(enum.Enum, shape=2):
    """Which floating-point outer product: element formats of the tile and of Zn/Zm."""

    FMOPA_S = 0    # fp32 += fp32 · fp32                         (F32F32)
    FMOPA_D = 1    # fp64 += fp64 · fp64                         (F64F64)
    FMOPA_H_S = 2  # fp32 += fp16·fp16 + fp16·fp16, two roundings (F16F32)
    BFMOPA = 3     # fp32 += bf16·bf16 + bf16·bf16, round to odd  (B16F32)


#: The EngineConfig feature that provides each kind.
KIND_FEATURES = {
    FpOuterProductKind.FMOPA_S: "F32F32",
    FpOuterProductKind.FMOPA_D: "F64F64",
    FpOuterProductKind.FMOPA_H_S: "F16F32",
    FpOuterProductKind.BFMOPA: "B16F32",
}


def VectorLayout(config: EngineConfig) -> data.UnionLayout:
    """A Z register (or ZA row) at the largest SVL, viewed as halves, singles or doubles."""
    svl = config.max_svl
    return data.UnionLayout({"h": data.ArrayLayout(16, svl // 16),
                             "s": data.ArrayLayout(32, svl // 32),
                             "d": data.ArrayLayout(64, svl // 64)})


def PassRowsLayout(config: EngineConfig) -> data.ArrayLayout:
    """The rows of one pass of a tile (``config.array_rows``, a whole .S tile of MAXB/4 rows by
    default): row ``s`` is tile row ``pass_ * array_rows + s``; a .D tile has MAXB/8 rows."""
    return data.ArrayLayout(VectorLayout(config), config.array_rows)


def FpcrFieldsLayout() -> data.StructLayout:
    """The FPCR fields the outer products use: RMode [23:22], FZ [24], FZ16 [19]."""
    return data.StructLayout({"rmode": 2, "fz": 1, "fz16": 1})


def OuterProductLayout(config: EngineConfig) -> data.StructLayout:
    """One outer product.

    ``tile`` is ZAda (0-3 for .S, 0-7 for .D). ``pn``/``pm`` have one bit per byte as in a P
    register (element ``e`` of size ``E`` bytes is active if bit ``e*E`` is set); bits beyond the
    effective SVL must be clear. ``subtract`` selects the MOPS form.
    """
    return data.StructLayout({
        "kind": FpOuterProductKind,
        "subtract": 1,
        "tile": 3,
        "zn": VectorLayout(config),
        "zm": VectorLayout(config),
        "pn": config.max_svl // 8,
        "pm": config.max_svl // 8,
        "fpcr": FpcrFieldsLayout(),
    })


def AccumulatorReadSignature(config: EngineConfig) -> wiring.Signature:
    """Combinational read of the rows of one pass (:func:`PassRowsLayout`) of a .S (``double``
    = 0) or .D (``double`` = 1) tile, reader's side."""
    return wiring.Signature({"double": Out(1), "tile": Out(3), "pass_": Out(PassShape(config)),
                             "rows": In(PassRowsLayout(config))})


def TileUpdateLayout(config: EngineConfig) -> data.StructLayout:
    """The updated rows of one pass of a tile: ``rows`` as in :func:`PassRowsLayout`,
    ``lanes[s]`` bit ``l`` enables the 32-bit lane ``l`` of row ``s`` (clear beyond a .D
    tile)."""
    lanes = config.max_svl // 32
    return data.StructLayout({"double": 1, "tile": 3, "pass_": PassShape(config),
                              "rows": PassRowsLayout(config),
                              "lanes": data.ArrayLayout(lanes, config.array_rows)})


def _MetadataLayout(config: EngineConfig) -> data.StructLayout:
    """What travels down the pipeline beside the units: where the result goes (the tile, the
    pass, the lane enables of each slot's row)."""
    lanes = config.max_svl // 32
    return data.StructLayout({"kind": FpOuterProductKind, "double": 1, "tile": 3,
                              "pass_": PassShape(config),
                              "lanes": data.ArrayLayout(lanes, config.array_rows)})


def _za_row_groups(double, tile):
    """ZA rows of a tile as a mask over (row mod 8): a .S tile k holds rows k and k+4 mod 8."""
    return Mux(double, Const(1, 8) << tile, Const(0b0001_0001, 8) << tile[:2])


class FpOuterProductArray(ConfigComponent):
    """A tile of FP units applying one outer product per cycle (see the module documentation).

    Parameters
    ----------
    config : EngineConfig
        ``max_svl`` sizes the tile (a .S tile is MAXB/4 × MAXB/4 elements); the features
        F32F32, F64F64, F16F32 and B16F32 select which units exist. An operation of a kind whose
        feature is absent writes nothing.
    library : ModuleLibrary, optional
        Where the units come from when generating Verilog (:mod:`hw.library`): one module per
        unit kind, instantiated per element. Without it the units are ordinary submodules.

    Attributes
    ----------
    op : In(stream.Signature(OuterProductLayout(config)))
        Outer products. ``op.ready`` is low while the output is stalled or while the operation
        depends on an earlier one that cannot be forwarded.
    acc : Out(AccumulatorReadSignature(config))
        Accumulator read of the rows of the pass offered, sampled when the pass is accepted.
    result : Out(stream.Signature(TileUpdateLayout(config)))
        The updated rows of each pass, ``latency`` cycles after its acceptance, in order;
        write each to ZA in the cycle it transfers.
    busy : Signal(8), out
        Bit ``r`` set: an accepted operation will still write ZA rows congruent to ``r`` mod 8.

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`EngineConfig`.
    ValueError
        If ``config`` has none of the floating-point outer-product features.
    """

    #: Cycles from accepting an operation to presenting its result (every unit's latency).
    latency = FpMulAdd.latency

    @staticmethod
    def check_arguments(config: EngineConfig, library: ModuleLibrary | None = None) -> None:
        check_config(config)
        if not any(config.has(feature) for feature in KIND_FEATURES.values()):
            raise ValueError(f"config has no floating-point outer-product feature "
                             f"({', '.join(KIND_FEATURES.values())}): {sorted(config.features)!r}")

    def __init__(self, config: EngineConfig, library: ModuleLibrary | None = None):
        self._library = library
        kinds = tuple(kind for kind, feature in KIND_FEATURES.items() if config.has(feature))
        self._kinds = kinds
        super().__init__(config, {
            "op": In(stream.Signature(OuterProductLayout(config))),
            "acc": Out(AccumulatorReadSignature(config)),
            "result": Out(stream.Signature(TileUpdateLayout(config))),
            "busy": Out(8),
        })

    @property
    def kinds(self) -> tuple[FpOuterProductKind, ...]:
        """The operation kinds this array implements."""
        return self._kinds

    def elaborate(self, platform):
        m = Module()
        config = self._config
        dimension = config.max_svl // 32  # .S tile rows and columns
        rows_per_pass = config.array_rows
        passes = dimension // rows_per_pass
        double_passes = max(dimension // 2 // rows_per_pass, 1)
        assert FpMulAdd.latency == FpDotAdd16.latency == BfDotAdd.latency == self.latency

        # ---- passes: an operation is held while its later passes are offered
        holding = Signal()
        held = Signal(OuterProductLayout(config))
        held_pass = Signal(PassShape(config))
        operation = Signal(OuterProductLayout(config))     # the pass offered this cycle
        pass_ = Signal.like(held_pass)
        m.d.comb += [operation.eq(Mux(holding, held, self.op.payload)),
                     pass_.eq(Mux(holding, held_pass, 0))]
        kind = operation.kind

        # ---- pipeline control: a metadata register per stage, moving with the units
        advance = Signal()
        accept = Signal()
        hazard = Signal()
        m.d.comb += [
            advance.eq(~self.result.valid | self.result.ready),
            accept.eq((holding | self.op.valid) & advance & ~hazard),
            self.op.ready.eq(~holding & advance & ~hazard),
        ]
        stages = [Signal(_MetadataLayout(config), name=f"stage{index}_metadata")
                  for index in range(1, self.latency + 1)]
        stage_valid = [Signal(name=f"stage{index}_valid") for index in range(1, self.latency)]
        stage_valid.append(self.result.valid)

        # ---- accept: decode, accumulator read with forwarding, hazards
        double = kind == FpOuterProductKind.FMOPA_D
        tile = Mux(double, operation.tile, operation.tile[:2])
        last = pass_ == Mux(double, double_passes, passes) - 1
        with m.If(accept):
            m.d.sync += [holding.eq(~last), held.eq(operation), held_pass.eq(pass_ + 1)]
        m.d.comb += [self.acc.double.eq(double), self.acc.tile.eq(tile),
                     self.acc.pass_.eq(pass_)]

        metadata = Signal(_MetadataLayout(config))
        m.d.comb += [metadata.kind.eq(kind), metadata.double.eq(double), metadata.tile.eq(tile),
                     metadata.pass_.eq(pass_)]
        self._drive_lanes(m, metadata.lanes, operation, pass_)

        output = stages[-1]
        same_tile = [(stage.double == double) & (stage.tile == tile) for stage in stages]
        forward = self.result.valid & same_tile[-1] & (output.pass_ == pass_)
        accumulator = Signal(data.ArrayLayout(VectorLayout(config), rows_per_pass))
        for slot in range(rows_per_pass):
            read = self.acc.rows[slot]
            lane_mask = Cat(bit.replicate(32) for bit in output.lanes[slot])
            m.d.comb += accumulator[slot].eq(Mux(
                forward,
                (read.as_value() & ~lane_mask)
                | (self.result.payload.rows[slot].as_value() & lane_mask),
                read))

        row_groups = _za_row_groups(double, tile)
        stage_row_groups = [_za_row_groups(stage.double, stage.tile) for stage in stages]
        # The passes of one tile touch different rows: no hazard between them.
        blocking = [valid & (groups & row_groups).any() & ~(same & (stage.pass_ != pass_))
                    for valid, groups, same, stage
                    in zip(stage_valid, stage_row_groups, same_tile, stages)]
        # The output stage alone can forward, and only to the same rows.
        m.d.comb += hazard.eq(Cat(*blocking[:-1]).any() | (blocking[-1] & ~forward))
        busy = Mux(holding, _za_row_groups(double, tile), 0)
        for valid, groups in zip(stage_valid, stage_row_groups):
            busy = busy | Mux(valid, groups, 0)
        m.d.comb += self.busy.eq(busy)

        with m.If(advance):
            m.d.sync += [stages[0].eq(metadata), stage_valid[0].eq(accept)]
            for index in range(1, self.latency):
                m.d.sync += [stages[index].eq(stages[index - 1]),
                             stage_valid[index].eq(stage_valid[index - 1])]

        # ---- the units, one per element of a pass and kind
        outputs = {}
        for kind_ in self._kinds:
            outputs[kind_] = self._units(m, kind_, operation, pass_, accumulator, accept)

        # ---- result: the registered metadata and the selected units' outputs, a row per slot
        m.d.comb += [self.result.payload.double.eq(output.double),
                     self.result.payload.tile.eq(output.tile),
                     self.result.payload.pass_.eq(output.pass_),
                     self.result.payload.lanes.eq(output.lanes)]
        rows = self.result.payload.rows
        with m.Switch(output.kind):
            for kind_, results in outputs.items():
                with m.Case(kind_):
                    for (slot, col), bits in results.items():
                        element = (rows[slot].d if kind_ == FpOuterProductKind.FMOPA_D
                                   else rows[slot].s)[col]
                        m.d.comb += element.eq(bits)
        return m

    def _drive_lanes(self, m, lanes, operation, pass_):
        """Write enables per 32-bit lane of each slot's row in pass ``pass_``, from the
        predicates (docs/isa.md, "Predication")."""
        dimension = self._config.max_svl // 32
        rows_per_pass = self._config.array_rows
        pn, pm = operation.pn, operation.pm
        with m.Switch(operation.kind):
            for kind in self._kinds:
                with m.Case(kind):
                    for slot in range(rows_per_pass):
                        for col in range(dimension):
                            enables = []
                            for row in range(slot, dimension, rows_per_pass):
                                if kind == FpOuterProductKind.FMOPA_D:
                                    # Lanes 2c and 2c+1 of row r hold .D element (r, c).
                                    enable = (pn[8 * row] & pm[8 * (col // 2)]
                                              if row < dimension // 2 else Const(0))
                                elif kind == FpOuterProductKind.FMOPA_S:
                                    enable = pn[4 * row] & pm[4 * col]
                                else:
                                    enable = ((pn[4 * row] & pm[4 * col])
                                              | (pn[4 * row + 2] & pm[4 * col + 2]))
                                enables.append(enable)
                            m.d.comb += lanes[slot][col].eq(_of_pass(enables, pass_))

    def _units(self, m, kind, operation, pass_, accumulator, accept):
        """Instantiate and feed the units of one kind; return {(slot, col): result bits}.

        Every unit takes every operation, so that all pipelines move in step; the units of the
        other kinds see zeros instead of the operands (operand isolation: no toggling).
        """
        rows_per_pass = self._config.array_rows
        fpcr = operation.fpcr
        zn, zm, pn, pm = operation.zn, operation.zm, operation.pn, operation.pm
        subtract = operation.subtract
        if len(self._kinds) > 1:
            # Signals, not expressions: every unit slices them.
            selected = operation.kind == kind
            isolated = []
            for value in (zn, zm, accumulator, pn, pm, subtract):
                signal = Signal.like(value, name=f"{kind.name.lower()}_{len(isolated)}")
                m.d.comb += signal.eq(Mux(selected, Value.cast(value), 0))
                isolated.append(signal)
            zn, zm, accumulator, pn, pm, subtract = isolated
        results = {}
        if kind in (FpOuterProductKind.FMOPA_S, FpOuterProductKind.FMOPA_D):
            fmt = FP32 if kind == FpOuterProductKind.FMOPA_S else FP64
            rows = zn.s if fmt is FP32 else zn.d
            cols = zm.s if fmt is FP32 else zm.d
            dimension = self._config.max_svl // fmt.width
            for slot in range(min(rows_per_pass, dimension)):
                row_element = Signal(fmt.width, name=f"{fmt.name}_row_{slot}")
                m.d.comb += row_element.eq(_of_pass(
                    [rows[row] for row in range(slot, dimension, rows_per_pass)], pass_))
                # FPNeg of the Zn element for MOPS.
                multiplicand = row_element ^ (subtract << (fmt.width - 1))
                for col in range(dimension):
                    unit = place(m, self._library, f"{fmt.name}_{slot}_{col}",
                                 f"zatile_fp_mul_add_{fmt.name}", lambda fmt=fmt: FpMulAdd(fmt))
                    accumulator_element = (accumulator[slot].s if fmt is FP32
                                           else accumulator[slot].d)[col]
                    m.d.comb += [
                        unit.i.valid.eq(accept),
                        unit.i.payload.addend.eq(accumulator_element),
                        unit.i.payload.multiplicand.eq(multiplicand),
                        unit.i.payload.multiplier.eq(cols[col]),
                        unit.i.payload.rounding.as_value().eq(fpcr.rmode),
                        unit.i.payload.flush.eq(fpcr.fz),
                        unit.o.ready.eq(self.result.ready),
                    ]
                    results[slot, col] = unit.o.payload
            return results

        dimension = self._config.max_svl // 32
        widening = kind == FpOuterProductKind.FMOPA_H_S
        for slot in range(rows_per_pass):
            # Inactive halves count as +0; MOPS negates only the active row elements.
            multiplicands = []
            for k in range(2):
                multiplicand = Signal(16, name=f"{kind.name.lower()}_row_{slot}_{k}")
                m.d.comb += multiplicand.eq(_of_pass(
                    [Mux(pn[4 * row + 2 * k], zn.h[2 * row + k] ^ (subtract << 15), 0)
                     for row in range(slot, dimension, rows_per_pass)], pass_))
                multiplicands.append(multiplicand)
            for col in range(dimension):
                multipliers = [Mux(pm[4 * col + 2 * k], zm.h[2 * col + k], 0) for k in range(2)]
                unit = place(m, self._library, f"{'fp16' if widening else 'bf16'}_{slot}_{col}",
                             "zatile_fp16_dot_add" if widening else "zatile_bf16_dot_add",
                             FpDotAdd16 if widening else BfDotAdd)
                m.d.comb += [
                    unit.i.valid.eq(accept),
                    unit.i.payload.addend.eq(accumulator[slot].s[col]),
                    unit.i.payload.multiplicands[0].eq(multiplicands[0]),
                    unit.i.payload.multiplicands[1].eq(multiplicands[1]),
                    unit.i.payload.multipliers[0].eq(multipliers[0]),
                    unit.i.payload.multipliers[1].eq(multipliers[1]),
                    unit.o.ready.eq(self.result.ready),
                ]
                if widening:
                    m.d.comb += [unit.i.payload.rounding.as_value().eq(fpcr.rmode),
                                 unit.i.payload.flush.eq(fpcr.fz),
                                 unit.i.payload.flush_half.eq(fpcr.fz16)]
                results[slot, col] = unit.o.payload
        return results


def _of_pass(values: list, pass_: Value):
    """``values[pass_]``: the value of the row a slot computes in pass ``pass_`` (the one value
    when the slot has one row)."""
    return values[0] if len(values) == 1 else Array(values)[pass_]
