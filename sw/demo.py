"""The main job: run the shipped int8 GEMM example and check it against numpy."""

from __future__ import annotations

from importlib import resources

import numpy as np

from zatile.sim.state import ArchState, Memory
from zatile.sw.backends import run_program

__all__ = ["EXAMPLE", "gemm_state", "run_demo"]

#: The shipped example program (SVL 512: one 16x16 int32 tile, K = 16).
EXAMPLE = "gemm_s8.s"
SVL = 512
A_BASE, B_BASE, C_BASE = 0x10000, 0x20000, 0x30000


def gemm_state(a: np.ndarray, b: np.ndarray) -> ArchState:
    """The initial state of the example: packed operands in memory, pointers in x0-x2."""
    dim = SVL // 32
    if a.shape != (dim, 16) or b.shape != (16, dim):
        raise ValueError(f"operands must be {dim}x16 and 16x{dim}, not {a.shape} and {b.shape}")
    # SMOPA .S multiplies 4 consecutive bytes of row r of Zn with 4 of column c of Zm:
    # vector kb holds A[r, 4kb:4kb+4] for each r (and B[4kb:4kb+4, c] for each c).
    a_packed = np.concatenate([a[:, 4 * kb:4 * kb + 4].reshape(-1) for kb in range(4)])
    b_packed = np.concatenate([b[4 * kb:4 * kb + 4, :].T.reshape(-1) for kb in range(4)])
    state = ArchState(svl=SVL)
    state.memory = Memory({A_BASE: a_packed.view(np.uint8), B_BASE: b_packed.view(np.uint8),
                           C_BASE: np.zeros(dim * dim * 4, np.uint8)})
    state.x[0:3] = (A_BASE, B_BASE, C_BASE)
    state.x[12:16] = (0, 4, 8, 12)
    return state


def run_demo(backend: str = "model", seed: int = 2026) -> int:
    """Run the example on ``backend``; print the check against numpy. Returns an exit status."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    source = resources.files("zatile.sw.examples").joinpath(EXAMPLE).read_text()
    outcome = run_program(backend, source, gemm_state(a, b))
    c = outcome.final.memory.read(C_BASE, 16 * 16 * 4).view(np.int32).reshape(16, 16)
    expected = a.astype(np.int32) @ b.astype(np.int32)
    print(f"zatile demo: {EXAMPLE} on the {backend} backend at SVL {SVL}: "
          f"{len(outcome.outcomes)} instructions, {len(outcome.trapped)} trapped")
    print("C = A x B (int8 -> int32), first rows:")
    for row in c[:4]:
        print("  " + " ".join(f"{v:7d}" for v in row[:8]) + " ...")
    if outcome.trapped or not np.array_equal(c, expected):
        wrong = int(np.count_nonzero(c != expected))
        print(f"MISMATCH against numpy: {wrong} of 256 elements differ")
        return 1
    print("matches numpy (a.astype(int32) @ b.astype(int32)): all 256 elements equal")
    return 0
