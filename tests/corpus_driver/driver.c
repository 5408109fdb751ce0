// Runs every function the ACLE corpus (tests/corpus/*.c) exports, as a program: main calls each
// one on small deterministic inputs (lengths that are not multiples of any vector length, so the
// predicated tails run) and prints one line per function, "name: <hash>", where the hash is
// FNV-1a 64 over every byte the call could touch: its inputs, its outputs, the guard bytes
// between them, its return value and, for ZA-sharing functions, the four 32-bit ZA tiles after
// the call. The hashes are compared between backends at the same SVL (buffer shapes such as a
// ZA tile, and the order of FP reductions, depend on the vector length).
//
// Usage: driver [perturb NAME]: with "perturb NAME", NAME's inputs come from another seed, so
// only NAME's line changes (the test that shows the comparison catches a difference).
#include <arm_sme.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the corpus, declared with its ACLE attributes ----

// autovec.c
__arm_locally_streaming void saxpy(float *restrict y, const float *restrict x, float a, int n);
__arm_locally_streaming float dot(const float *restrict x, const float *restrict y, int n);
__arm_locally_streaming int32_t dot_s8(const int8_t *restrict x, const int8_t *restrict y, int n);
void u8_to_f32_normalize(float *restrict y, const uint8_t *restrict x, float mean, float inv_std,
                         int n) __arm_streaming;
void clamp_s32(int32_t *restrict x, int32_t lo, int32_t hi, int n) __arm_streaming;
int64_t count_positive(const float *restrict x, int n) __arm_streaming;
float max_abs(const float *restrict x, int n) __arm_streaming;
void interleave_rgb(uint8_t *restrict out, const uint8_t *restrict r, const uint8_t *restrict g,
                    const uint8_t *restrict b, int n) __arm_streaming;
// elementwise.c
void bias_add_f32(float *x, const float *bias, uint64_t rows, uint64_t cols) __arm_streaming;
void relu_f32(float *x, uint64_t n) __arm_streaming;
void leaky_relu_f32(float *x, float slope, uint64_t n) __arm_streaming;
void clamp_f16(float16_t *x, float16_t lo, float16_t hi, uint64_t n) __arm_streaming;
void axpby_f32(float *y, const float *x, float a, float b, uint64_t n) __arm_streaming;
void relu_s32(int32_t *x, uint64_t n) __arm_streaming;
void abs_diff_u8(uint8_t *d, const uint8_t *a, const uint8_t *b, uint64_t n) __arm_streaming;
// gemm_bf16.c
__arm_new("za") void gemm_bf16(const bfloat16_t *a_packed, const bfloat16_t *b_packed,
                               const bfloat16_t *b_neg_packed, bfloat16_t *c,
                               uint64_t k_pairs) __arm_streaming;
// gemm_epilogue.c
void epilogue_bias_clamp(float *c, const float *bias, float lo, float hi, uint64_t m,
                         uint64_t n) __arm_streaming __arm_in("za");
void epilogue_columns_s32(int32_t *c_t, const int32_t *bias, uint64_t n) __arm_streaming
        __arm_in("za");
// gemm_f16.c
__arm_new("za") void gemm_f16_widening(const float16_t *a_packed, const float16_t *b_packed,
                                       float *c, uint64_t m, uint64_t n,
                                       uint64_t k_pairs) __arm_streaming;
void store_rows_f16(float16_t *c, uint64_t m, uint64_t n) __arm_streaming __arm_in("za");
// gemm_f32.c
__arm_new("za") void gemm_f32_2x2(const float *at, const float *b, float *c,
                                  uint64_t m, uint64_t n, uint64_t k) __arm_streaming;
void gemm_f32_accumulate(const float *at, const float *b, const float *d, float *c,
                         uint64_t k) __arm_streaming __arm_inout("za");
// gemm_i8.c
__arm_new("za") void gemm_s8(const int8_t *a_packed, const int8_t *b_packed, int32_t *c,
                             uint64_t k_quads) __arm_streaming;
__arm_new("za") void gemm_u8s8_zero_point(const uint8_t *a_packed, const int8_t *b_packed,
                                          const int32_t *b_col_offsets, int32_t *c,
                                          uint64_t k_quads, uint64_t n) __arm_streaming;
