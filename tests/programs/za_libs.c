// Two separately compiled libraries that keep private state in ZA across their own calls
// (za_lib_sum.c: a float running sum in ZA0.S slice 0; za_lib_dot.c: an int32 SMOPA
// accumulator in ZA0.S), called alternately for many rounds and checked against the same
// arithmetic in plain C after every round. Each library keeps its state in a virtual ZA context
// of its own (sw/runtime/zatile_za.h), so neither corrupts the other and the caller's PSTATE.ZA
// is 0 after every call. Linked with libraries built with -DZA_LIB_NO_CONTEXTS, it shows the
// problem the contexts solve: both libraries in the one ZA, and PSTATE.ZA left on.
//
//   za_libs           main alone
//   za_libs threads   3 threads and main at once, each with its own contexts, yielding the CPU
//                     between calls so that their time slices interleave
//   za_libs api       the calls' answers and errors (docs/abi.md, "Virtual ZA contexts")
//
// Prints one line per check, then "za_libs: ok" or how many checks failed.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <zatile_za.h>

#include "sme_state.h"
#include "za_lib_dot.h"
#include "za_lib_sum.h"

#define THREADS 3
#define ROUNDS 24
#define CALLS_PER_ROUND 4

// What one thread saw: the first round at which each library's state differed from the
// expected one (-1: none), with both values then, and the library calls after which the
// caller's SVCR.ZA was 1.
struct outcome {
    int sum_round, dot_round;
    float sum_got[4], sum_expected[4];
    int32_t dot_got[16], dot_expected[16];
    int za_left_on;
};

// SVCR.ZA of the caller after a library call.
static void after_call(struct outcome *outcome, int yield) {
    outcome->za_left_on += (read_svcr() & 2) != 0;
    if (yield)
        sched_yield();
}

// The rounds of one thread (`id` varies its values): add to both libraries alternately, reset
// each once half-way, and compare both states with the plain C arithmetic after every round.
static void run_rounds(int id, int yield, struct outcome *outcome) {
    float sum[4] = {0};
    int32_t dot[16] = {0};
    outcome->sum_round = outcome->dot_round = -1;
    outcome->za_left_on = 0;
    for (int round = 0; round < ROUNDS; round++) {
        float v[4];
        int8_t a[16], b[16];
        for (int k = 0; k < 4; k++)
            v[k] = 0.25f * (float)(100 * id + 4 * round + k + 1);      // sums stay exact
        for (int k = 0; k < 16; k++) {
            a[k] = (int8_t)((7 * round + 3 * k + id) % 19 - 9);
            b[k] = (int8_t)((5 * round + 11 * k + 2 * id) % 23 - 11);
        }
        if (round == ROUNDS / 2) {
            sum_reset();
            memset(sum, 0, sizeof sum);
        } else {
            sum_add(v);
            for (int k = 0; k < 4; k++)
                sum[k] += v[k];
        }
        after_call(outcome, yield);
        if (round == ROUNDS / 3) {
            dot_reset();
            memset(dot, 0, sizeof dot);
        } else {
            dot_add(a, b);
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    for (int k = 0; k < 4; k++)
                        dot[4 * i + j] += a[4 * i + k] * b[4 * j + k];
        }
        after_call(outcome, yield);
        float sum_got[4];
        int32_t dot_got[16];
        sum_get(sum_got);
        after_call(outcome, yield);
        dot_get(dot_got);
        after_call(outcome, yield);
        if (outcome->sum_round < 0 && memcmp(sum_got, sum, sizeof sum)) {
            outcome->sum_round = round;
            memcpy(outcome->sum_got, sum_got, sizeof sum_got);
            memcpy(outcome->sum_expected, sum, sizeof sum);
        }
        if (outcome->dot_round < 0 && memcmp(dot_got, dot, sizeof dot)) {
            outcome->dot_round = round;
            memcpy(outcome->dot_got, dot_got, sizeof dot_got);
            memcpy(outcome->dot_expected, dot, sizeof dot);
        }
    }
}

static void print_floats(const float *values, int count) {
    for (int i = 0; i < count; i++)
        printf(" %g", (double)values[i]);
}

static void print_ints(const int32_t *values, int count) {
    for (int i = 0; i < count; i++)
        printf(" %d", values[i]);
}

// The three lines of one thread's checks; the number that failed.
static int report(const char *who, const struct outcome *outcome) {
    printf("%s: sum library over %d rounds: ", who, ROUNDS);
    if (outcome->sum_round < 0) {
        printf("ok\n");
    } else {
        printf("differs from round %d: got", outcome->sum_round);
        print_floats(outcome->sum_got, 4);
        printf(", expected");
        print_floats(outcome->sum_expected, 4);
        printf("\n");
    }
    printf("%s: dot library over %d rounds: ", who, ROUNDS);
    if (outcome->dot_round < 0) {
        printf("ok\n");
    } else {
        printf("differs from round %d: got row 0", outcome->dot_round);
        print_ints(outcome->dot_got, 4);
        printf(", expected");
        print_ints(outcome->dot_expected, 4);
        printf("\n");
    }
    printf("%s: SVCR.ZA after the %d library calls: ", who, ROUNDS * CALLS_PER_ROUND);
    if (outcome->za_left_on)
        printf("1 after %d of them\n", outcome->za_left_on);
    else
        printf("0 after every one\n");
    return (outcome->sum_round >= 0) + (outcome->dot_round >= 0) + (outcome->za_left_on > 0);
}

static void *worker(void *argument) {
    static struct outcome outcomes[THREADS];
    int id = (int)(long)argument;
    run_rounds(id, 1, &outcomes[id]);
    return &outcomes[id];
}

