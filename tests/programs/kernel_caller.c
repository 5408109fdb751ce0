// The kernel library's GEMMs called from ACLE C through their prototypes: from a plain caller,
// and from a caller whose ZA is live (the lazy-save scheme: the kernel commits the caller's
// save, the caller restores ZA afterwards), with a value in the callee-saved V8 across the call.
// Linked with the generated kernels (zatile.sw.kernels.library_source).
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>

void zatile_gemm_f32(const float *at, const float *b, float *c, uint64_t m, uint64_t n,
                     uint64_t k);
void zatile_gemm_acc_f32(const float *at, const float *b, float *c, uint64_t m, uint64_t n,
                         uint64_t k);

enum { M = 11, N = 13, K = 5 };
static float at[K * M], b[K * N], c[M * N + 1], expected[M * N];

static int check(const char *label) {
    int errors = c[M * N] != 77.0f;                // nothing stored past C
    for (int i = 0; i < M * N; i++)
        errors += c[i] != expected[i];
    printf("%s: %s\n", label, errors ? "FAILED" : "ok");
    return errors;
}

// A caller with live ZA: its ZA row `slice` must survive a call of the (private-ZA) kernel.
// (The slice is a parameter: with a constant one, clang 21 -O2 addresses it from a W12 it never
// sets, and does not set again after the call.)
__attribute__((noinline)) __arm_new("za") static int gemm_with_live_za(uint32_t slice)
    __arm_streaming {
    svbool_t all = svptrue_b32();
    svwrite_hor_za32_f32_m(1, slice, all, svdup_f32(6.5f));
    zatile_gemm_f32(at, b, c, M, N, K);
    float row[64];
    svst1_hor_za32(1, slice, all, row);
    int kept = 1;
    for (uint64_t i = 0; i < svcntw(); i++)
        kept &= row[i] == 6.5f;
    return kept;
}

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < K * M; i++)
        at[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int p = 0; p < K; p++)
                sum += at[p * M + i] * b[p * N + j];
            expected[i * N + j] = sum;
        }
    c[M * N] = 77.0f;
    int errors = 0;
    register float callee_saved __asm__("s8") = 1.25f;
    __asm__ volatile("" : "+w"(callee_saved));
    zatile_gemm_f32(at, b, c, M, N, K);
    __asm__ volatile("" : "+w"(callee_saved));
    errors += check("zatile_gemm_f32");
    printf("V8 across the call: %s\n", callee_saved == 1.25f ? "kept" : "LOST");
    errors += callee_saved != 1.25f;
    for (int i = 0; i < M * N; i++)
        expected[i] *= 2.0f;
    zatile_gemm_acc_f32(at, b, c, M, N, K);
    errors += check("zatile_gemm_acc_f32");
    for (int i = 0; i < M * N; i++)
        expected[i] /= 2.0f;
    int kept = gemm_with_live_za((uint32_t)argc + 2);   // slice 3
    errors += check("from a caller with live ZA");
    printf("the caller's ZA: %s\n", kept ? "kept" : "LOST");
    return errors || !kept;
}