void row_sums_s8(const int32_t *a_sums, int32_t *out) __arm_streaming __arm_inout("za");
// lazy_save.c (report_progress and store_tile are the driver's, below)
__arm_new("za") void gemm_with_progress(const float *a, const float *b, float *c, uint64_t k,
                                        uint64_t blocks);
void continue_gemm(const float *a, const float *b, uint64_t k) __arm_inout("za");
void tile_checkpoint(uint64_t step) __arm_streaming_compatible __arm_inout("za");
void accumulate_tile(const float *a, const float *b, uint64_t k) __arm_streaming
        __arm_inout("za");
void report_progress(uint64_t step);
void store_tile(float *c) __arm_streaming __arm_in("za");
// reductions.c
float sum_f32(const float *x, uint64_t n) __arm_streaming;
float max_f32(const float *x, uint64_t n) __arm_streaming;
int64_t sum_s8(const int8_t *x, uint64_t n) __arm_streaming;
uint64_t sum_u32(const uint32_t *x, uint64_t n) __arm_streaming;
int32_t min_s16(const int16_t *x, uint64_t n) __arm_streaming;
uint64_t argmax_f32(const float *x, uint64_t n) __arm_streaming;
// requantize.c
void requantize_float(int8_t *out, const int32_t *acc, float scale, int32_t zero_point,
                      uint64_t n) __arm_streaming;
void requantize_fixed_point(int8_t *out, const int32_t *acc, int32_t multiplier, int32_t shift,
                            int32_t zero_point, uint64_t n) __arm_streaming;
void requantize_per_channel_u8(uint8_t *out, const int32_t *acc, const float *scales,
                               uint64_t n) __arm_streaming;
// softmax.c
void softmax_f32(float *x, uint64_t n) __arm_streaming;
void exp_normalize_f32(float *y, const float *x, float denom, uint64_t n) __arm_streaming;
float sum_exp_f16(const float16_t *x, uint64_t n) __arm_streaming;
// transpose_za.c
__arm_new("za") void transpose_f32(float *dst, const float *src, uint64_t rows,
                                   uint64_t cols) __arm_streaming;
__arm_new("za") void transpose_u16(uint16_t *dst, const uint16_t *src, uint64_t n) __arm_streaming;
__arm_new("za") void transpose_u8(uint8_t *dst, const uint8_t *src) __arm_streaming;
__arm_new("za") void transpose_f64_spill(double *dst, const double *src, uint8_t *spill)
        __arm_streaming;
// vla_loops.c
void add_s64(int64_t *c, const int64_t *a, const int64_t *b, int64_t n) __arm_streaming;
void mul_add_s16(int16_t *c, const int16_t *a, const int16_t *b, int32_t n) __arm_streaming;
void cast_s32_to_f64(double *y, const int32_t *x, int64_t n) __arm_streaming;
void cast_f32_to_f16(float16_t *y, const float *x, int64_t n) __arm_streaming;
void iota_scale_u32(uint32_t *y, uint32_t start, uint32_t step, int64_t n) __arm_streaming;
void where_f64(double *y, const double *x, const double *alt, int64_t n) __arm_streaming;

// ---- memory the calls touch, and its hash ----

enum {
    N = 37,                    // element count of the 1-D kernels: no vector length divides it
    SHORT = 19,                // the length of the three-input and 2-D kernels
    GUARD = 64,                // bytes of fill after every block, hashed to catch overruns
    FILL = 0xa5,
};

// Every block of the current call comes from here; the hash covers arena[0, used).
static _Alignas(64) uint8_t arena[1 << 18];
static size_t used;

static void *take(size_t bytes) {
    size_t rounded = (bytes + 63) / 64 * 64 + GUARD;
    if (used + rounded > sizeof arena) {
        fprintf(stderr, "driver: arena exhausted\n");
        _Exit(2);
    }
    uint8_t *block = arena + used;
    memset(block, FILL, rounded);
    used += rounded;
    return block;
}

// Record a return value (or anything else) so that the hash covers it.
static void keep(const void *value, size_t size) {
    memcpy(take(size), value, size);
}

static uint64_t fnv1a(const uint8_t *bytes, size_t size) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

// ---- deterministic inputs: a 64-bit LCG, seeded from the function's name ----

static uint64_t lcg;

static uint32_t next(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg >> 32);
}

// A uniform integer in [-limit, limit].
static int64_t within(int64_t limit) {
    uint64_t draw = ((uint64_t)next() << 32) | next();
    return (int64_t)(draw % (uint64_t)(2 * limit + 1)) - limit;
}

