// A library that keeps a running sum of 4-element float vectors in ZA
// (tests/programs/za_lib_sum.c).
// Its functions are plain ones as the AAPCS64 sees them: non-streaming, private ZA.
#ifndef ZA_LIB_SUM_H
#define ZA_LIB_SUM_H

// Add v to the running sum.
void sum_add(const float v[4]);
// The running sum, into out.
void sum_get(float out[4]);
// Set the running sum to zero.
void sum_reset(void);

#endif
