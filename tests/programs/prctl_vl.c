// PR_SME_SET_VL and PR_SME_GET_VL as a compiled program uses them: a live change to 16 bytes
// that RDSVL (svcntsb) then shows, the inherit flag reported back, and the invalid requests.
// QEMU 10 linux-user differs (docs/divergences.md, "QEMU linux-user"): it rejects every flag,
// returns 16 for a request of 0, and its RDSVL keeps the old length after a live change.
#include <arm_sme.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63
#define PR_SME_GET_VL 64
#endif
#define VL_INHERIT (1 << 17)

static void show(const char *label, long result) {
    if (result < 0)
        printf("%s: %s\n", label, strerror(errno));
    else
        printf("%s: %ld%s\n", label, result & 0xffff, result & VL_INHERIT ? " inherit" : "");
}

int main(void) {
    show("get", prctl(PR_SME_GET_VL));
    show("set 16", prctl(PR_SME_SET_VL, 16));
    printf("rdsvl: %lu\n", (unsigned long)svcntsb());
    show("set 32 with inherit", prctl(PR_SME_SET_VL, 32 | VL_INHERIT));
    show("get", prctl(PR_SME_GET_VL));
    show("set 0", prctl(PR_SME_SET_VL, 0));
    show("set 24", prctl(PR_SME_SET_VL, 24));
    show("set with an unknown flag", prctl(PR_SME_SET_VL, 16 | (1 << 20)));
    return 0;
}