// Values in (-limit, limit) in steps of limit / 512, zero included.
static float *floats_within(size_t count, float limit) {
    float *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++)
        x[i] = (float)within(512) * (limit / 512);
    return x;
}

// Mostly in (-8, 8), with about one in eight values scaled by 2^16 or 2^-16.
static float *floats(size_t count) {
    float *x = floats_within(count, 8.0f);
    for (size_t i = 0; i < count; i++)
        switch (next() % 16) {
        case 0: x[i] *= 65536.0f; break;
        case 1: x[i] /= 65536.0f; break;
        default: break;
        }
    return x;
}

static double *doubles(size_t count) {
    double *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++)
        x[i] = (double)within(1 << 20) / 1024.0;
    return x;
}

static float16_t *halves(size_t count) {
    float16_t *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++)
        x[i] = (float16_t)((float)within(100) / 16.0f);
    return x;
}

// bf16 values: the upper halves of floats in (-8, 8).
static bfloat16_t *brain_halves(size_t count) {
    uint16_t *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++) {
        float value = (float)within(512) / 64.0f;
        uint32_t bits;
        memcpy(&bits, &value, sizeof bits);
        x[i] = (uint16_t)(bits >> 16);
    }
    return (bfloat16_t *)x;
}

#define INTEGERS(name, type)                                   \
    static type *name(size_t count, int64_t limit) {           \
        type *x = take(count * sizeof *x);                     \
        for (size_t i = 0; i < count; i++)                     \
            x[i] = (type)within(limit);                        \
        return x;                                              \
    }
INTEGERS(s8s, int8_t)
INTEGERS(s16s, int16_t)
INTEGERS(s32s, int32_t)
INTEGERS(s64s, int64_t)
#undef INTEGERS

// Unsigned values in [0, limit].
static uint8_t *u8s(size_t count, uint32_t limit) {
    uint8_t *x = take(count);
    for (size_t i = 0; i < count; i++)
        x[i] = (uint8_t)(next() % (limit + 1));
    return x;
}

static uint16_t *u16s(size_t count) {
    uint16_t *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++)
        x[i] = (uint16_t)next();
    return x;
}

static uint32_t *u32s(size_t count) {
    uint32_t *x = take(count * sizeof *x);
    for (size_t i = 0; i < count; i++)
        x[i] = next();
    return x;
}

// ---- ZA for the functions that share it: wrappers with new ZA ----

// Load or store the four 32-bit tiles, each svcntw() rows of svcntw() words, from/to tiles.
static void load_za32_tiles(const int32_t *tiles) __arm_streaming __arm_inout("za") {
    uint64_t vl = svcntw();
    svbool_t all = svptrue_b32();
    for (uint32_t r = 0; r < vl; r++) {
        svld1_hor_za32(0, r, all, tiles + (0 * vl + r) * vl);
        svld1_hor_za32(1, r, all, tiles + (1 * vl + r) * vl);
        svld1_hor_za32(2, r, all, tiles + (2 * vl + r) * vl);
        svld1_hor_za32(3, r, all, tiles + (3 * vl + r) * vl);
    }
}

static void store_za32_tiles(int32_t *tiles) __arm_streaming __arm_in("za") {
    uint64_t vl = svcntw();
    svbool_t all = svptrue_b32();
    for (uint32_t r = 0; r < vl; r++) {
        svst1_hor_za32(0, r, all, tiles + (0 * vl + r) * vl);
        svst1_hor_za32(1, r, all, tiles + (1 * vl + r) * vl);
        svst1_hor_za32(2, r, all, tiles + (2 * vl + r) * vl);
        svst1_hor_za32(3, r, all, tiles + (3 * vl + r) * vl);
    }
}

// Random ZA contents (four tiles of small floats) and a buffer for them after the call.
static const int32_t *za_before(void) {
    return (const int32_t *)floats_within(4 * svcntsw() * svcntsw(), 16.0f);
}

static int32_t *za_after(void) {
    return take(4 * svcntsw() * svcntsw() * sizeof(int32_t));
}

__arm_new("za") static void epilogue_bias_clamp_on(const int32_t *za, float *c, const float *bias,
                                                   float lo, float hi, uint64_t m, uint64_t n)
        __arm_streaming {
    load_za32_tiles(za);
    epilogue_bias_clamp(c, bias, lo, hi, m, n);
}

