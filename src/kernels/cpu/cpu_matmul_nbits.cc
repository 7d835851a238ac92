// cpu.matmul_nbits: MatMulNBits (ops/quant.h), a weight-only quantized dense layer, with its
// weights kept packed (2, 4 or 8 bits a weight, a quarter to an eighth of float32's bytes).
// Few rows (a decode step's one token): each thread takes blocks of columns and, block by
// block of K, multiplies the codes as they are unpacked (4 and 8 bits: in vector registers,
// A's elements reordered once per run to meet a byte's low and high codes) by A less the zero
// point, then by the block's scale, so the weights are read once, packed, from memory: the
// step is bound by their bytes. More rows (a prefill): panels of columns are dequantized into a
// buffer and multiplied by oneDNN's sgemm, the dequantization then a small part of the work.
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/matmul_nbits.h"
#include "ops/quant.h"

namespace nnfuse::cpu {
namespace {

namespace nb = ops::matmul_nbits;

constexpr int64_t kDotRows = 8;    // up to this many rows: per-column dot products
constexpr int64_t kColBlock = 16;  // columns per task of the dot-product form
constexpr int64_t kPanel = 128;    // columns per dequantized panel of the sgemm form

}  // namespace

// Tests run the portable loop too.
bool force_portable_nbits = false;

namespace {

NNFUSE_TARGET_CLONES float dot(const float* a, const float* b, int64_t k) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < k; ++i) s += a[i] * b[i];
  return s;
}

// One column's dot product with a row of A: over its blocks of `bytes` bytes (a multiple of 8),
// the sum of (code - zero[j]) * a within block j, times scale[j]. 4 bits: two codes a byte,
// the low one first, and `a` holds each block's elements under the low codes, then those under
// the high ones; 8 bits: one code a byte, `a` in order.
template <int kBits>
NNFUSE_INLINE float column_dot(const uint8_t* b, const float* a, const float* scale,
                               const float* zero, int64_t blocks, int64_t bytes) {
  float sum = 0.0f;
  for (int64_t j = 0; j < blocks; ++j, b += bytes) {
    const float* lo = a + j * bytes * (8 / kBits);
    const float z = zero[j];
    float acc[8] = {};
    for (int64_t i = 0; i < bytes; i += 8) {
      for (int l = 0; l < 8; ++l) {
        const uint8_t v = b[i + l];
        if constexpr (kBits == 4) {
          acc[l] += (static_cast<float>(v & 15) - z) * lo[i + l] +
                    (static_cast<float>(v >> 4) - z) * lo[bytes + i + l];
        } else {
          acc[l] += (static_cast<float>(v) - z) * lo[i + l];
        }
      }
    }
    sum += (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))) *
           scale[j];
  }
  return sum;
}
NNFUSE_TARGET_CLONES float column_dot4_portable(const uint8_t* b, const float* a,
                                                const float* scale, const float* zero,
                                                int64_t blocks, int64_t bytes) {
  return column_dot<4>(b, a, scale, zero, blocks, bytes);
}

// column_dot<4> with AVX2 and FMA: 8 bytes (16 codes) widened to 32-bit lanes at a time, the
// low and high codes split with a mask and a shift; a block's sums stay in a vector, scaled
// into the column's with one FMA; the zero points' part, zero * (sum of the block's A), apart.
__attribute__((target("avx2,fma"))) float column_dot4_avx2(const uint8_t* b, const float* a,
                                                           const float* scale, const float* zero,
                                                           const float* a_sums, int64_t blocks,
                                                           int64_t bytes) {
  const __m256i mask = _mm256_set1_epi32(15);
  __m256 total = _mm256_setzero_ps();
  float offset = 0.0f;
  for (int64_t j = 0; j < blocks; ++j, b += bytes) {
    const float* lo = a + j * bytes * 2;
    const float* hi = lo + bytes;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t i = 0; i < bytes; i += 8) {
      const __m256i w =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i)));
      acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(w, mask)), _mm256_loadu_ps(lo + i),
                             acc0);
      acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4)), _mm256_loadu_ps(hi + i),
                             acc1);
    }
    total = _mm256_fmadd_ps(_mm256_add_ps(acc0, acc1), _mm256_set1_ps(scale[j]), total);
    offset += scale[j] * zero[j] * a_sums[j];
  }
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(total), _mm256_extractf128_ps(total, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1))) - offset;
}

