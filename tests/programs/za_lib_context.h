// How the ZA libraries (za_lib_sum.c, za_lib_dot.c) keep their state in a virtual ZA context
// of their own (sw/runtime/zatile_za.h): one per thread, opened on its first use, selected
// around each call:
//
//     int previous = za_lib_enter(&context, "za_lib_sum");
//     ... SME work on the library's ZA ...
//     za_lib_leave(context, previous, "za_lib_sum");
//
// Built with -DZA_LIB_NO_CONTEXTS they do not use the calls, and share the thread's one ZA.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zatile_za.h>

#ifndef ZA_LIB_NO_CONTEXTS
static void za_lib_fail(const char *library, const char *call) {
    fprintf(stderr, "%s: %s: %s\n", library, call, strerror(errno));
    abort();
}

// Select the library's context (*context: the thread's selector, 0 until it is opened) and
// return the caller's.
static int za_lib_enter(int *context, const char *library) {
    if (*context == 0 && (*context = zatile_za_open()) < 0)
        za_lib_fail(library, "zatile_za_open");
    int previous = zatile_za_select(*context);
    if (previous < 0)
        za_lib_fail(library, "zatile_za_select");
    return previous;
}

// Give the caller its context back (the library's must still be the selected one).
static void za_lib_leave(int context, int previous, const char *library) {
    int left = zatile_za_select(previous);
    if (left < 0)
        za_lib_fail(library, "zatile_za_select");
    if (left != context) {
        fprintf(stderr, "%s: selector %d was selected, not the library's %d\n", library, left,
                context);
        abort();
    }
}
#else
static int za_lib_enter(int *context, const char *library) {
    (void)context, (void)library;
    return 0;
}

static void za_lib_leave(int context, int previous, const char *library) {
    (void)context, (void)previous, (void)library;
}
#endif