__arm_new("za") static void epilogue_columns_s32_on(const int32_t *za, int32_t *c_t,
                                                    const int32_t *bias, uint64_t n)
        __arm_streaming {
    load_za32_tiles(za);
    epilogue_columns_s32(c_t, bias, n);
}

__arm_new("za") static void store_rows_f16_on(const int32_t *za, float16_t *c, uint64_t m,
                                              uint64_t n) __arm_streaming {
    load_za32_tiles(za);
    store_rows_f16(c, m, n);
}

// Non-streaming with ZA: the calls of streaming functions switch mode and keep ZA.
__arm_new("za") static void gemm_f32_accumulate_on(const int32_t *za, int32_t *za_out,
                                                   const float *at, const float *b,
                                                   const float *d, float *c, uint64_t k) {
    load_za32_tiles(za);
    gemm_f32_accumulate(at, b, d, c, k);
    store_za32_tiles(za_out);
}

__arm_new("za") static void row_sums_s8_on(const int32_t *za, int32_t *za_out,
                                           const int32_t *a_sums, int32_t *out) __arm_streaming {
    load_za32_tiles(za);
    row_sums_s8(a_sums, out);
    store_za32_tiles(za_out);
}

__arm_new("za") static void continue_gemm_on(const int32_t *za, int32_t *za_out, const float *a,
                                             const float *b, uint64_t k) {
    load_za32_tiles(za);
    continue_gemm(a, b, k);
    store_za32_tiles(za_out);
}

// tile_checkpoint from a non-streaming and from a streaming caller (it reports ~step and step).
__arm_new("za") static void tile_checkpoint_non_streaming(const int32_t *za, int32_t *za_out) {
    load_za32_tiles(za);
    tile_checkpoint(1);
    store_za32_tiles(za_out);
}

__arm_new("za") static void tile_checkpoint_streaming(const int32_t *za, int32_t *za_out)
        __arm_streaming {
    load_za32_tiles(za);
    tile_checkpoint(2);
    store_za32_tiles(za_out);
}

__arm_new("za") static void accumulate_tile_on(const int32_t *za, int32_t *za_out, const float *a,
                                               const float *b, uint64_t k) __arm_streaming {
    load_za32_tiles(za);
    accumulate_tile(a, b, k);
    store_za32_tiles(za_out);
}

__attribute__((noinline)) static void add_outer_product(void) __arm_streaming __arm_inout("za") {
    svbool_t all = svptrue_b32();
    svmopa_za32_f32_m(0, all, all, svdup_f32(3.0f), svdup_f32(5.0f));
}

// A callee with new ZA: calling it from report_progress commits the caller's lazy save, and it
// leaves ZA holding other values, so a caller whose ZA is not restored prints another hash.
// It must not be a leaf function: clang 22 does not save LR in a leaf function with new ZA, whose
// prologue calls __arm_tpidr2_save when a lazy save is pending, so such a leaf returns to itself.
__arm_new("za") static void overwrite_za(void) __arm_streaming {
    add_outer_product();
}

// What lazy_save.c calls: an ordinary function (private ZA, non-streaming) that logs the step.
void report_progress(uint64_t step) {
    keep(&step, sizeof step);
    overwrite_za();
}

void store_tile(float *c) __arm_streaming __arm_in("za") {
    uint64_t vl = svcntw();
    for (uint32_t r = 0; r < vl; r++)
        svst1_hor_za32(0, r, svptrue_b32(), c + r * vl);
}

// ---- one driving function per corpus function ----

static void drive_saxpy(void) {
    float *y = floats(N);
    saxpy(y, floats(N), 0.75f, N);
}

static void drive_dot(void) {
    const float *x = floats(N), *y = floats(N);
    float result = dot(x, y, N);
    keep(&result, sizeof result);
}

static void drive_dot_s8(void) {
    const int8_t *x = s8s(N, 127), *y = s8s(N, 127);
    int32_t result = dot_s8(x, y, N);
    keep(&result, sizeof result);
}

static void drive_u8_to_f32_normalize(void) {
    float *y = take(N * sizeof *y);
    u8_to_f32_normalize(y, u8s(N, 255), 117.5f, 1.0f / 58.4f, N);
}

