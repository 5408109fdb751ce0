// int8 GEMM on one 32-bit tile: C (16x16 int32) = A (16x16 int8) x B (16x16 int8), SVL 512.
// x0 = A packed as 4 vectors of [row][k%4], x1 = B packed as 4 vectors of [col][k%4],
// x2 = C (row-major int32); w12-w15 = 0, 4, 8, 12 select the 16 rows of ZA0.S.
smstart
zero {za}
ptrue p0.b
ld1b {z0.b}, p0/z, [x0]
ld1b {z1.b}, p0/z, [x0, #1, mul vl]
ld1b {z2.b}, p0/z, [x0, #2, mul vl]
ld1b {z3.b}, p0/z, [x0, #3, mul vl]
ld1b {z4.b}, p0/z, [x1]
ld1b {z5.b}, p0/z, [x1, #1, mul vl]
ld1b {z6.b}, p0/z, [x1, #2, mul vl]
ld1b {z7.b}, p0/z, [x1, #3, mul vl]
smopa za0.s, p0/m, p0/m, z0.b, z4.b
smopa za0.s, p0/m, p0/m, z1.b, z5.b
smopa za0.s, p0/m, p0/m, z2.b, z6.b
smopa za0.s, p0/m, p0/m, z3.b, z7.b
st1w {za0h.s[w12, 0]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w12, 1]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w12, 2]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w12, 3]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w13, 0]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w13, 1]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w13, 2]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w13, 3]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w14, 0]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w14, 1]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w14, 2]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w14, 3]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w15, 0]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w15, 1]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w15, 2]}, p0, [x2]
addsvl x2, x2, #1
st1w {za0h.s[w15, 3]}, p0, [x2]
smstop
