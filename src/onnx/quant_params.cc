#include "onnx/quant_params.h"

#include <cmath>
#include <optional>
#include <sstream>

#include "ir/error.h"
#include "kernels/ref/matmul_nbits.h"
#include "ops/op.h"

namespace nnfuse {
namespace {

class Checker {
 public:
  Checker(const Node& n, const std::string& label) : n_(n), label_(label) {}

  // Input i's constant values when it is a constant (nullptr otherwise).
  const Tensor* constant(size_t i) const {
    const Value* v = i < n_.num_inputs() ? n_.input(i) : nullptr;
    return v && v->is_constant() ? &v->constant() : nullptr;
  }
  // How many values input i has, when it is a constant.
  std::optional<int64_t> count(size_t i) const {
    const Tensor* t = constant(i);
    return t ? std::optional<int64_t>(t->numel()) : std::nullopt;
  }
  // Dim `d` (negative: from the end) of input i, when known.
  std::optional<int64_t> dim(size_t i, int64_t d) const {
    const Value* v = i < n_.num_inputs() ? n_.input(i) : nullptr;
    if (!v || !v->shape().has_rank) return std::nullopt;
    const auto r = static_cast<int64_t>(v->shape().dims.size());
    if (d < 0) d += r;
    if (d < 0 || d >= r || !v->shape().dims[static_cast<size_t>(d)].known()) return std::nullopt;
    return v->shape().dims[static_cast<size_t>(d)].value;
  }

  void scale(size_t i, const char* what) const {
    const Tensor* t = constant(i);
    if (!t || !dtype_is_float(t->dtype())) return;
    for (int64_t k = 0; k < t->numel(); ++k) {
      const double s = t->double_at(k);
      if (std::isfinite(s) && s > 0) continue;
      std::ostringstream v;
      v << s;
      fail_here(what, " is ", v.str(), t->numel() > 1 ? " at index " + std::to_string(k) : "",
                "; a quantization scale must be positive and finite");
    }
  }
  // The scale (input s) and zero point (input z) have one length.
  void same_length(size_t s, size_t z, const char* what) const {
    auto cs = count(s), cz = count(z);
    if (cs && cz && *cs != *cz) {
      fail_here(what, "'s scale has ", *cs, " values but its zero point ", *cz);
    }
  }
  // Input i holds one value, or `want` (when known) values.
  void one_or(size_t i, std::optional<int64_t> want, const char* what, const char* of) const {
    auto c = count(i);
    if (!c || *c == 1 || !want || *c == *want) return;
    fail_here(what, " has ", *c, " values; it takes one, or one per ", of, " (", *want, ")");
  }
  void zero_int32_zero_point(size_t i) const {
    const Tensor* t = constant(i);
    if (!t || t->dtype() != DType::kInt32) return;
    for (int64_t k = 0; k < t->numel(); ++k) {
      if (t->double_at(k) != 0) {
        fail_here("the zero point of an int32 input is ", static_cast<int64_t>(t->double_at(k)),
                  "; ONNX states 0 for int32");
      }
    }
  }
  // QuantizeLinear, DequantizeLinear: per tensor, per axis or (block_size) per block.
  void linear(bool dequantize) const {
    scale(1, "the scale");
    same_length(1, 2, "the input");
    if (dequantize) zero_int32_zero_point(2);
    if (n_.attr_int("block_size", 0) != 0) return;
    auto c = count(1);
    if (!c || *c == 1) return;
    const int64_t axis = n_.attr_int("axis", 1);
    auto d = dim(0, axis);
    if (d && *d != *c) {
      fail_here("the scale has ", *c, " values but the input has ", *d, " along axis ", axis);
    }
  }

  template <typename... A>
  [[noreturn]] void fail_here(const A&... a) const {
    fail(ErrorKind::kInvalidModel, label_, ": ", n_.op_type(), " node '", n_.name(), "': ", a...);
  }

 private:
  const Node& n_;
  const std::string& label_;
};

}  // namespace

void check_quantization_params(const Graph& g, const std::string& label) {
  for (const Node* n : g.nodes()) {
    const Checker c(*n, label);
    switch (n->op()) {
      case Op::kQuantizeLinear:
        c.linear(false);
        break;
      case Op::kDequantizeLinear:
        c.linear(true);
        break;
      case Op::kQLinearConv:
        c.scale(1, "x_scale");
        c.scale(4, "w_scale");
        c.scale(6, "y_scale");
        c.same_length(4, 5, "w");
        c.one_or(4, c.dim(3, 0), "w_scale", "output channel");
        c.one_or(5, c.dim(3, 0), "w_zero_point", "output channel");
        break;
      case Op::kQLinearMatMul:
        c.scale(1, "a_scale");
        c.scale(4, "b_scale");
        c.scale(6, "y_scale");
        c.same_length(1, 2, "a");
        c.same_length(4, 5, "b");
        c.one_or(1, c.dim(0, -2), "a_scale", "row of a");
        c.one_or(4, c.dim(3, -1), "b_scale", "column of b");
        break;
      case Op::kMatMulInteger:
        c.one_or(2, c.dim(0, -2), "a_zero_point", "row of A");
        c.one_or(3, c.dim(1, -1), "b_zero_point", "column of B");
        break;
      case Op::kConvInteger:
        c.one_or(3, c.dim(1, 0), "w_zero_point", "output channel");
        break;
      case Op::kMatMulNBits: {
        ref::NBits geometry;
        const std::string why = ref::nbits_geometry(*n, &geometry);
        if (!why.empty()) c.fail_here(why);
        break;
      }
      case Op::kMatMulIntegerToFloat:
        c.scale(2, "a_scale");
        c.scale(3, "b_scale");
        break;
      default:
        break;
    }
  }
}

}  // namespace nnfuse
