#include "kernels/cpu/int8_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

namespace nnfuse::cpu::int8 {

template <typename T>
PackedB pack_b(const T* b, int64_t k, int64_t n, int64_t ldb, const std::vector<int32_t>& b_zero) {
  PackedB p;
  p.k = k;
  p.n = n;
  p.pairs = (k + 1) / 2;
  p.is_unsigned = std::is_same_v<T, uint8_t>;
  p.data.assign(static_cast<size_t>(p.panels() * p.pairs * kPanel * 2), 0);
  for (int64_t c = 0; c < n; ++c) {
    uint8_t* panel = p.data.data() + (c / kPanel) * p.pairs * kPanel * 2;
    const int64_t j = c % kPanel;
    for (int64_t r = 0; r < k; ++r) {
      std::memcpy(panel + (r / 2) * kPanel * 2 + j * 2 + r % 2, b + r * ldb + c, 1);
    }
  }
  const bool zeros = std::all_of(b_zero.begin(), b_zero.end(), [](int32_t z) { return z == 0; });
  if (!zeros) {
    p.zero.assign(static_cast<size_t>(p.panels() * kPanel), 0);
    for (int64_t c = 0; c < n; ++c) {
      p.zero[static_cast<size_t>(c)] =
          b_zero.size() == 1 ? b_zero[0] : b_zero[static_cast<size_t>(c)];
    }
  }
  return p;
}

template <typename T>
void pack_a(const T* a, int64_t m, int64_t k, int64_t lda, const std::vector<int32_t>& a_zero,
            int64_t row0, int16_t* out, int32_t* sums) {
  const int64_t width = (k + 1) / 2 * 2;
  for (int64_t r = 0; r < m; ++r) {
    const int32_t zero = a_zero.size() == 1 ? a_zero[0] : a_zero[static_cast<size_t>(row0 + r)];
    const T* src = a + r * lda;
    int16_t* dst = out + r * width;
    int32_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int32_t v = static_cast<int32_t>(src[i]) - zero;
      dst[i] = static_cast<int16_t>(v);
      sum += v;
    }
    if (width != k) dst[k] = 0;
    sums[r] = sum;
  }
}

template PackedB pack_b(const int8_t*, int64_t, int64_t, int64_t, const std::vector<int32_t>&);
template PackedB pack_b(const uint8_t*, int64_t, int64_t, int64_t, const std::vector<int32_t>&);
template void pack_a(const int8_t*, int64_t, int64_t, int64_t, const std::vector<int32_t>&, int64_t,
                     int16_t*, int32_t*);
template void pack_a(const uint8_t*, int64_t, int64_t, int64_t, const std::vector<int32_t>&,
                     int64_t, int16_t*, int32_t*);

namespace {

// Rows per tile: each row's pairs broadcast against a panel's 16 columns.
constexpr int kRows = 4;

// Writes the first `cols` of a tile row's 16 sums less the row sum times B's zero points.
inline void store_row(const int32_t* sums, int32_t row_sum, const int32_t* zero, int32_t* c,
                      int64_t cols) {
  if (!zero) {
    std::memcpy(c, sums, static_cast<size_t>(cols) * sizeof(int32_t));
    return;
  }
  for (int64_t j = 0; j < cols; ++j) {
    // Wrapping int32 arithmetic, as int32 accumulation of the shifted products wraps.
    c[j] = static_cast<int32_t>(static_cast<uint32_t>(sums[j]) -
                                static_cast<uint32_t>(row_sum) * static_cast<uint32_t>(zero[j]));
  }
}

template <typename T>
void tile_scalar(const int16_t* a, const int32_t* row_sums, int64_t lda, int rows,
                 const uint8_t* bytes, int64_t pairs, const int32_t* zero, int32_t* c, int64_t ldc,
                 int64_t cols) {
  const T* panel = reinterpret_cast<const T*>(bytes);
  for (int r = 0; r < rows; ++r) {
    uint32_t sums[kPanel] = {};
    const int16_t* ar = a + r * lda;
    for (int64_t q = 0; q < pairs; ++q) {
      const T* bq = panel + q * kPanel * 2;
      const int32_t a0 = ar[2 * q], a1 = ar[2 * q + 1];
      for (int64_t j = 0; j < kPanel; ++j) {
        sums[j] += static_cast<uint32_t>(a0 * bq[2 * j] + a1 * bq[2 * j + 1]);
      }
    }
    int32_t out[kPanel];
    std::memcpy(out, sums, sizeof(out));
    store_row(out, row_sums[r], zero, c + r * ldc, cols);
  }
}

#if defined(__x86_64__)
// 16 bytes of B (8 columns' pairs) widened to int16.
template <bool kUnsigned>
__attribute__((target("avx2"))) inline __m256i widen(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kUnsigned ? _mm256_cvtepu8_epi16(v) : _mm256_cvtepi8_epi16(v);
}

// One row's step: its pair broadcast against the panel's two halves, summed into lo and hi.
#define NNFUSE_INT8_ROW(r)                                      \
  if constexpr (R > r) {                                        \
    int32_t pair;                                               \
    std::memcpy(&pair, a + r * lda + 2 * q, sizeof(pair));      \
    const __m256i av = _mm256_set1_epi32(pair);                 \
    lo##r = _mm256_add_epi32(lo##r, _mm256_madd_epi16(av, b0)); \
    hi##r = _mm256_add_epi32(hi##r, _mm256_madd_epi16(av, b1)); \
  }
// Its sums less the row sum times B's zero points, stored (the first `cols` of them).
#define NNFUSE_INT8_STORE(r) \
  if constexpr (R > r) store_tile_row(lo##r, hi##r, row_sums[r], zero, c + r * ldc, cols);

__attribute__((target("avx2"))) inline void store_tile_row(__m256i lo, __m256i hi, int32_t row_sum,
                                                           const int32_t* zero, int32_t* c,
                                                           int64_t cols) {
  if (zero) {
    const __m256i s = _mm256_set1_epi32(row_sum);
    lo = _mm256_sub_epi32(
        lo, _mm256_mullo_epi32(s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero))));
    hi = _mm256_sub_epi32(
        hi, _mm256_mullo_epi32(s, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero + 8))));
  }
  if (cols == kPanel) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 8), hi);
    return;
  }
  alignas(32) int32_t sums[kPanel];
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums), lo);
  _mm256_store_si256(reinterpret_cast<__m256i*>(sums + 8), hi);
  std::memcpy(c, sums, static_cast<size_t>(cols) * sizeof(int32_t));
}

