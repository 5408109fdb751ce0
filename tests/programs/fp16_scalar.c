// The scalar FP16 (FEAT_FP16) and BFCVT (FEAT_BF16) instructions that zatile's host CPU
// performs itself (sim/host_fp.py), on special and random operands, in every FPCR rounding mode
// and with FZ16 and DN: one line per instruction with a hash of every result and FPSR flag word.
// Compared with QEMU, which implements them natively.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef _Float16 half;

static const uint16_t SPECIALS[] = {
    0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x3c00, 0xbc00, 0x3e00, 0x4248, 0xc0a0, 0x7bff,
    0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0xfe01, 0x3555, 0x1000, 0x6400, 0xe800, 0x0200};
enum { COUNT = sizeof SPECIALS / sizeof SPECIALS[0] };

static uint64_t hash;
static int verbose;                     // argv[1] == "cases": a line per case, to find a mismatch
static void mix(uint64_t value) {
    for (int byte = 0; byte < 8; byte++)
        hash = (hash ^ ((value >> (8 * byte)) & 0xff)) * 1099511628211ull;
}

static half as_half(uint16_t bits) { half value; memcpy(&value, &bits, 2); return value; }
static uint16_t bits_of(half value) { uint16_t bits; memcpy(&bits, &value, 2); return bits; }
static void set_fpcr(uint64_t value) { __asm__ volatile("msr fpcr, %0" ::"r"(value)); }
static void clear_fpsr(void) { __asm__ volatile("msr fpsr, xzr"); }
static uint64_t fpsr(void) {
    uint64_t value;
    __asm__ volatile("mrs %0, fpsr" : "=r"(value));
    return value;
}
static uint64_t nzcv(void) {
    uint64_t value;
    __asm__ volatile("mrs %0, nzcv" : "=r"(value));
    return value;
}
static void set_nzcv(uint64_t value) { __asm__ volatile("msr nzcv, %0" ::"r"(value) : "cc"); }

#define UNARY(name, text)                                                                   \
    static uint16_t name(half a) {                                                          \
        half r;                                                                             \
        __asm__ volatile(text " %h0, %h1" : "=w"(r) : "w"(a));                              \
        return bits_of(r);                                                                  \
    }
#define BINARY(name, text)                                                                  \
    static uint16_t name(half a, half b) {                                                  \
        half r;                                                                             \
        __asm__ volatile(text " %h0, %h1, %h2" : "=w"(r) : "w"(a), "w"(b));                 \
        return bits_of(r);                                                                  \
    }
#define TERNARY(name, text)                                                                 \
    static uint16_t name(half a, half b, half c) {                                          \
        half r;                                                                             \
        __asm__ volatile(text " %h0, %h1, %h2, %h3" : "=w"(r) : "w"(a), "w"(b), "w"(c));    \
        return bits_of(r);                                                                  \
    }
#define TO_INT(name, text)                                                                  \
    static uint64_t name(half a) {                                                          \
        uint64_t r;                                                                         \
        __asm__ volatile(text " %x0, %h1" : "=r"(r) : "w"(a));                              \
        return r;                                                                           \
    }
#define TO_WORD(name, text)                                                                 \
    static uint64_t name(half a) {                                                          \
        uint32_t r;                                                                         \
        __asm__ volatile(text " %w0, %h1" : "=r"(r) : "w"(a));                              \
        return r;                                                                           \
    }

