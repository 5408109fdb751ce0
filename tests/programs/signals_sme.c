// Signals delivered to real handlers while SME state is live (docs/abi.md, "Signal frames"):
// * raise(SIGUSR1) from a function whose ZA is live across the call (a lazy save pending):
//   the handler runs with PSTATE.SM=0 and ZA=0, and ZA holds its contents afterwards;
// * a SIGSEGV from a store in streaming mode while ZA holds data: the SA_SIGINFO handler finds
//   si_addr, the frame's SVE record (streaming flag, the streaming VL) and its ZA record (the
//   same VL) — following an extra_context record when the frame needs one — moves the PC past
//   the store and returns; the function goes on in streaming mode with ZA and its vector;
// * SA_RESETHAND, a blocked signal delivered when sigprocmask unblocks it, and a handler
//   interrupted by another signal (nested frames).
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

#include "sme_state.h"

// The frame records (Linux's asm/sigcontext.h; musl's headers have only some of them).
#define SVE_RECORD 0x53564501u
#define ZA_RECORD 0x54366345u
#define EXTRA_RECORD 0x45585401u
#define STREAMING_FLAG 1u                 // SVE_SIG_FLAG_SM
#define MAX_LANES 64

struct record { uint32_t magic, size; };
struct sve_record { struct record head; uint16_t vl, flags, reserved[2]; };
struct za_record { struct record head; uint16_t vl, reserved[3]; };
struct extra_record { struct record head; uint64_t data; uint32_t size, reserved[3]; };

static volatile uint64_t bad_address = 24;       // unmapped: page zero

// ----------------------------------------------------------------------- raise with ZA live
static volatile uint64_t svcr_in_usr1 = 99;

static void on_usr1(int signal) {
    (void)signal;
    svcr_in_usr1 = read_svcr();
}

__arm_new("za") static int za_across_raise(void) {
    fill_za(7);
    raise(SIGUSR1);                  // a private-ZA call: the caller's lazy save is pending
    return za_is(7);
}

// ------------------------------------------------------------ SIGSEGV in streaming mode
static volatile uint64_t segv_address, svcr_in_segv = 99;
static volatile int sve_vl, sve_streaming, za_vl, records;

static void on_segv(int signal, siginfo_t *info, void *context) {
    (void)signal;
    ucontext_t *uc = context;
    segv_address = (uint64_t)info->si_addr;
    svcr_in_segv = read_svcr();
    unsigned char *cursor = (unsigned char *)uc->uc_mcontext.__reserved;
    for (int guard = 0; guard < 16; guard++) {
        struct record *head = (struct record *)cursor;
        if (head->magic == 0)
            break;
        records++;
        if (head->magic == SVE_RECORD) {
            struct sve_record *sve = (struct sve_record *)head;
            sve_vl = sve->vl;
            sve_streaming = (sve->flags & STREAMING_FLAG) != 0;
        } else if (head->magic == ZA_RECORD) {
            za_vl = ((struct za_record *)head)->vl;
        }
        if (head->magic == EXTRA_RECORD)
            cursor = (unsigned char *)((struct extra_record *)head)->data;
        else
            cursor += head->size;
    }
    uc->uc_mcontext.pc += 4;         // past the faulting store
}

__arm_new("za") __arm_locally_streaming static int fault_in_streaming(float *out) {
    svbool_t all = svptrue_b32();
    svfloat32_t kept = svdup_f32(2.5f);
    fill_za(11);
    svst1_f32(all, (float *)bad_address, kept);       // SIGSEGV; the handler skips it
    svst1_f32(all, out, kept);
    return za_is(11) && svcntsb() == (uint64_t)sve_vl;
}

// ----------------------------------------------- SA_RESETHAND, masking, nested handlers
static volatile int usr2_count, nested_depth, nested_max;

static void on_usr2(int signal) {
    (void)signal;
    usr2_count++;
}

static void on_hup(int signal) {
    (void)signal;
    nested_depth++;
    if (nested_depth > nested_max)
        nested_max = nested_depth;
    if (nested_depth == 1)
        raise(SIGINT);               // delivered inside this handler: SIGINT is not masked
    nested_depth--;
}

int main(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr1;
    sigaction(SIGUSR1, &action, NULL);
    int za_kept = za_across_raise();
    printf("raise with ZA live: handler SM=%d ZA=%d, ZA after: %s\n",
           (int)(svcr_in_usr1 & 1), (int)(svcr_in_usr1 >> 1 & 1), za_kept ? "kept" : "lost");

    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &action, NULL);
    float out[MAX_LANES] = {0};
    int streaming_kept = fault_in_streaming(out);
    printf("SIGSEGV in streaming mode: si_addr %s, handler SM=%d ZA=%d, frame: SVE record "
           "%s at the streaming VL %s, ZA record VL %s; after it: %s, vector %s\n",
           segv_address == bad_address ? "ok" : "wrong", (int)(svcr_in_segv & 1),
           (int)(svcr_in_segv >> 1 & 1), sve_streaming ? "streaming" : "not streaming",
           sve_vl > 0 ? "ok" : "missing", za_vl == sve_vl ? "ok" : "wrong",
           streaming_kept ? "ZA kept" : "ZA lost", out[0] == 2.5f ? "kept" : "lost");

    memset(&action, 0, sizeof action);
    action.sa_handler = on_usr2;
    action.sa_flags = SA_RESETHAND;
    sigaction(SIGUSR2, &action, NULL);
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR2);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    raise(SIGUSR2);
    int while_blocked = usr2_count;
    sigprocmask(SIG_UNBLOCK, &blocked, NULL);
    struct sigaction now;
    sigaction(SIGUSR2, NULL, &now);
    printf("blocked SIGUSR2: %d handled while blocked, %d after unblocking, handler reset: "
           "%s\n", while_blocked, usr2_count, now.sa_handler == SIG_DFL ? "yes" : "no");

    memset(&action, 0, sizeof action);
    action.sa_handler = on_hup;
    sigaction(SIGHUP, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    raise(SIGHUP);
    printf("nested handlers: depth %d\n", nested_max);
    return 0;
}