// R rows (1 to 4) by one panel; the 8 sums live in named registers (GCC spills an array of
// them to the stack every step). On AVX2 the multiply-adds bound the loop (one 256-bit
// vpmaddwd every other cycle on AMD Zen 1: 17.4 GMAC/s a core, the same for 4, 5 or 6 rows);
// 4 rows leave the sums, both halves of B, the broadcast and a product in registers.
template <int R, bool kUnsigned>
__attribute__((target("avx2"))) void tile_avx2(const int16_t* a, const int32_t* row_sums,
                                               int64_t lda, const uint8_t* panel, int64_t pairs,
                                               const int32_t* zero, int32_t* c, int64_t ldc,
                                               int64_t cols) {
  __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0, lo2 = lo0, hi2 = lo0,
          lo3 = lo0, hi3 = lo0;
  for (int64_t q = 0; q < pairs; ++q) {
    const __m256i b0 = widen<kUnsigned>(panel + q * 32);
    const __m256i b1 = widen<kUnsigned>(panel + q * 32 + 16);
    NNFUSE_INT8_ROW(0)
    NNFUSE_INT8_ROW(1)
    NNFUSE_INT8_ROW(2)
    NNFUSE_INT8_ROW(3)
  }
  NNFUSE_INT8_STORE(0)
  NNFUSE_INT8_STORE(1)
  NNFUSE_INT8_STORE(2)
  NNFUSE_INT8_STORE(3)
}
#undef NNFUSE_INT8_ROW
#undef NNFUSE_INT8_STORE

using TileFn = void (*)(const int16_t*, const int32_t*, int64_t, const uint8_t*, int64_t,
                        const int32_t*, int32_t*, int64_t, int64_t);
template <bool kUnsigned>
constexpr TileFn kAvx2Tiles[kRows + 1] = {nullptr, tile_avx2<1, kUnsigned>, tile_avx2<2, kUnsigned>,
                                          tile_avx2<3, kUnsigned>, tile_avx2<4, kUnsigned>};
#endif

std::atomic<bool> forced_scalar{false};

bool use_avx2() {
#if defined(__x86_64__)
  static const bool cpu = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return cpu && !forced_scalar.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

}  // namespace

const char* gemm_isa() { return use_avx2() ? "avx2" : "scalar"; }

void force_scalar_gemm(bool on) { forced_scalar.store(on, std::memory_order_relaxed); }

void gemm(const int16_t* a, const int32_t* sums, int64_t m, const PackedB& b, int64_t n0,
          int64_t n1, int32_t* c, int64_t ldc) {
  const int64_t lda = b.pairs * 2;
  [[maybe_unused]] const bool avx2 = use_avx2();
  for (int64_t col = n0; col < n1; col += kPanel) {
    const uint8_t* panel = b.panel(col / kPanel);
    const int32_t* zero = b.zero.empty() ? nullptr : b.zero.data() + col;
    const int64_t cols = std::min(kPanel, n1 - col);
    for (int64_t r = 0; r < m; r += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, m - r));
      const int16_t* ar = a + r * lda;
      int32_t* cr = c + r * ldc + (col - n0);
#if defined(__x86_64__)
      if (avx2) {
        (b.is_unsigned ? kAvx2Tiles<true> : kAvx2Tiles<false>)[rows](ar, sums + r, lda, panel,
                                                                     b.pairs, zero, cr, ldc, cols);
        continue;
      }
#endif
      if (b.is_unsigned) {
        tile_scalar<uint8_t>(ar, sums + r, lda, rows, panel, b.pairs, zero, cr, ldc, cols);
      } else {
        tile_scalar<int8_t>(ar, sums + r, lda, rows, panel, b.pairs, zero, cr, ldc, cols);
      }
    }
  }
}

}  // namespace nnfuse::cpu::int8
