// A vector-length-agnostic bf16 GEMM with fp32 accumulation: BFMOPA.
#define ELEMENT bfloat16_t
#define VECTOR svbfloat16_t
#define LOAD svld1_bf16
#define MOPA svmopa_za32_bf16_m
#define NAME "gemm bf16"
#include "gemm_half.h"
