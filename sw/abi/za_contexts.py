"""Virtual ZA contexts: threads' ZA kept resident in the engine's physical ZA contexts, and
private ZA contexts within a thread (docs/abi.md, "Virtual ZA contexts").

The engine has ``config.za_contexts`` physical ZA contexts, each a ZA array with its own
PSTATE.ZA, selected by :attr:`~zatile.sw.arch.engine.Engine.za_context`. The kernel multiplexes
*virtual* contexts on them, as the CX "state context virtualization" design does: a virtual
context is a thread and a selector (0 is the thread's own ZA; ``PR_ZATILE_ZA_OPEN`` makes more).

* A physical context holds one virtual context at a time (:attr:`ZaContextsMixin._resident`);
  while it does, the engine's copy is the authoritative one and the save area is stale.
* Switching threads leaves ZA where it is (only SVCR, Z/P and FPSR/FPCR are saved). A thread's
  first engine instruction after it is switched in traps (SME disabled, SMTC 0, as before);
  the trap handler selects the physical context that holds the thread's selected virtual
  context, or — when none does — takes a free one, else one holding a context with ZA off
  (nothing to store), else one holding ZA (storing it into its owner's save area): of those,
  the one whose thread the round-robin scheduler runs last, then the least recently used; and
  loads this one there. So a thread whose ZA stayed resident costs no ZA
  traffic, whatever ran in between.
* ``PR_ZATILE_ZA_SELECT`` changes the thread's selected context: when the new one is resident
  it is just selected in the engine; otherwise SME access is disabled and the next engine
  instruction traps and swaps it in.
* Whatever needs the save area current (signal frames, ptrace, core dumps, fork, VL changes)
  stores the resident copy first (the kernel's ``preserve``/``flush`` hooks); a thread that
  exits or execs just gives its physical contexts up.
"""

from __future__ import annotations

from zatile.sw.abi import constants as c
from zatile.sw.abi.task import ParkedZa, Thread
from zatile.sw.arch.asm import assemble_line

__all__ = ["ZaContextsMixin"]

_MRS_SVCR = assemble_line("mrs x0, svcr")
_SMSTART_ZA, _SMSTOP_ZA = assemble_line("smstart za"), assemble_line("smstop za")
_STR_ZA, _LDR_ZA = assemble_line("str za[w12, 0], [x0]"), assemble_line("ldr za[w12, 0], [x0]")


def _za_rows(word: int, address: int, svl_bytes: int) -> list[tuple[int, dict[str, int]]]:
    """``word`` (LDR or STR ZA[W12, 0]) for every row of a ZA save area at ``address``."""
    return [(word, {"rv": row, "rn": address + row * svl_bytes}) for row in range(svl_bytes)]