static int libraries(int threaded) {
    pthread_t threads[THREADS];
    int created = 0;
    if (threaded)
        for (; created < THREADS; created++)
            if (pthread_create(&threads[created], NULL, worker, (void *)(long)created)) {
                printf("pthread_create failed\n");
                return 1;
            }
    struct outcome main_outcome;
    run_rounds(THREADS, threaded, &main_outcome);
    int failed = 0;
    for (int id = 0; id < created; id++) {
        void *outcome;
        char who[16];
        pthread_join(threads[id], &outcome);
        snprintf(who, sizeof who, "thread %d", id);
        failed += report(who, outcome);
    }
    return failed + report("main", &main_outcome);
}

// ------------------------------------------------------------------------------ the calls

// ZA0.S slice 0, element 0, set and read in the selected context (SMSTART ZA first, which
// zeroes ZA if it was off).
__arm_locally_streaming static void za_set(float value) {
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl1\n\t"
                     "mov w12, #0\n\t"
                     "mov z0.s, %s0\n\t"
                     "mova za0h.s[w12, 0], p0/m, z0.s"
                     : : "w"(value) : "z0", "p0", "w12");
}

__arm_locally_streaming static float za_get(void) {
    float value;
    __asm__ volatile("smstart za\n\t"
                     "ptrue p0.s, vl1\n\t"
                     "mov w12, #0\n\t"
                     "mova z0.s, p0/m, za0h.s[w12, 0]\n\t"
                     "fmov %s0, s0"
                     : "=w"(value) : : "z0", "p0", "w12");
    return value;
}

static int za_on(void) {
    return (read_svcr() & 2) != 0;
}

static int check(const char *what, int ok) {
    printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    return !ok;
}

// -1 with errno `expected`.
static int fails_with(int result, int expected) {
    return result == -1 && errno == expected;
}

static int main_selector;

static void *other_thread(void *argument) {
    (void)argument;
    int own = zatile_za_open();
    int ok = zatile_za_select(0) == 0 && own >= 1
             && fails_with(zatile_za_select(main_selector), EINVAL)
             && zatile_za_select(own) == 0 && !za_on() && zatile_za_select(0) == own
             && zatile_za_close(own) == 0;
    return (void *)(long)ok;
}

static int calls(void) {
    int failed = 0;
    failed += check("select 0 while 0 is selected: 0", zatile_za_select(0) == 0);
    int first = zatile_za_open(), second = zatile_za_open();
    failed += check("open twice: two selectors >= 1", first >= 1 && second >= 1
                                                      && first != second);
    failed += check("open with a non-zero argument: EINVAL",
                    fails_with(prctl(PR_ZATILE_ZA_OPEN, 1UL, 0UL, 0UL, 0UL), EINVAL));
    failed += check("select the first: 0 was selected; ZA off in it",
                    zatile_za_select(first) == 0 && !za_on());
    za_set(1.5f);
    failed += check("select the second from the first: the first was selected; ZA off",
                    za_on() && zatile_za_select(second) == first && !za_on());
    za_set(2.5f);
    failed += check("select 0: the second was; its ZA off",
                    zatile_za_select(0) == second && !za_on());
    int first_on = zatile_za_select(first) == 0 && za_on();
    float first_value = za_get();
    failed += check("select the first again: its ZA on and kept", first_on
                                                                  && first_value == 1.5f);
    int second_on = zatile_za_select(second) == first && za_on();
    float second_value = za_get();
    failed += check("select the second again: its ZA on and kept", second_on
                                                                   && second_value == 2.5f);
    failed += check("close the selected one: EBUSY", fails_with(zatile_za_close(second), EBUSY));
    failed += check("close 0: EINVAL", fails_with(zatile_za_close(0), EINVAL));
    failed += check("close a selector never opened: EINVAL",
                    fails_with(zatile_za_close(second + first + 100), EINVAL));
    failed += check("select a selector never opened: EINVAL",
                    fails_with(zatile_za_select(second + first + 100), EINVAL));
    failed += check("select -1: EINVAL", fails_with(zatile_za_select(-1), EINVAL));
    failed += check("select 0 and close both: 0", zatile_za_select(0) == second
                                                  && zatile_za_close(first) == 0
                                                  && zatile_za_close(second) == 0);
    failed += check("select or close a closed one: EINVAL",
                    fails_with(zatile_za_select(first), EINVAL)
                    && fails_with(zatile_za_close(first), EINVAL));
    int opened[ZATILE_ZA_MAX_OPEN + 1], count = 0;
    while (count <= ZATILE_ZA_MAX_OPEN && (opened[count] = zatile_za_open()) >= 1)
        count++;
    int full = count == ZATILE_ZA_MAX_OPEN && errno == ENOSPC;
    int closed = 1;
    for (int i = 0; i < count; i++)
        closed &= zatile_za_close(opened[i]) == 0;
    failed += check("open 64, then the 65th: ENOSPC; close them all", full && closed);
    main_selector = zatile_za_open();
    pthread_t thread;
    void *ok = NULL;
    if (pthread_create(&thread, NULL, other_thread, NULL) == 0)
        pthread_join(thread, &ok);
    failed += check("another thread: 0 selected, main's selector EINVAL, own ones",
                    ok != NULL);
    failed += check("main's ZA off throughout", !za_on() && zatile_za_close(main_selector) == 0);
    return failed;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int failed;
    if (!strcmp(mode, "api"))
        failed = calls();
    else if (!*mode || !strcmp(mode, "threads"))
        failed = libraries(*mode != 0);
    else {
        printf("usage: za_libs [threads | api]\n");
        return 2;
    }
    if (failed)
        printf("za_libs: %d check(s) failed\n", failed);
    else
        printf("za_libs: ok\n");
    return failed != 0;
}