bool has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
NNFUSE_TARGET_CLONES float column_dot8(const uint8_t* b, const float* a, const float* scale,
                                       const float* zero, int64_t blocks, int64_t bytes) {
  return column_dot<8>(b, a, scale, zero, blocks, bytes);
}

std::string nbits_declines(const NodeInfo& info) {
  ref::NBits g;
  const std::string why = ref::nbits_geometry(
      info.node, [&](size_t i) { return info.input_shape(i); }, &g);
  if (!why.empty()) return why;
  if (info.input_dtype(nb::kA) != DType::kFloat32) return "A is not float32";
  for (size_t i : {nb::kB, nb::kScales, nb::kZeroPoints, nb::kBias}) {
    if (info.has_input(i) && !info.constant(i)) {
      return input_label(info, i) + " is not a constant";
    }
  }
  if (info.constant(nb::kScales)->dtype() != DType::kFloat32) return "the scales are not float32";
  if (info.has_input(nb::kBias) && info.constant(nb::kBias)->dtype() != DType::kFloat32) {
    return "the bias is not float32";
  }
  return "";
}

class MatMulNBitsKernel : public Kernel {
 public:
  explicit MatMulNBitsKernel(const NodeInfo& info) : node_(info.node), opset_(info.opset) {
    ref::nbits_geometry(
        info.node, [&](size_t i) { return info.input_shape(i); }, &g_);
    // Copies of the packed weights: the plan releases the graph's.
    auto copy = [&](size_t i, auto* out) {
      if (!info.has_input(i)) return;
      const Tensor& t = *info.constant(i);
      using T = typename std::remove_reference_t<decltype(*out)>::value_type;
      out->assign(t.data<T>(), t.data<T>() + t.numel());
    };
    copy(nb::kB, &b_);
    copy(nb::kScales, &scales_);
    copy(nb::kBias, &bias_);
    if (info.has_input(nb::kZeroPoints)) {
      if (info.constant(nb::kZeroPoints)->dtype() == DType::kUInt8) {
        copy(nb::kZeroPoints, &zero_packed_);
      } else {
        copy(nb::kZeroPoints, &zero_real_);
      }
    }
  }

  bool reads_input(size_t i) const override { return i == nb::kA; }

  void run(KernelIO& io) override {
    const Tensor& a = io.in(nb::kA);
    if (a.dtype() != DType::kFloat32 || a.rank() < 1 || a.shape().back() != g_.k) {
      return run_reference(node_, opset_, io);  // names the problem
    }
    Dims out = a.shape();
    out.back() = g_.n;
    Tensor& y = io.output(0, DType::kFloat32, out);
    const int64_t rows = a.numel() / g_.k;
    const float* pa = a.data<float>();
    float* py = y.data<float>();
    if (rows <= kDotRows) {
      dot_rows(pa, rows, py);
    } else {
      panels(pa, rows, py);
    }
  }

 private:
  ref::NBitsZeros zeros() const {
    return {zero_packed_.empty() ? nullptr : zero_packed_.data(),
            zero_real_.empty() ? nullptr : zero_real_.data()};
  }
  void column(int64_t c, float* w) const {
    ref::dequantize_nbits_column(g_, c, b_.data(), scales_.data(), zeros(), w);
  }

  void dot_rows(const float* a, int64_t rows, float* y) const {
    if (g_.bits == 4 || g_.bits == 8) return packed_dot_rows(a, rows, y);
    const int64_t tasks = (g_.n + kColBlock - 1) / kColBlock;
    parallel_tasks(tasks, g_.n * g_.k * 4, [&](int64_t t) {
      std::unique_ptr<float[]> w(new float[static_cast<size_t>(g_.k)]);
      const int64_t c1 = std::min(g_.n, (t + 1) * kColBlock);
      for (int64_t c = t * kColBlock; c < c1; ++c) {
        column(c, w.get());
        const float b = bias_.empty() ? 0.0f : bias_[static_cast<size_t>(c)];
        for (int64_t r = 0; r < rows; ++r) y[r * g_.n + c] = dot(a + r * g_.k, w.get(), g_.k) + b;
      }
    });
  }

