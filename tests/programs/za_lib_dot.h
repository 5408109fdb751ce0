// A library that keeps a 4 x 4 int32 accumulator of 4-way int8 dot products in ZA
// (tests/programs/za_lib_dot.c). Its functions are plain ones as the AAPCS64 sees them:
// non-streaming, private ZA.
#include <stdint.h>

#ifndef ZA_LIB_DOT_H
#define ZA_LIB_DOT_H

// Add to accumulator element [i][j] the dot product of a[4i..4i+3] and b[4j..4j+3]
// (an SMOPA outer product of int8 vectors into int32).
void dot_add(const int8_t a[16], const int8_t b[16]);
// The accumulator, row by row, into out.
void dot_get(int32_t out[16]);
// Set the accumulator to zero.
void dot_reset(void);

#endif