static void drive_clamp_s32(void) {
    clamp_s32(s32s(N, 2000), -1000, 1000, N);
}

static void drive_count_positive(void) {
    int64_t result = count_positive(floats(N), N);
    keep(&result, sizeof result);
}

static void drive_max_abs(void) {
    float result = max_abs(floats(N), N);
    keep(&result, sizeof result);
}

static void drive_interleave_rgb(void) {
    uint8_t *out = take(3 * SHORT);
    const uint8_t *r = u8s(SHORT, 255), *g = u8s(SHORT, 255), *b = u8s(SHORT, 255);
    interleave_rgb(out, r, g, b, SHORT);
}

static void drive_bias_add_f32(void) {
    float *x = floats(3 * SHORT);
    bias_add_f32(x, floats(SHORT), 3, SHORT);
}

static void drive_relu_f32(void) {
    relu_f32(floats(N), N);
}

static void drive_leaky_relu_f32(void) {
    leaky_relu_f32(floats(N), 0.125f, N);
}

static void drive_clamp_f16(void) {
    clamp_f16(halves(N), (float16_t)-2.5f, (float16_t)3.0f, N);
}

static void drive_axpby_f32(void) {
    float *y = floats(N);
    axpby_f32(y, floats(N), 1.5f, -0.75f, N);
}

static void drive_relu_s32(void) {
    relu_s32(s32s(N, INT32_MAX), N);
}

static void drive_abs_diff_u8(void) {
    uint8_t *d = take(N);
    const uint8_t *a = u8s(N, 255), *b = u8s(N, 255);
    abs_diff_u8(d, a, b, N);
}

static void drive_gemm_bf16(void) {
    uint64_t vl_s = svcntsw(), vl_h = svcntsh(), k_pairs = 3;
    const bfloat16_t *a = brain_halves(k_pairs * vl_h), *b = brain_halves(k_pairs * vl_h);
    const bfloat16_t *b_neg = brain_halves(k_pairs * vl_h);
    gemm_bf16(a, b, b_neg, take(vl_s * vl_s * sizeof(bfloat16_t)), k_pairs);
}

static void drive_epilogue_bias_clamp(void) {
    const int32_t *za = za_before();
    float *c = take(3 * 3 * sizeof *c);
    epilogue_bias_clamp_on(za, c, floats_within(3, 4.0f), -5.0f, 6.0f, 3, 3);
}

static void drive_epilogue_columns_s32(void) {
    const int32_t *za = s32s(4 * svcntsw() * svcntsw(), 1 << 20);
    int32_t *c_t = take(3 * svcntsw() * sizeof *c_t);
    epilogue_columns_s32_on(za, c_t, s32s(3, 1 << 20), 3);
}

static void drive_gemm_f16_widening(void) {
    uint64_t vl_h = svcntsh(), k_pairs = 3;
    const float16_t *a = halves(k_pairs * vl_h), *b = halves(k_pairs * vl_h);
    gemm_f16_widening(a, b, take(3 * 3 * sizeof(float)), 3, 3, k_pairs);
}

static void drive_store_rows_f16(void) {
    const int32_t *za = za_before();
    store_rows_f16_on(za, take(3 * 3 * sizeof(float16_t)), 3, 3);
}

static void drive_gemm_f32_2x2(void) {
    enum { M = 9, COLS = 11, K = 5 };
    const float *at = floats(K * M), *b = floats(K * COLS);
    gemm_f32_2x2(at, b, take(M * COLS * sizeof(float)), M, COLS, K);
}

static void drive_gemm_f32_accumulate(void) {
    uint64_t vl = svcntsw(), k = 3;
    const int32_t *za = za_before();
    const float *at = floats(k * vl), *b = floats(k * vl), *d = floats(k * vl);
    float *c = floats(vl * vl);
    gemm_f32_accumulate_on(za, za_after(), at, b, d, c, k);
}

static void drive_gemm_s8(void) {
    uint64_t vl_s = svcntsw(), vl_b = svcntsb(), k_quads = 2;
    const int8_t *a = s8s(k_quads * vl_b, 127), *b = s8s(k_quads * vl_b, 127);
    gemm_s8(a, b, take(vl_s * vl_s * sizeof(int32_t)), k_quads);
}

