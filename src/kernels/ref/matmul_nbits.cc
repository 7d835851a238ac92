// MatMulNBits's reference kernel: W dequantized column by column, the products summed in double.
#include "kernels/ref/matmul_nbits.h"

#include <vector>

#include "kernels/ref/quant_internal.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/quant.h"

namespace nnfuse::ref {

namespace nb = ops::matmul_nbits;

std::string nbits_geometry(const Node& node,
                           const std::function<std::optional<Dims>(size_t)>& shape_of, NBits* g) {
  NBits r;
  r.k = node.attr_int("K", 0);
  r.n = node.attr_int("N", 0);
  r.bits = node.attr_int("bits", 4);
  r.block = node.attr_int("block_size", 0);
  if (r.k <= 0 || r.n <= 0) return "K and N must be positive attributes";
  if (r.bits != 2 && r.bits != 4 && r.bits != 8) {
    return "bits " + std::to_string(r.bits) + " is not supported (2, 4 or 8)";
  }
  if (r.block < 16 || (r.block & (r.block - 1)) != 0) {
    return "block_size " + std::to_string(r.block) + " is not a power of two of at least 16";
  }
  if (node.num_inputs() > nb::kGIdx && node.input(nb::kGIdx)) {
    return "g_idx (a column order of the weights) is not supported";
  }
  r.blocks = (r.k + r.block - 1) / r.block;
  r.blob = r.block * r.bits / 8;
  r.zero_row = (r.blocks * r.bits + 7) / 8;
  auto numel = [](const Dims& d) { return checked_numel(d); };
  if (auto a = shape_of(nb::kA); a && (a->empty() || a->back() != r.k)) {
    return "A " + dims_str(*a) + " does not end in K (" + std::to_string(r.k) + ")";
  }
  if (auto b = shape_of(nb::kB); b && *b != Dims{r.n, r.blocks, r.blob}) {
    return "B " + dims_str(*b) + " is not [N, ceil(K / block_size), block_size * bits / 8] (" +
           dims_str(Dims{r.n, r.blocks, r.blob}) + ")";
  }
  if (auto s = shape_of(nb::kScales); s && numel(*s) != r.n * r.blocks) {
    return "scales " + dims_str(*s) + " are not one per block of each column (" +
           std::to_string(r.n * r.blocks) + ")";
  }
  if (node.num_inputs() > nb::kZeroPoints && node.input(nb::kZeroPoints)) {
    const DType t = node.input(nb::kZeroPoints)->dtype();
    const int64_t want = t == DType::kUInt8 ? r.n * r.zero_row : r.n * r.blocks;
    if (t != DType::kUInt8 && t != DType::kFloat32) {
      return "zero points of type " + dtype_name(t) + " are not supported (uint8 or float32)";
    }
    if (auto z = shape_of(nb::kZeroPoints); z && numel(*z) != want) {
      return "zero points " + dims_str(*z) + " are not " + std::to_string(want) + " values";
    }
  }
  if (node.num_inputs() > nb::kBias && node.input(nb::kBias)) {
    if (auto b = shape_of(nb::kBias); b && numel(*b) != r.n) {
      return "bias " + dims_str(*b) + " is not one value per column (" + std::to_string(r.n) + ")";
    }
  }
  *g = r;
  return "";
}

std::string nbits_geometry(const Node& node, NBits* g) {
  return nbits_geometry(
      node,
      [&](size_t i) -> std::optional<Dims> {
        const Value* v = i < node.num_inputs() ? node.input(i) : nullptr;
        if (!v || !v->shape().fully_known()) return std::nullopt;
        return v->shape().static_dims();
      },
      g);
}

void dequantize_nbits_column(const NBits& g, int64_t col, const uint8_t* b, const float* scales,
                             const NBitsZeros& zeros, float* out) {
  const uint8_t mask = static_cast<uint8_t>((1 << g.bits) - 1);
  const uint8_t* codes = b + col * g.blocks * g.blob;
  for (int64_t j = 0; j < g.blocks; ++j) {
    const float scale = scales[col * g.blocks + j];
    const float zero = nbits_zero(g, zeros, col, j);
    const uint8_t* blob = codes + j * g.blob;
    const int64_t k0 = j * g.block, k1 = std::min(g.k, k0 + g.block);
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t bit = (k - k0) * g.bits;
      const float code = static_cast<float>((blob[bit / 8] >> (bit % 8)) & mask);
      out[k] = (code - zero) * scale;
    }
  }
}

namespace {

std::string support_matmul_nbits(const Node& node, int64_t /*opset*/) {
  NBits g;
  std::string why = nbits_geometry(node, &g);
  const std::pair<size_t, DType> types[] = {{nb::kA, DType::kFloat32},
                                            {nb::kB, DType::kUInt8},
                                            {nb::kScales, DType::kFloat32},
                                            {nb::kBias, DType::kFloat32}};
  for (const auto& [i, t] : types) {
    if (!why.empty()) break;
    why = require_input_types(node, {t}, i, 1);
  }
  return why;
}

void run_matmul_nbits(KernelContext& ctx) {
  NBits g;
  const std::string why = nbits_geometry(
      ctx.node,
      [&](size_t i) -> std::optional<Dims> {
        if (!ctx.has_input(i)) return std::nullopt;
        return ctx.in(i).shape();
      },
      &g);
  if (!why.empty()) fail(ErrorKind::kInvalidModel, ctx.node.describe(), ": ", why);
  const Tensor& a = ctx.in(nb::kA);
  check_input_dtypes(ctx, nb::kA, {DType::kFloat32});
  check_input_dtypes(ctx, nb::kB, {DType::kUInt8});
  check_input_dtypes(ctx, nb::kScales, {DType::kFloat32});
  NBitsZeros zeros;
  if (ctx.has_input(nb::kZeroPoints)) {
    const Tensor& z = ctx.in(nb::kZeroPoints);
    if (z.dtype() == DType::kUInt8) {
      zeros.packed = z.data<uint8_t>();
    } else {
      zeros.real = z.data<float>();
    }
  }
  std::vector<float> w(static_cast<size_t>(g.n * g.k));
  for (int64_t c = 0; c < g.n; ++c) {
    dequantize_nbits_column(g, c, ctx.in(nb::kB).data<uint8_t>(), ctx.in(nb::kScales).data<float>(),
                            zeros, w.data() + c * g.k);
  }
  const float* bias = ctx.has_input(nb::kBias) ? ctx.in(nb::kBias).data<float>() : nullptr;
  Dims out = a.shape();
  out.back() = g.n;
  Tensor y(DType::kFloat32, out);
  const int64_t rows = a.numel() / g.k;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.data<float>() + r * g.k;
    for (int64_t c = 0; c < g.n; ++c) {
      const float* wc = w.data() + c * g.k;
      double acc = bias ? bias[c] : 0.0;
      for (int64_t k = 0; k < g.k; ++k) acc += static_cast<double>(x[k]) * wc[k];
      y.data<float>()[r * g.n + c] = static_cast<float>(acc);
    }
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void append_matmul_nbits_kernel(std::vector<RefKernelEntry>& t) {
  t.push_back({"MatMulNBits", run_matmul_nbits, support_matmul_nbits});
}

}  // namespace nnfuse::ref
