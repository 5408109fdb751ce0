// sigaltstack with SME state (docs/abi.md, "Signal frames"): an alternate stack of
// getauxval(AT_MINSIGSTKSZ) bytes (or musl's MINSIGSTKSZ, which its sigaltstack insists on,
// when that is larger) plus 4 KiB for the handler's own calls holds the whole frame of a
// signal taken in streaming mode with ZA live (the SVE and ZA records included); the handler runs on it (SS_ONSTACK), a
// sigaltstack call from the handler is refused (EPERM), and after sigreturn the program is back
// in streaming mode with ZA intact. SS_AUTODISARM disarms the stack inside the handler; bad
// requests get EINVAL and ENOMEM.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "sme_state.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

static char *stack_base;
static size_t stack_size;
static volatile int on_alternate, flags_in_handler, change_in_handler;
static volatile uint64_t bad_address = 40;

static void handler(int signal, siginfo_t *info, void *context) {
    (void)signal;
    (void)info;
    ucontext_t *uc = context;
    char here;
    on_alternate = &here > stack_base && &here < stack_base + stack_size;
    stack_t now;
    sigaltstack(NULL, &now);
    flags_in_handler = now.ss_flags;
    stack_t other = {.ss_sp = stack_base, .ss_size = stack_size};
    change_in_handler = sigaltstack(&other, NULL) == 0 ? 0 : errno;
    uc->uc_mcontext.pc += 4;             // past the faulting store
}

__arm_new("za") __arm_locally_streaming static int fault_on_the_alternate_stack(void) {
    fill_za(31);
    svst1_u32(svptrue_b32(), (uint32_t *)bad_address, svdup_u32(1));
    return za_is(31) && (read_svcr() & 1);
}

int main(void) {
    stack_size = getauxval(AT_MINSIGSTKSZ);
    if (stack_size < MINSIGSTKSZ)
        stack_size = MINSIGSTKSZ;
    stack_size += 4096;
    stack_base = malloc(stack_size);
    stack_t request = {.ss_sp = stack_base, .ss_size = stack_size};
    printf("sigaltstack of AT_MINSIGSTKSZ + 4 KiB: %s\n",
           sigaltstack(&request, NULL) ? "refused" : "ok");
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &action, NULL);
    int kept = fault_on_the_alternate_stack();
    printf("handler on the alternate stack: %s, flags %s, sigaltstack there: %s; after: %s\n",
           on_alternate ? "yes" : "no", flags_in_handler == SS_ONSTACK ? "SS_ONSTACK" : "other",
           change_in_handler == EPERM ? "EPERM" : "allowed",
           kept ? "streaming, ZA kept" : "state lost");

    request.ss_flags = SS_AUTODISARM;
    int armed = sigaltstack(&request, NULL) == 0;
    kept = fault_on_the_alternate_stack();
    stack_t after;
    sigaltstack(NULL, &after);
    printf("SS_AUTODISARM %s: handler on it %s, flags there %s, sigaltstack there: %s, "
           "re-armed after sigreturn: %s; %s\n", armed ? "set" : "refused",
           on_alternate ? "yes" : "no", flags_in_handler == SS_DISABLE ? "SS_DISABLE" : "other",
           change_in_handler ? "refused" : "allowed",
           after.ss_size == stack_size && after.ss_flags == SS_AUTODISARM ? "yes" : "no",
           kept ? "ZA kept" : "ZA lost");

    stack_t small = {.ss_sp = stack_base, .ss_size = 1024};
    stack_t bad_mode = {.ss_sp = stack_base, .ss_size = stack_size, .ss_flags = 7};
    int small_error = sigaltstack(&small, NULL) ? errno : 0;
    int mode_error = sigaltstack(&bad_mode, NULL) ? errno : 0;
    printf("1024-byte stack: %s; flags 7: %s\n", small_error == ENOMEM ? "ENOMEM" : "accepted",
           mode_error == EINVAL ? "EINVAL" : "accepted");
    return 0;
}
