// Ways a program dies (including the SME runtime's abort cases), chosen by argv[1]; each must end with the same signal status on the
// model and on QEMU (128 + signal).
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void __arm_tpidr2_save(void) __arm_streaming_compatible;
void __arm_sme_save(void *buffer) __arm_streaming_compatible;

// A TPIDR2 block with a non-zero reserved byte: __arm_tpidr2_save must abort.
static struct { void *buffer; uint16_t slices; uint8_t reserved[6]; } bad_block = {0, 1, {1}};
static _Alignas(16) unsigned char save_buffer[64];

static void store_in_streaming_mode(int32_t *where) __arm_streaming {
    svst1_s32(svptrue_b32(), where, svdup_s32(1));
}

static void advanced_simd_in_streaming_mode(void) __arm_streaming {
    // Advanced SIMD is illegal in streaming mode without FEAT_SME_FA64: SIGILL.
    __asm__ volatile("add v0.4s, v0.4s, v0.4s" ::: "v0");
}

static float scalar_fp_in_streaming_mode(float x) __arm_streaming {
    float y;
    // Scalar floating point is legal in streaming mode.
    __asm__ volatile("fadd %s0, %s1, %s1" : "=w"(y) : "w"(x));
    return y;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "";
    printf("dying by %s\n", how);
    fflush(stdout);
    if (!strcmp(how, "segv"))
        *(volatile int *)16 = 1;
    else if (!strcmp(how, "engine-segv"))
        store_in_streaming_mode((int32_t *)16);
    else if (!strcmp(how, "neon"))
        advanced_simd_in_streaming_mode();
    else if (!strcmp(how, "abort"))
        abort();
    else if (!strcmp(how, "tpidr2-reserved")) {
        __asm__ volatile("msr tpidr2_el0, %0" ::"r"(&bad_block));
        __arm_tpidr2_save();
    } else if (!strcmp(how, "sme-save-misaligned"))
        __arm_sme_save(save_buffer + 8);
    else if (!strcmp(how, "fp")) {
        printf("%.1f\n", (double)scalar_fp_in_streaming_mode(1.25f));
        return 0;
    }
    printf("still alive\n");
    return 9;
}