  // 4 and 8 bits: A padded to whole blocks (zeros past K, so the padding codes add nothing)
  // and, for 4 bits, each block's elements reordered as the bytes hold them: the elements under
  // the low codes, then those under the high ones.
  void packed_dot_rows(const float* a, int64_t rows, float* y) const {
    const int64_t width = g_.blocks * g_.block, half = g_.blob;
    std::vector<float> ap(static_cast<size_t>(rows * width), 0.0f);
    std::vector<float> sums(static_cast<size_t>(rows * g_.blocks), 0.0f);  // A's, per block
    for (int64_t r = 0; r < rows; ++r) {
      float* to = ap.data() + r * width;
      for (int64_t k = 0; k < g_.k; ++k) {
        const int64_t j = k / g_.block, i = k % g_.block;
        to[g_.bits == 4 ? j * g_.block + (i % 2) * half + i / 2 : k] = a[r * g_.k + k];
        sums[static_cast<size_t>(r * g_.blocks + j)] += a[r * g_.k + k];
      }
    }
    const bool avx2 = g_.bits == 4 && has_avx2_fma() && !force_portable_nbits;
    const int64_t tasks = (g_.n + kColBlock - 1) / kColBlock;
    parallel_tasks(tasks, g_.n * g_.k * 2, [&](int64_t t) {
      std::vector<float> zero(static_cast<size_t>(g_.blocks));
      const int64_t c1 = std::min(g_.n, (t + 1) * kColBlock);
      for (int64_t c = t * kColBlock; c < c1; ++c) {
        const uint8_t* codes = b_.data() + c * g_.blocks * g_.blob;
        const float* scale = scales_.data() + c * g_.blocks;
        for (int64_t j = 0; j < g_.blocks; ++j)
          zero[static_cast<size_t>(j)] = ref::nbits_zero(g_, zeros(), c, j);
        const float bias = bias_.empty() ? 0.0f : bias_[static_cast<size_t>(c)];
        for (int64_t r = 0; r < rows; ++r) {
          const float* ar = ap.data() + r * width;
          float d;
          if (avx2) {
            d = column_dot4_avx2(codes, ar, scale, zero.data(), sums.data() + r * g_.blocks,
                                 g_.blocks, g_.blob);
          } else if (g_.bits == 4) {
            d = column_dot4_portable(codes, ar, scale, zero.data(), g_.blocks, g_.blob);
          } else {
            d = column_dot8(codes, ar, scale, zero.data(), g_.blocks, g_.blob);
          }
          y[r * g_.n + c] = d + bias;
        }
      }
    });
  }

  void panels(const float* a, int64_t rows, float* y) const {
    std::vector<float> w(static_cast<size_t>(std::min(kPanel, g_.n) * g_.k));
    for (int64_t c0 = 0; c0 < g_.n; c0 += kPanel) {
      const int64_t nc = std::min(kPanel, g_.n - c0);
      parallel_tasks(nc, nc * g_.k * 4, [&](int64_t c) { column(c0 + c, w.data() + c * g_.k); });
      // Y[:, c0:c0+nc] = A x Wpanel^T, row-major.
      dnnl_sgemm('N', 'T', rows, nc, g_.k, 1.0f, a, g_.k, w.data(), g_.k, 0.0f, y + c0, g_.n);
    }
    if (bias_.empty()) return;
    parallel_range(rows * g_.n, kParallelGrain, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) y[i] += bias_[static_cast<size_t>(i % g_.n)];
    });
  }

  const Node& node_;
  int64_t opset_;
  ref::NBits g_;
  std::vector<uint8_t> b_, zero_packed_;
  std::vector<float> scales_, zero_real_, bias_;
};

std::unique_ptr<Kernel> make_matmul_nbits(const NodeInfo& info) {
  return std::make_unique<MatMulNBitsKernel>(info);
}

}  // namespace

void append_matmul_nbits_kernels(FactoryTable& t) {
  t.emplace_back("MatMulNBits",
                 KernelFactory{"cpu.matmul_nbits", accepts_unless_declined<nbits_declines>, nullptr,
                               make_matmul_nbits, nullptr, nbits_declines});
}

}  // namespace nnfuse::cpu
