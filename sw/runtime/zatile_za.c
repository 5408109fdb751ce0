/*
 * The virtual ZA context calls of zatile_za.h: musl's prctl with the zatile options. Every
 * argument goes as an unsigned long, so that the registers the kernel reads as the unused
 * arguments are zero. Valid C and C++ (a C++ program's link compiles it as C++).
 */
#include <sys/prctl.h>

#include "zatile_za.h"

int zatile_za_open(void) {
    return prctl(PR_ZATILE_ZA_OPEN, 0UL, 0UL, 0UL, 0UL);
}

int zatile_za_select(int selector) {
    return prctl(PR_ZATILE_ZA_SELECT, (unsigned long)selector, 0UL, 0UL, 0UL);
}

int zatile_za_close(int selector) {
    return prctl(PR_ZATILE_ZA_CLOSE, (unsigned long)selector, 0UL, 0UL, 0UL);
}
