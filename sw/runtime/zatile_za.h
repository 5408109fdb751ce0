/*
 * Virtual ZA contexts: private ZA state for code that keeps data in ZA across its own calls.
 *
 * zatile extensions, not Linux: the three prctl options below exist only in zatile's kernel
 * model (docs/abi.md, "Virtual ZA contexts"). On Linux or QEMU they fail with EINVAL.
 *
 * The model is the "state context virtualization" of CX (Composable Custom Extensions): a
 * thread owns logical ZA contexts, each with its own ZA array and its own PSTATE.ZA (SVCR.ZA),
 * and the kernel multiplexes them on the engine's physical ZA contexts (EngineConfig's
 * za_contexts). PSTATE.SM and the Z and P registers stay one per thread. Selecting a context
 * that is resident in the engine is cheap; otherwise the first SME instruction after the
 * selection traps and the kernel swaps the context in (evicting another one to memory).
 * Selector 0 is the thread's own initial context and always exists; a freshly opened context
 * has ZA off. Contexts belong to the thread that opened them.
 *
 *   PR_ZATILE_ZA_OPEN    prctl(PR_ZATILE_ZA_OPEN, 0, 0, 0, 0): a new private context; returns
 *                        its selector (>= 1). ENOMEM: no kernel memory; ENOSPC: the thread has
 *                        ZATILE_ZA_MAX_OPEN contexts open already; EINVAL: a non-zero argument.
 *   PR_ZATILE_ZA_SELECT  prctl(PR_ZATILE_ZA_SELECT, selector, 0, 0, 0): makes `selector` the
 *                        thread's current context; returns the previously selected selector
 *                        (>= 0). EINVAL: a selector the thread has not opened.
 *   PR_ZATILE_ZA_CLOSE   prctl(PR_ZATILE_ZA_CLOSE, selector, 0, 0, 0): frees the context;
 *                        returns 0. EINVAL: selector 0 or one not open; EBUSY: the selected one.
 *
 * The functions are thin wrappers of prctl linked into every `zatile cc` program: they return
 * -1 and set errno on an error, like libc. They are system calls, so they are ordinary
 * non-streaming functions (a system call ends streaming mode; from streaming code the compiler
 * brackets the call with SMSTOP/SMSTART). Call them where ZA is not live in the caller, as a
 * private-ZA function does for its own state:
 *
 *     int previous = zatile_za_select(mine);
 *     ... SMSTART ZA, work on ZA (kept from the last call), SMSTOP SM only ...
 *     zatile_za_select(previous);             // the caller's ZA and PSTATE.ZA are back
 *
 * Never from a function with ZA state (__arm_inout("za"), __arm_new("za"), ...): its compiler-
 * managed lazy save (TPIDR2_EL0) knows nothing of a change of context.
 */
#ifndef ZATILE_ZA_H
#define ZATILE_ZA_H

#define PR_ZATILE_ZA_OPEN 0x5A410001
#define PR_ZATILE_ZA_SELECT 0x5A410002
#define PR_ZATILE_ZA_CLOSE 0x5A410003

/* Contexts a thread may have open besides its initial one (selector 0). */
#define ZATILE_ZA_MAX_OPEN 64

#ifdef __cplusplus
extern "C" {
#endif

/* A new ZA context for the calling thread: its selector (>= 1), or -1 and errno. */
int zatile_za_open(void);
/* Make `selector` current: the previously selected selector (>= 0), or -1 and errno. */
int zatile_za_select(int selector);
/* Free the context `selector` (not 0, not the selected one): 0, or -1 and errno. */
int zatile_za_close(int selector);

#ifdef __cplusplus
}
#endif

#endif /* ZATILE_ZA_H */