static void drive_gemm_u8s8_zero_point(void) {
    uint64_t vl_s = svcntsw(), vl_b = svcntsb(), k_quads = 2;
    const uint8_t *a = u8s(k_quads * vl_b, 255);
    const int8_t *b = s8s(k_quads * vl_b, 127);
    const int32_t *offsets = s32s(3, 1 << 16);
    gemm_u8s8_zero_point(a, b, offsets, take(vl_s * 3 * sizeof(int32_t)), k_quads, 3);
}

static void drive_row_sums_s8(void) {
    uint64_t vl = svcntsw();
    const int32_t *za = s32s(4 * vl * vl, 1 << 20), *a_sums = s32s(vl, 1 << 20);
    int32_t *out = take(vl * vl * sizeof *out);
    row_sums_s8_on(za, za_after(), a_sums, out);
}

static void drive_gemm_with_progress(void) {
    uint64_t vl = svcntsw(), k = 2, blocks = 2;
    const float *a = floats(blocks * k * vl), *b = floats(blocks * k * vl);
    gemm_with_progress(a, b, take(vl * vl * sizeof(float)), k, blocks);
}

static void drive_continue_gemm(void) {
    uint64_t vl = svcntsw(), k = 2;
    const int32_t *za = za_before();
    const float *a = floats(k * vl), *b = floats(k * vl);
    continue_gemm_on(za, za_after(), a, b, k);
}

static void drive_tile_checkpoint(void) {
    const int32_t *za = za_before();
    tile_checkpoint_non_streaming(za, za_after());
    tile_checkpoint_streaming(za, za_after());
}

static void drive_accumulate_tile(void) {
    uint64_t vl = svcntsw(), k = 3;
    const int32_t *za = za_before();
    const float *a = floats(k * vl), *b = floats(k * vl);
    accumulate_tile_on(za, za_after(), a, b, k);
}

static void drive_sum_f32(void) {
    float result = sum_f32(floats(N), N);
    keep(&result, sizeof result);
}

static void drive_max_f32(void) {
    float result = max_f32(floats(N), N);
    keep(&result, sizeof result);
}

static void drive_sum_s8(void) {
    int64_t result = sum_s8(s8s(N, 127), N);
    keep(&result, sizeof result);
}

static void drive_sum_u32(void) {
    uint64_t result = sum_u32(u32s(N), N);
    keep(&result, sizeof result);
}

static void drive_min_s16(void) {
    int32_t result = min_s16(s16s(N, 32767), N);
    keep(&result, sizeof result);
}

static void drive_argmax_f32(void) {
    uint64_t result = argmax_f32(floats(N), N);
    keep(&result, sizeof result);
}

static void drive_requantize_float(void) {
    int8_t *out = take(N);
    requantize_float(out, s32s(N, 20000), 0.0123f, -3, N);
}

static void drive_requantize_fixed_point(void) {
    int8_t *out = take(N);
    requantize_fixed_point(out, s32s(N, 8000), 1395864371, 5, 7, N);  // 0.65 in Q31
}

static void drive_requantize_per_channel_u8(void) {
    uint8_t *out = take(N);
    const int32_t *acc = s32s(N, 20000);
    requantize_per_channel_u8(out, acc, floats_within(N, 0.05f), N);
}

static void drive_softmax_f32(void) {
    softmax_f32(floats_within(N, 12.0f), N);
}

static void drive_exp_normalize_f32(void) {
    float *y = take(N * sizeof *y);
    exp_normalize_f32(y, floats_within(N, 20.0f), 3.5f, N);
}

static void drive_sum_exp_f16(void) {
    float result = sum_exp_f16(halves(N), N);
    keep(&result, sizeof result);
}

static void drive_transpose_f32(void) {
    enum { ROWS = 5, COLS = 7 };
    float *dst = take(ROWS * COLS * sizeof *dst);
    transpose_f32(dst, floats(ROWS * COLS), ROWS, COLS);
}

static void drive_transpose_u16(void) {
    enum { SIDE = 5 };
    uint16_t *dst = take(SIDE * SIDE * sizeof *dst);
    transpose_u16(dst, u16s(SIDE * SIDE), SIDE);
}

static void drive_transpose_u8(void) {
    uint64_t vl = svcntsb();
    uint8_t *dst = take(vl * vl);
    transpose_u8(dst, u8s(vl * vl, 255));
}