UNARY(fmov_r, "fmov") UNARY(fabs_, "fabs") UNARY(fneg_, "fneg") UNARY(fsqrt_, "fsqrt")
UNARY(frintn_, "frintn") UNARY(frintp_, "frintp") UNARY(frintm_, "frintm")
UNARY(frintz_, "frintz") UNARY(frinta_, "frinta") UNARY(frintx_, "frintx")
UNARY(frinti_, "frinti")
BINARY(fadd_, "fadd") BINARY(fsub_, "fsub") BINARY(fmul_, "fmul") BINARY(fdiv_, "fdiv")
BINARY(fmax_, "fmax") BINARY(fmin_, "fmin") BINARY(fmaxnm_, "fmaxnm") BINARY(fminnm_, "fminnm")
BINARY(fnmul_, "fnmul")
TERNARY(fmadd_, "fmadd") TERNARY(fmsub_, "fmsub") TERNARY(fnmadd_, "fnmadd")
TERNARY(fnmsub_, "fnmsub")
TO_INT(fcvtzs_x, "fcvtzs") TO_INT(fcvtzu_x, "fcvtzu") TO_INT(fcvtns_x, "fcvtns")
TO_INT(fcvtau_x, "fcvtau") TO_WORD(fcvtps_w, "fcvtps") TO_WORD(fcvtmu_w, "fcvtmu")
TO_WORD(fcvtas_w, "fcvtas") TO_WORD(fcvtnu_w, "fcvtnu") TO_WORD(fmov_w, "fmov")

static uint64_t fcmp_(half a, half b) {
    __asm__ volatile("fcmp %h0, %h1" ::"w"(a), "w"(b) : "cc");
    return nzcv();
}
static uint64_t fcmpe_(half a, half b) {
    __asm__ volatile("fcmpe %h0, %h1" ::"w"(a), "w"(b) : "cc");
    return nzcv();
}
static uint64_t fcmp0(half a, half b) {
    (void)b;
    __asm__ volatile("fcmp %h0, #0.0" ::"w"(a) : "cc");
    return nzcv();
}
static uint64_t fccmp_(half a, half b) {
    set_nzcv(bits_of(a) & 0x8000 ? 0x40000000 : 0);
    __asm__ volatile("fccmp %h0, %h1, #5, eq" ::"w"(a), "w"(b) : "cc");
    return nzcv();
}
static uint64_t fcsel_(half a, half b) {
    half r;
    set_nzcv(bits_of(b) & 1 ? 0x20000000 : 0);
    __asm__ volatile("fcsel %h0, %h1, %h2, cs" : "=w"(r) : "w"(a), "w"(b));
    return bits_of(r);
}
static uint64_t scvtf_w(half a, half b) {
    half r;
    int32_t value = (int32_t)((uint32_t)bits_of(a) << 16 | bits_of(b)) >> (bits_of(b) & 15);
    __asm__ volatile("scvtf %h0, %w1" : "=w"(r) : "r"(value));
    return bits_of(r);
}
static uint64_t ucvtf_x(half a, half b) {
    half r;
    uint64_t value = ((uint64_t)bits_of(a) << 48 | (uint64_t)bits_of(b) << 9) >> (bits_of(b) & 63);
    __asm__ volatile("ucvtf %h0, %x1" : "=w"(r) : "r"(value));
    return bits_of(r);
}
static uint64_t fmov_h_w(half a, half b) {
    half r;
    uint32_t value = (uint32_t)bits_of(b) << 16 | bits_of(a);
    __asm__ volatile("fmov %h0, %w1" : "=w"(r) : "r"(value));
    return bits_of(r);
}
static uint64_t bfcvt_(half a, half b) {
    uint16_t r;
    uint32_t single = (uint32_t)bits_of(a) << 16 | bits_of(b);
    float value;
    memcpy(&value, &single, 4);
    __asm__ volatile("bfcvt h0, %s1\n\tfmov %w0, s0" : "=r"(r) : "w"(value) : "v0");
    return r;
}
static uint64_t fmov_immediates(void) {
    half a, b, c;
    __asm__ volatile("fmov %h0, #-2.5\n\tfmov %h1, #0.125\n\tfmov %h2, #31.0"
                     : "=w"(a), "=w"(b), "=w"(c));
    return (uint64_t)bits_of(a) << 32 | (uint64_t)bits_of(b) << 16 | bits_of(c);
}

