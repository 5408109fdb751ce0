// Plain C loops in streaming and locally streaming functions, as compiled ML glue code is
// written. clang keeps most of them scalar (it does not vectorize with scalable vectors in
// streaming code by default; with -mcpu=generic+sme it never uses SVE outside streaming code),
// but what it does emit here is code the engine must run all the same.
#include <arm_sme.h>
#include <stdint.h>

__arm_locally_streaming void saxpy(float *restrict y, const float *restrict x, float a, int n) {
    for (int i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
}

__arm_locally_streaming float dot(const float *restrict x, const float *restrict y, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

__arm_locally_streaming int32_t dot_s8(const int8_t *restrict x, const int8_t *restrict y, int n) {
    int32_t s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

void u8_to_f32_normalize(float *restrict y, const uint8_t *restrict x, float mean, float inv_std,
                         int n) __arm_streaming {
    for (int i = 0; i < n; i++)
        y[i] = ((float)x[i] - mean) * inv_std;
}

void clamp_s32(int32_t *restrict x, int32_t lo, int32_t hi, int n) __arm_streaming {
    for (int i = 0; i < n; i++)
        x[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
}

int64_t count_positive(const float *restrict x, int n) __arm_streaming {
    int64_t count = 0;
    for (int i = 0; i < n; i++)
        count += x[i] > 0.0f;
    return count;
}

float max_abs(const float *restrict x, int n) __arm_streaming {
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = x[i] < 0 ? -x[i] : x[i];
        m = v > m ? v : m;
    }
    return m;
}

void interleave_rgb(uint8_t *restrict out, const uint8_t *restrict r, const uint8_t *restrict g,
                    const uint8_t *restrict b, int n) __arm_streaming {
    for (int i = 0; i < n; i++) {
        out[3 * i] = r[i];
        out[3 * i + 1] = g[i];
        out[3 * i + 2] = b[i];
    }
}
