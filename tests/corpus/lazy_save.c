// Callers of ZA-sharing functions, the calls that make the compiler set up a lazy save: a
// non-streaming function with new ZA calls a streaming shared-ZA kernel and a normal
// (private-ZA) function in between; a shared-ZA non-streaming function does the same; a
// streaming-compatible shared-ZA function calls a private-ZA function.
#include <arm_sme.h>
#include <stdint.h>

void report_progress(uint64_t step);          // an ordinary function: private ZA, non-streaming
void accumulate_tile(const float *a, const float *b, uint64_t k) __arm_streaming __arm_inout("za");
void store_tile(float *c) __arm_streaming __arm_in("za");

__arm_new("za") void gemm_with_progress(const float *a, const float *b, float *c, uint64_t k,
                                        uint64_t blocks) {
    for (uint64_t blk = 0; blk < blocks; blk++) {
        accumulate_tile(a + blk * k * svcntsw(), b + blk * k * svcntsw(), k);
        report_progress(blk);
    }
    store_tile(c);
}

void continue_gemm(const float *a, const float *b, uint64_t k) __arm_inout("za") {
    report_progress(0);
    accumulate_tile(a, b, k);
    report_progress(1);
}

void tile_checkpoint(uint64_t step) __arm_streaming_compatible __arm_inout("za") {
    if (__arm_in_streaming_mode())
        report_progress(step);
    else
        report_progress(~step);
}

// A streaming kernel defined here too, so the callee side is in the corpus.
void accumulate_tile(const float *a, const float *b, uint64_t k) __arm_streaming
        __arm_inout("za") {
    svbool_t all = svptrue_b32();
    for (uint64_t p = 0; p < k; p++)
        svmopa_za32_f32_m(0, all, all, svld1_f32(all, a + p * svcntw()),
                          svld1_f32(all, b + p * svcntw()));
}