static void drive_transpose_f64_spill(void) {
    uint64_t vl = svcntsd(), bytes = svcntsb();
    double *dst = take(vl * vl * sizeof *dst);
    const double *src = doubles(vl * vl);
    transpose_f64_spill(dst, src, take(bytes * bytes));
}

static void drive_add_s64(void) {
    int64_t *c = take(N * sizeof *c);
    const int64_t *a = s64s(N, INT64_MAX / 2), *b = s64s(N, INT64_MAX / 2);
    add_s64(c, a, b, N);
}

static void drive_mul_add_s16(void) {
    int16_t *c = s16s(N, 32767);
    const int16_t *a = s16s(N, 300), *b = s16s(N, 300);
    mul_add_s16(c, a, b, N);
}

static void drive_cast_s32_to_f64(void) {
    double *y = take(N * sizeof *y);
    cast_s32_to_f64(y, s32s(N, INT32_MAX), N);
}

static void drive_cast_f32_to_f16(void) {
    float16_t *y = take(N * sizeof *y);
    cast_f32_to_f16(y, floats(N), N);
}

static void drive_iota_scale_u32(void) {
    uint32_t *y = take(N * sizeof *y);
    iota_scale_u32(y, 5, 3, N);
}

static void drive_where_f64(void) {
    double *y = take(N * sizeof *y);
    const double *x = doubles(N), *alt = doubles(N);
    where_f64(y, x, alt, N);
}

#define ENTRY(name) {#name, drive_##name}

static const struct {
    const char *name;
    void (*drive)(void);
} entries[] = {
    ENTRY(saxpy), ENTRY(dot), ENTRY(dot_s8), ENTRY(u8_to_f32_normalize), ENTRY(clamp_s32),
    ENTRY(count_positive), ENTRY(max_abs), ENTRY(interleave_rgb),
    ENTRY(bias_add_f32), ENTRY(relu_f32), ENTRY(leaky_relu_f32), ENTRY(clamp_f16),
    ENTRY(axpby_f32), ENTRY(relu_s32), ENTRY(abs_diff_u8),
    ENTRY(gemm_bf16),
    ENTRY(epilogue_bias_clamp), ENTRY(epilogue_columns_s32),
    ENTRY(gemm_f16_widening), ENTRY(store_rows_f16),
    ENTRY(gemm_f32_2x2), ENTRY(gemm_f32_accumulate),
    ENTRY(gemm_s8), ENTRY(gemm_u8s8_zero_point), ENTRY(row_sums_s8),
    ENTRY(gemm_with_progress), ENTRY(continue_gemm), ENTRY(tile_checkpoint),
    ENTRY(accumulate_tile),
    ENTRY(sum_f32), ENTRY(max_f32), ENTRY(sum_s8), ENTRY(sum_u32), ENTRY(min_s16),
    ENTRY(argmax_f32),
    ENTRY(requantize_float), ENTRY(requantize_fixed_point), ENTRY(requantize_per_channel_u8),
    ENTRY(softmax_f32), ENTRY(exp_normalize_f32), ENTRY(sum_exp_f16),
    ENTRY(transpose_f32), ENTRY(transpose_u16), ENTRY(transpose_u8), ENTRY(transpose_f64_spill),
    ENTRY(add_s64), ENTRY(mul_add_s16), ENTRY(cast_s32_to_f64), ENTRY(cast_f32_to_f16),
    ENTRY(iota_scale_u32), ENTRY(where_f64),
};

int main(int argc, char **argv) {
    const char *perturbed = NULL;
    if (argc == 3 && strcmp(argv[1], "perturb") == 0)
        perturbed = argv[2];
    else if (argc != 1) {
        fprintf(stderr, "usage: %s [perturb NAME]\n", argv[0]);
        return 2;
    }
    int perturbed_found = 0;
    for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++) {
        const char *name = entries[e].name;
        int perturb = perturbed && strcmp(perturbed, name) == 0;
        perturbed_found |= perturb;
        lcg = fnv1a((const uint8_t *)name, strlen(name)) ^ (perturb ? 0x9e3779b97f4a7c15ull : 0);
        used = 0;
        entries[e].drive();
        printf("%s: %016llx\n", name, (unsigned long long)fnv1a(arena, used));
        fflush(stdout);                  // a run that dies shows the functions before it
    }
    if (perturbed && !perturbed_found) {
        fprintf(stderr, "driver: no corpus function named '%s'\n", perturbed);
        return 2;
    }
    return 0;
}
