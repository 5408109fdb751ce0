// C++ (zig c++: libc++ on musl) with an __arm_locally_streaming member function and a
// std::vector filled through streaming intrinsics.
#include <arm_sme.h>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

struct Squares {
    std::vector<int32_t> values;

    __arm_locally_streaming void fill(int32_t count) {
        values.resize(count);
        for (int32_t i = 0; i < count; i += (int32_t)svcntw()) {
            svbool_t active = svwhilelt_b32_s32(i, count);
            svint32_t index = svindex_s32(i, 1);
            svst1_s32(active, values.data() + i, svmul_s32_x(active, index, index));
        }
    }
};

int main() {
    Squares squares;
    squares.fill(41);
    long total = std::accumulate(squares.values.begin(), squares.values.end(), 0L);
    std::printf("sum of squares below 41: %ld (%s)\n", total, total == 22140 ? "ok" : "FAILED");
    return total == 22140 ? 0 : 1;
}