class ZaContextsMixin:
    """The residency of virtual ZA contexts in the engine's physical ones, and the
    ``PR_ZATILE_ZA_*`` prctl options.

    A mixin of :class:`~zatile.sw.abi.kernel.Kernel` (it uses the kernel's engine, heap,
    ``_kissue`` and statistics).
    """

    def _init_za_contexts(self) -> None:
        """Take the engine's physical contexts over: each holds nothing and has ZA off (an
        engine used before, not reset, may have ZA on in some), context 0 selected."""
        #: What each physical context holds: (thread, selector) or None.
        self._resident: list[tuple[Thread, int] | None] = [None] * self.config.za_contexts
        #: Physical contexts, least recently bound first.
        self._recency: list[int] = list(range(self.config.za_contexts))
        engine = self.engine
        engine.sme_enabled = True
        for slot in reversed(self._recency):
            engine.za_context = slot
            if engine.svcr & c.SVCR_ZA_MASK:
                self._kissue(_SMSTOP_ZA)
        engine.sme_enabled = False

    # ------------------------------------------------------------------- residency
    def _slot_of(self, thread: Thread, selector: int) -> int | None:
        """The physical context holding ``thread``'s virtual context ``selector``, or None."""
        for slot, holder in enumerate(self._resident):
            if holder is not None and holder[0] is thread and holder[1] == selector:
                return slot
        return None

    def _slots_of(self, thread: Thread) -> list[int]:
        return [slot for slot, holder in enumerate(self._resident)
                if holder is not None and holder[0] is thread]

    def _use_slot(self, slot: int) -> None:
        """Select ``slot`` in the engine and mark it the most recently used."""
        self.engine.za_context = slot
        self._recency.remove(slot)
        self._recency.append(slot)

    @staticmethod
    def _save_area(thread: Thread, selector: int) -> tuple[int, bool]:
        """The save area of a virtual context and its SVCR.ZA as the kernel last saved it."""
        fp = thread.fp
        if selector == fp.za_selector:
            return fp.sme_state, bool(fp.svcr & c.SVCR_ZA_MASK)
        parked = fp.za_parked[selector]
        return parked.state, parked.za

    @staticmethod
    def _set_saved_za(thread: Thread, selector: int, za_on: bool) -> None:
        fp = thread.fp
        if selector == fp.za_selector:
            fp.svcr = fp.svcr & ~c.SVCR_ZA_MASK | (c.SVCR_ZA_MASK if za_on else 0)
        else:
            fp.za_parked[selector].za = za_on

    def _za_store(self, slot: int) -> None:
        """Store the ZA (and SVCR.ZA) the physical context ``slot`` holds into its virtual
        context's save area; the engine's selection and enable are left as they were."""
        thread, selector = self._resident[slot]
        engine = self.engine
        selected, enabled = engine.za_context, engine.sme_enabled
        if not enabled:
            engine.sme_enabled = True
        engine.za_context = slot
        za_on = bool(self._kissue(_MRS_SVCR).scalar & c.SVCR_ZA_MASK)
        address, _ = self._save_area(thread, selector)
        if za_on:
            svl_bytes = thread.fp.sme_vl
            self._kstream(_za_rows(_STR_ZA, address, svl_bytes))
            self.stats.za_bytes_saved += svl_bytes * svl_bytes
            self.stats.save_instructions += svl_bytes
        self._set_saved_za(thread, selector, za_on)
        engine.za_context = selected
        if not enabled:
            engine.sme_enabled = False

    def _za_evict(self, slot: int) -> None:
        """Store what ``slot`` holds and free it."""
        self._za_store(slot)
        self._resident[slot] = None
        self.stats.za_evictions += 1

    def _za_writeback(self, thread: Thread) -> None:
        """Make the save area of ``thread``'s selected context current (it stays resident)."""
        slot = self._slot_of(thread, thread.fp.za_selector)
        if slot is not None:
            self._za_store(slot)

    def _za_evict_thread(self, thread: Thread) -> None:
        """Store and free every physical context holding one of ``thread``'s contexts."""
        for slot in self._slots_of(thread):
            self._za_evict(slot)

    def _za_evict_all(self) -> None:
        """Store and free every physical context (before the engine's SVL changes)."""
        for slot, holder in enumerate(self._resident):
            if holder is not None:
                self._za_evict(slot)

    def _za_forget(self, thread: Thread, selector: int | None = None) -> None:
        """Free the physical contexts of ``thread`` (of one ``selector``) without storing."""
        for slot in self._slots_of(thread):
            if selector is None or self._resident[slot][1] == selector:
                self._resident[slot] = None

    def _eviction_cost(self, slot: int) -> tuple[int, int]:
        """What freeing ``slot`` costs, lowest first: free; holding a context with ZA off
        (nothing to store; the bit saved last is the context's, as only the current thread's
        selected context changes it, and that is the one being bound); holding ZA. Within each,
        the context whose thread the scheduler will run last (so round-robin threads on fewer
        physical contexts than themselves do not each evict the next one to run)."""
        holder = self._resident[slot]
        if holder is None:
            return (0, 0)
        return (2 if self._save_area(*holder)[1] else 1, -self._turns_until_run(holder[0]))

    def _turns_until_run(self, thread: Thread) -> int:
        """How many other threads run before ``thread`` when the scheduler takes them in turn
        by TID from the current one (0 for the current thread; threads that cannot run, last)."""
        if thread is self.current:
            return 0
        if not thread.runnable:
            return len(self.threads) + 1
        turns = sorted(tid for tid, each in self.threads.items() if each.runnable)
        if self.current is None:
            return turns.index(thread.tid)
        later = [tid for tid in turns if tid > self.current.tid]
        return (later + [tid for tid in turns if tid < self.current.tid]).index(thread.tid) + 1

    def _za_bind(self, thread: Thread) -> None:
        """Select the physical context of ``thread``'s selected virtual context, loading it
        if none holds it into the one cheapest to free (:meth:`_eviction_cost`; the least
        recently used of equals), evicting what that holds.

        Called with SME access enabled and the engine at the thread's vector length.
        """
        selector = thread.fp.za_selector
        slot = self._slot_of(thread, selector)
        if slot is not None:
            self._use_slot(slot)
            self.stats.za_resident_hits += 1
            return
        slot = min(self._recency, key=self._eviction_cost)
        if self._resident[slot] is not None:
            self._za_evict(slot)
        self._use_slot(slot)
        address, za_on = self._save_area(thread, selector)
        count = 0
        if bool(self.engine.svcr & c.SVCR_ZA_MASK) != za_on:
            self._kissue(_SMSTART_ZA if za_on else _SMSTOP_ZA)
            count += 1
        if za_on:
            svl_bytes = thread.fp.sme_vl
            self._kstream(_za_rows(_LDR_ZA, address, svl_bytes))
            count += svl_bytes
            self.stats.za_bytes_restored += svl_bytes * svl_bytes
        self.stats.restore_instructions += count
        self.stats.za_loads += 1
        self._resident[slot] = (thread, selector)

    # --------------------------------------------------------------------- prctl
    def _za_prctl(self, thread: Thread, option: int, arg2: int, arg3: int, arg4: int,
                  arg5: int) -> int:
        """``PR_ZATILE_ZA_OPEN`` / ``_SELECT`` / ``_CLOSE`` (the caller has entered the kernel)."""
        if option == c.PR_ZATILE_ZA_OPEN:
            return self._za_open(thread) if not arg2 | arg3 | arg4 | arg5 else -c.EINVAL
        if arg3 | arg4 | arg5 or arg2 >= 1 << 31:
            return -c.EINVAL
        if option == c.PR_ZATILE_ZA_SELECT:
            return self._za_select(thread, arg2)
        return self._za_close(thread, arg2)

    def _za_open(self, thread: Thread) -> int:
        ops, fp = self.ops, thread.fp
        if len(fp.za_parked) >= c.ZA_CONTEXTS_PER_THREAD:
            return -c.ENOSPC
        # Every context has a save area once there are several (selecting swaps them).
        if not ops.sme_alloc(fp, flush=False):
            return -c.ENOMEM
        state = self.heap.alloc(ops.sme_state_size(fp))
        if state is None:
            return -c.ENOMEM
        selector = fp.za_next_selector
        fp.za_next_selector += 1
        fp.za_parked[selector] = ParkedZa(state)
        return selector

    def _za_select(self, thread: Thread, selector: int) -> int:
        fp = thread.fp
        previous = fp.za_selector
        if selector == previous:
            return previous
        if selector not in fp.za_parked:
            return -c.EINVAL
        live = self._live and self._holder is thread
        if live:
            self._engine_save(thread)       # SVCR.ZA of the context being left, FPSR, FPCR
        parked = fp.za_parked.pop(selector)
        fp.za_parked[previous] = ParkedZa(fp.sme_state, bool(fp.svcr & c.SVCR_ZA_MASK))
        fp.sme_state = parked.state
        fp.za_selector = selector
        fp.svcr = fp.svcr & ~c.SVCR_ZA_MASK | (c.SVCR_ZA_MASK if parked.za else 0)
        self.stats.za_selects += 1
        if live:
            slot = self._slot_of(thread, selector)
            if slot is not None:
                self._use_slot(slot)
                self.stats.za_resident_hits += 1
            else:                           # the next engine instruction traps and loads it
                self._live = False
                self.engine.sme_enabled = False
        return previous

    def _za_close(self, thread: Thread, selector: int) -> int:
        fp = thread.fp
        if selector == fp.za_selector and selector:
            return -c.EBUSY
        parked = fp.za_parked.pop(selector, None) if selector else None
        if parked is None:
            return -c.EINVAL
        self._za_forget(thread, selector)
        self.heap.free(parked.state)
        return 0