static const uint64_t FPCRS[] = {0,       1 << 22, 2 << 22, 3 << 22,
                                 1 << 19, 1 << 24, 1 << 25, 1 << 19 | 1 << 25 | 3 << 22};
enum { MODES = sizeof FPCRS / sizeof FPCRS[0] };

#define RUN(label, expression)                                                              \
    do {                                                                                    \
        hash = 1469598103934665603ull;                                                     \
        for (int mode = 0; mode < MODES; mode++) {                                          \
            set_fpcr(FPCRS[mode]);                                                          \
            for (int i = 0; i < COUNT; i++)                                                 \
                for (int j = 0; j < COUNT; j++) {                                           \
                    half a = as_half(SPECIALS[i]), b = as_half(SPECIALS[j]);                \
                    half c = as_half(SPECIALS[(i + j) % COUNT]);                            \
                    (void)a; (void)b; (void)c;                                              \
                    clear_fpsr();                                                           \
                    uint64_t result = (expression), flags = fpsr();                         \
                    mix(result);                                                            \
                    mix(flags);                                                             \
                    if (verbose)                                                            \
                        printf("%s fpcr=%llx a=%04x b=%04x c=%04x: %llx fpsr=%llx\n", label, \
                               (unsigned long long)FPCRS[mode], SPECIALS[i], SPECIALS[j],   \
                               SPECIALS[(i + j) % COUNT], (unsigned long long)result,       \
                               (unsigned long long)flags);                                  \
                }                                                                           \
        }                                                                                   \
        set_fpcr(0);                                                                        \
        printf("%-10s %016llx\n", label, (unsigned long long)hash);                       \
    } while (0)

int main(int argc, char **argv) {
    verbose = argc > 1 && !strcmp(argv[1], "cases");
    RUN("fmov", fmov_r(a)); RUN("fabs", fabs_(a)); RUN("fneg", fneg_(a));
    RUN("fsqrt", fsqrt_(a)); RUN("frintn", frintn_(a)); RUN("frintp", frintp_(a));
    RUN("frintm", frintm_(a)); RUN("frintz", frintz_(a)); RUN("frinta", frinta_(a));
    RUN("frintx", frintx_(a)); RUN("frinti", frinti_(a));
    RUN("fadd", fadd_(a, b)); RUN("fsub", fsub_(a, b)); RUN("fmul", fmul_(a, b));
    RUN("fdiv", fdiv_(a, b)); RUN("fmax", fmax_(a, b)); RUN("fmin", fmin_(a, b));
    RUN("fmaxnm", fmaxnm_(a, b)); RUN("fminnm", fminnm_(a, b)); RUN("fnmul", fnmul_(a, b));
    RUN("fmadd", fmadd_(a, b, c)); RUN("fmsub", fmsub_(a, b, c));
    RUN("fnmadd", fnmadd_(a, b, c)); RUN("fnmsub", fnmsub_(a, b, c));
    RUN("fcvtzs", fcvtzs_x(a)); RUN("fcvtzu", fcvtzu_x(a)); RUN("fcvtns", fcvtns_x(a));
    RUN("fcvtau", fcvtau_x(a)); RUN("fcvtps", fcvtps_w(a)); RUN("fcvtmu", fcvtmu_w(a));
    RUN("fcvtas", fcvtas_w(a)); RUN("fcvtnu", fcvtnu_w(a)); RUN("fmov w,h", fmov_w(a));
    RUN("fcmp", fcmp_(a, b)); RUN("fcmpe", fcmpe_(a, b)); RUN("fcmp #0", fcmp0(a, b));
    RUN("fccmp", fccmp_(a, b)); RUN("fcsel", fcsel_(a, b)); RUN("scvtf", scvtf_w(a, b));
    RUN("ucvtf", ucvtf_x(a, b)); RUN("fmov h,w", fmov_h_w(a, b)); RUN("bfcvt", bfcvt_(a, b));
    RUN("fmov #imm", fmov_immediates());
    return 0;
}
