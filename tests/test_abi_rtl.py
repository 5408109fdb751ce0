"""The kernel-ABI tests on the RTL engine: a bounded selection, run unchanged (tb/abi.py).

The same test functions as on the model (``tests/test_abi_*``), on an SVL 256 engine with
every feature (the build the RTL regression uses): the kernel's engine is the
Verilog under Verilator, its memory port served from the kernel's bus. The selection covers
every kernel path that drives the engine: lazy restore on the SME-disable trap, eager save on
switch-out through the engine's own STR instructions, signal frames with ZA and streaming SVE,
sigreturn, fork and clone, execve, prctl VL changes (the engine's SVL input), ptrace regsets,
core dumps, and a multi-threaded stress run. A second selection runs on an SVL 128 engine with
four physical ZA contexts (the engine's ``za_context`` input): threads' ZA kept resident, the
kernel's private ZA contexts, and the ABI rules with them.
"""

from __future__ import annotations

import json
from pathlib import Path

from zatile.sw.abi import constants as c
from zatile.sw.arch.config import EngineConfig
from zatile.tb.runner import build_engine

CONFIG = EngineConfig(max_svl=256)

#: (module, test function, arguments) run on the RTL.
SELECTION = [
    ("test_abi_signals", "test_za_regs", {"svl": 128}),
    ("test_abi_signals", "test_ssve_za_regs", {"svl": 256}),
    ("test_abi_signals", "test_sme_vl", {"svl": 128}),
    ("test_abi_signals", "test_signal_handler_entry_state", {"svl": 256}),
    ("test_abi_signals", "test_tpidr2_restore", {}),
    ("test_abi_signals", "test_sme_trap_za", {}),
    ("test_abi_signals", "test_sigreturn_of_an_unmodified_frame_is_accepted", {}),
    ("test_abi_process", "test_za_fork", {}),
    ("test_abi_process", "test_tpidr2_write_clone_read", {}),
    ("test_abi_process", "test_clone_vm_thread_has_za_off_and_the_parent_keeps_its_za", {}),
    ("test_abi_process", "test_syscall_abi", {"number": c.NR_GETPID,
                                              "svcr": c.SVCR_SM_MASK | c.SVCR_ZA_MASK,
                                              "svl": 256}),
    ("test_abi_process", "test_prctl_vl_change_drops_za_and_keeps_v", {"vl": 32}),
    ("test_abi_process", "test_first_sme_use_is_transparent", {}),
    ("test_abi_process", "test_user_instructions_cannot_reach_kernel_memory", {}),
    ("test_abi_process", "test_execve_resets_sme_state_and_tls", {"vl": 16}),
    ("test_abi_process", "test_core_dump_notes", {}),
    ("test_abi_ptrace", "test_za_ptrace", {}),
    ("test_abi_ptrace", "test_za_write_is_seen_by_the_tracee", {}),
    ("test_abi_ptrace", "test_ssve_ptrace_round_trip", {"vl": 32}),
    ("test_abi_ptrace", "test_fp_ptrace", {"svcr_in": 3, "write": "za_vl_change", "vl": 16}),
    ("test_abi_stress", "test_stress_every_thread_keeps_its_state", {"seed": 1}),
]


#: Virtual ZA contexts on an SVL 128 engine with four physical ZA contexts: the kernel keeps
#: threads' and private contexts' ZA resident in them (docs/abi.md, "Virtual ZA contexts").
ZA_CONTEXTS_CONFIG = EngineConfig(max_svl=128, za_contexts=4)
ZA_CONTEXTS_SELECTION = [
    ("test_abi_process", "test_context_switch_cost",
     {"svl": 128, "svcr": c.SVCR_ZA_MASK, "physical_za_contexts": 4}),
    ("test_abi_process", "test_za_fork", {}),
    ("test_abi_signals", "test_za_regs", {"svl": 128}),
    ("test_abi_ptrace", "test_za_ptrace", {}),
    ("test_abi_stress", "test_stress_at_one_vector_length", {"seed": 5}),
    ("test_za_contexts", "test_virtual_contexts_keep_their_own_za_and_za_bit", {"count": 4}),
    ("test_za_contexts", "test_the_context_api_errors", {"count": 4}),
    ("test_za_contexts", "test_fork_copies_every_virtual_context", {"count": 4}),
    ("test_za_contexts", "test_a_signal_frame_holds_the_selected_context", {"count": 4}),
    ("test_za_contexts", "test_a_tracer_sees_the_selected_context_of_a_resident_thread",
     {"count": 4}),
]


def run_selection(config: EngineConfig, selection: list, directory: Path) -> None:
    """Run ``selection`` on the RTL built for ``config``; fail with every failure."""
    build = build_engine(config)
    output = directory / "abi.json"
    settings = {"config": config.to_json_dict(), "tests": selection, "output": str(output)}
    tests_dir = Path(__file__).parent
    build.run("cocotb_abi", extra_env={
        "ZATILE_ABI": json.dumps(settings),
        "PYTHONPATH": str(tests_dir)},
        test_dir=directory, log_file=directory / "sim.log")
    outcomes = json.loads(output.read_text())
    assert len(outcomes) == len(selection)
    failed = [f"{o['test']}:\n{o['outcome']}" for o in outcomes if o["outcome"] != "passed"]
    assert not failed, "\n".join(failed)
    for outcome in outcomes:
        print(f"{outcome['test']}: {outcome['instructions']} engine instructions, "
              f"{outcome['cycles']} cycles, {outcome['seconds']} s")


def test_selected_abi_tests_pass_on_the_rtl(tmp_path):
    run_selection(CONFIG, SELECTION, tmp_path)


def test_virtual_za_contexts_on_the_rtl(tmp_path):
    run_selection(ZA_CONTEXTS_CONFIG, ZA_CONTEXTS_SELECTION, tmp_path)
