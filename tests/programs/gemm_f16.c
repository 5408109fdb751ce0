// A vector-length-agnostic fp16 GEMM with fp32 accumulation: the widening FMOPA.
#define ELEMENT float16_t
#define VECTOR svfloat16_t
#define LOAD svld1_f16
#define MOPA svmopa_za32_f16_m
#define NAME "gemm fp16"
#include "gemm_half.h"
