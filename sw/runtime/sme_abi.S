// The SME ABI support routines (AAPCS64 "SME support routines"), for static musl programs.
//
// Then the streaming-compatible __arm_sc_memcpy/memmove/memset/memchr.
//
// Each routine keeps the registers its contract preserves: the scratch registers used are
// x14-x17 (the routines that preserve X1-X15 use only x16/x17 besides x0). None uses an FP or
// Advanced SIMD instruction, so all are streaming-compatible on a CPU without FEAT_SME_FA64.
//
// SME availability is AT_HWCAP2 & HWCAP2_SME, read once by a constructor into
// __zatile_sme_available (compiler-rt reads the same bit through __aarch64_cpu_features).

    .arch armv9-a+sme

    .bss
    .p2align 3
__zatile_sme_available:
    .byte 0

    .section .init_array, "aw"
    .p2align 3
    .xword __zatile_sme_init

    .text

// Load __zatile_sme_available into \reg (a W register) using only \reg's X register.
.macro LOAD_HAS_SME xreg, wreg
    adrp \xreg, __zatile_sme_available
    ldrb \wreg, [\xreg, :lo12:__zatile_sme_available]
.endm

    .p2align 2
    .type __zatile_sme_init, %function
__zatile_sme_init:
    stp x29, x30, [sp, #-16]!
    mov x29, sp
    mov x0, #26                         // AT_HWCAP2
    bl getauxval
    ubfx x0, x0, #23, #1                // HWCAP2_SME
    adrp x1, __zatile_sme_available
    strb w0, [x1, :lo12:__zatile_sme_available]
    ldp x29, x30, [sp], #16
    ret
    .size __zatile_sme_init, . - __zatile_sme_init

// do_abort: leave streaming mode (abort may use FP/SIMD), then abort(). Never returns.
    .p2align 2
    .type __zatile_sme_abort, %function
__zatile_sme_abort:
    stp x29, x30, [sp, #-16]!
    mov x29, sp
    bl __arm_sme_state
    tbz x0, #0, 1f
    smstop sm
1:  bl abort
    .size __zatile_sme_abort, . - __zatile_sme_abort

// X0 = (has SME) << 63 | (has TPIDR2) << 62 | PSTATE.ZA << 1 | PSTATE.SM; X1 = TPIDR2_EL0.
    .globl __arm_sme_state
    .p2align 2
    .type __arm_sme_state, %function
__arm_sme_state:
    mov x0, xzr
    mov x1, xzr
    LOAD_HAS_SME x16, w16
    cbz w16, 1f
    mrs x0, svcr
    and x0, x0, #3
    orr x0, x0, #0xc000000000000000
    mrs x1, tpidr2_el0
1:  ret
    .size __arm_sme_state, . - __arm_sme_state

// Commit a lazy save: store the first num_za_save_slices ZA rows to za_save_buffer.
// TPIDR2_EL0 and PSTATE.ZA are left as they are. Preserves X0-X13.
    .globl __arm_tpidr2_save
    .p2align 2
    .type __arm_tpidr2_save, %function
__arm_tpidr2_save:
    LOAD_HAS_SME x16, w16
    cbz w16, 2f
    mrs x16, tpidr2_el0
    cbz x16, 2f
    ldrh w14, [x16, #10]                // reserved bytes 10-15 must be zero
    cbnz w14, 3f
    ldr w14, [x16, #12]
    cbnz w14, 3f
    ldrh w14, [x16, #8]                 // num_za_save_slices
    cbz w14, 2f
    ldr x16, [x16]                      // za_save_buffer
    cbz x16, 2f
    mov x15, xzr
1:  str za[w15, 0], [x16]
    addsvl x16, x16, #1
    add x15, x15, #1
    cmp x14, x15
    b.ne 1b
2:  ret
3:  b __zatile_sme_abort
    .size __arm_tpidr2_save, . - __arm_tpidr2_save

// Reload ZA rows from the TPIDR2 block in X0 after a committed lazy save (ZA must be on).
// Aborts if TPIDR2_EL0 is not null or the block's reserved bytes are not zero.
    .globl __arm_tpidr2_restore
    .p2align 2
    .type __arm_tpidr2_restore, %function
__arm_tpidr2_restore:
    mrs x14, tpidr2_el0
    cbnz x14, 3f
    ldrh w14, [x0, #10]
    cbnz w14, 3f
    ldr w14, [x0, #12]
    cbnz w14, 3f
    ldr x16, [x0]                       // za_save_buffer
    cbz x16, 2f
    ldrh w14, [x0, #8]                  // num_za_save_slices
    cbz w14, 2f
    mov x15, xzr
1:  ldr za[w15, 0], [x16]
    addsvl x16, x16, #1
    add x15, x15, #1
    cmp x14, x15
    b.ne 1b
2:  ret
3:  b __zatile_sme_abort
    .size __arm_tpidr2_restore, . - __arm_tpidr2_restore

// As if: __arm_tpidr2_save(); TPIDR2_EL0 = 0; PSTATE.ZA = 0. Preserves X0-X13.
    .globl __arm_za_disable
    .p2align 2
    .type __arm_za_disable, %function
__arm_za_disable:
    LOAD_HAS_SME x16, w16
    cbz w16, 1f
    stp x29, x30, [sp, #-16]!
    mov x29, sp
    bl __arm_tpidr2_save
    msr tpidr2_el0, xzr
    smstop za
    ldp x29, x30, [sp], #16
1:  ret
    .size __arm_za_disable, . - __arm_za_disable

// The streaming VG (SVL bytes / 8) in streaming mode; 0 otherwise (no non-streaming SVE).
    .globl __arm_get_current_vg
    .p2align 2
    .type __arm_get_current_vg, %function
__arm_get_current_vg:
    mov x0, xzr
    LOAD_HAS_SME x17, w17
    cbz w17, 1f
    mrs x17, svcr
    tbz x17, #0, 1f
    cntd x0
1:  ret
    .size __arm_get_current_vg, . - __arm_get_current_vg

// Bytes __arm_sme_save needs: 32 + SVL.B * SVL.B with ZA active, 16 otherwise.
    .globl __arm_sme_state_size
    .p2align 2
    .type __arm_sme_state_size, %function
__arm_sme_state_size:
    mov x0, #16
    LOAD_HAS_SME x16, w16
    cbz w16, 1f
    mrs x16, svcr
    tbz x16, #1, 1f
    mrs x16, tpidr2_el0
    cbnz x16, 1f
    rdsvl x16, #1
    mul x0, x16, x16
    add x0, x0, #32
1:  ret
    .size __arm_sme_state_size, . - __arm_sme_state_size

// Save all ZA state to the buffer in X0 (16-byte aligned) lazily: the buffer's TPIDR2 block
// becomes TPIDR2_EL0 (ZA dormant). Layout: @0 VALID (bit 0), @16 TPIDR2 block, @32 ZA.
    .globl __arm_sme_save
    .p2align 2
    .type __arm_sme_save, %function
__arm_sme_save:
    tst x0, #0xf
    b.ne 2f
    stp xzr, xzr, [x0]
    LOAD_HAS_SME x16, w16
    cbz w16, 1f
    mrs x16, svcr
    tbz x16, #1, 1f
    mrs x16, tpidr2_el0
    cbnz x16, 1f
    mov x16, #1
    str x16, [x0]                       // VALID
    add x16, x0, #32
    rdsvl x17, #1
    stp x16, x17, [x0, #16]             // za_save_buffer, num_za_save_slices (reserved 0)
    add x16, x0, #16
    msr tpidr2_el0, x16
1:  ret
2:  b __zatile_sme_abort
    .size __arm_sme_save, . - __arm_sme_save

// Undo __arm_sme_save(X0): ZA on; reload it if the lazy save was committed; TPIDR2_EL0 = 0.
    .globl __arm_sme_restore
    .p2align 2
    .type __arm_sme_restore, %function
__arm_sme_restore:
    tst x0, #0xf
    b.ne 3f
    ldr x16, [x0]
    tbz x16, #0, 2f
    LOAD_HAS_SME x16, w16
    cbz w16, 3f
    mrs x16, tpidr2_el0
    cbnz x16, 1f                        // not committed: ZA still holds the contents
    mrs x16, svcr
    tbnz x16, #1, 3f                    // ZA active with TPIDR2 null: nothing to restore into
    smstart za
    stp x29, x30, [sp, #-48]!
    mov x29, sp
    stp x0, x14, [sp, #16]
    str x15, [sp, #32]
    add x0, x0, #16
    bl __arm_tpidr2_restore
    ldr x15, [sp, #32]
    ldp x0, x14, [sp, #16]
    ldp x29, x30, [sp], #48
1:  smstart za
    msr tpidr2_el0, xzr
2:  ret
3:  b __zatile_sme_abort
    .size __arm_sme_restore, . - __arm_sme_restore

// The streaming-compatible string routines: the C contracts of memcpy, memmove, memset and
// memchr, in general-register code only (legal in and out of streaming mode). Eight bytes at a
// time while at least eight remain, then bytes.

// void *__arm_sc_memcpy(void *dest, const void *src, size_t n)
    .globl __arm_sc_memcpy
    .p2align 2
    .type __arm_sc_memcpy, %function
__arm_sc_memcpy:
    mov x3, x0
1:  cmp x2, #8
    b.lo 2f
    ldr x4, [x1], #8
    str x4, [x3], #8
    sub x2, x2, #8
    b 1b
2:  cbz x2, 3f
    ldrb w4, [x1], #1
    strb w4, [x3], #1
    sub x2, x2, #1
    b 2b
3:  ret
    .size __arm_sc_memcpy, . - __arm_sc_memcpy

// void *__arm_sc_memmove(void *dest, const void *src, size_t n): backwards when dest overlaps
// the source from above.
    .globl __arm_sc_memmove
    .p2align 2
    .type __arm_sc_memmove, %function
__arm_sc_memmove:
    sub x3, x0, x1
    cmp x3, x2
    b.hs __arm_sc_memcpy                // dest - src >= n (unsigned): forward copy is safe
    add x1, x1, x2
    add x3, x0, x2
1:  cmp x2, #8
    b.lo 2f
    ldr x4, [x1, #-8]!
    str x4, [x3, #-8]!
    sub x2, x2, #8
    b 1b
2:  cbz x2, 3f
    ldrb w4, [x1, #-1]!
    strb w4, [x3, #-1]!
    sub x2, x2, #1
    b 2b
3:  ret
    .size __arm_sc_memmove, . - __arm_sc_memmove

// void *__arm_sc_memset(void *dest, int c, size_t n)
    .globl __arm_sc_memset
    .p2align 2
    .type __arm_sc_memset, %function
__arm_sc_memset:
    mov x3, x0
    and x1, x1, #0xff
    orr x1, x1, x1, lsl #8
    orr x1, x1, x1, lsl #16
    orr x1, x1, x1, lsl #32
1:  cmp x2, #8
    b.lo 2f
    str x1, [x3], #8
    sub x2, x2, #8
    b 1b
2:  cbz x2, 3f
    strb w1, [x3], #1
    sub x2, x2, #1
    b 2b
3:  ret
    .size __arm_sc_memset, . - __arm_sc_memset

// const void *__arm_sc_memchr(const void *s, int c, size_t n): the first byte equal to
// (unsigned char)c, or NULL.
    .globl __arm_sc_memchr
    .p2align 2
    .type __arm_sc_memchr, %function
__arm_sc_memchr:
    and w1, w1, #0xff
1:  cbz x2, 2f
    ldrb w3, [x0]
    cmp w3, w1
    b.eq 3f
    add x0, x0, #1
    sub x2, x2, #1
    b 1b
2:  mov x0, xzr
3:  ret
    .size __arm_sc_memchr, . - __arm_sc_memchr

    .section .note.GNU-stack, "", %progbits
