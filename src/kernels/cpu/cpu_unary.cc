// Unary elementwise kernels (float32): activations, exp/log/erf, Clip, and the fused
// activations Gelu (approximate "none" or "tanh") and Swish (x * sigmoid(alpha x)) of domain
// ai.nnfuse. Layout-transparent (the output has the input's layout) and in-place capable.
#include <cmath>
#include <map>
#include <memory>

#include "kernels/cpu/cpu_elementwise.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

// y[i] = op(x[i]). No __restrict: y may be x. ivdep is exact here, since element i is read
// before element i is written and no other element is touched.
template <typename Op>
NNFUSE_INLINE void map_loop(const float* x, float* y, int64_t n, Op op) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
}

#define NNFUSE_LAMBDA(...) \
  [=](float v) __attribute__((always_inline)) { return __VA_ARGS__; }

NNFUSE_TARGET_CLONES void unary_loop(UnaryKind kind, const float* x, float* y, int64_t n, float a,
                                     float b) {
  switch (kind) {
    case UnaryKind::kRelu:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v < 0.0f ? 0.0f : v));
    case UnaryKind::kLeakyRelu:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v >= 0.0f ? v : a * v));
    case UnaryKind::kSigmoid:
      return map_loop(x, y, n, NNFUSE_LAMBDA(sigmoid_f(v)));
    case UnaryKind::kHardSigmoid:
      // min then max, with NaN becoming 1 as the reference's fmax(0, fmin(1, v)) does.
      return map_loop(
          x, y, n, [=](float v) __attribute__((always_inline)) {
            float t = a * v + b;
            t = t < 1.0f ? t : 1.0f;
            return t > 0.0f ? t : 0.0f;
          });
    case UnaryKind::kHardSwish:
      return map_loop(
          x, y, n, [=](float v) __attribute__((always_inline)) {
            float t = v * (1.0f / 6.0f) + 0.5f;
            t = t < 1.0f ? t : 1.0f;
            return v * (t > 0.0f ? t : 0.0f);
          });
    case UnaryKind::kTanh:
      return map_loop(x, y, n, NNFUSE_LAMBDA(tanh_f(v)));
    case UnaryKind::kErf:
      return map_loop(x, y, n, NNFUSE_LAMBDA(erf_f(v)));
    case UnaryKind::kExp:
      return map_loop(x, y, n, NNFUSE_LAMBDA(exp_f(v)));
    case UnaryKind::kLog:
      return map_loop(x, y, n, NNFUSE_LAMBDA(log_f(v)));
    case UnaryKind::kSqrt:
      return map_loop(x, y, n, NNFUSE_LAMBDA(std::sqrt(v)));
    case UnaryKind::kReciprocal:
      return map_loop(x, y, n, NNFUSE_LAMBDA(1.0f / v));
    case UnaryKind::kNeg:
      return map_loop(x, y, n, NNFUSE_LAMBDA(-v));
    case UnaryKind::kAbs:
      return map_loop(x, y, n, NNFUSE_LAMBDA(abs_f(v)));
    case UnaryKind::kClip:
      // The reference's order: max with the lower bound first, so lo > hi gives hi everywhere.
      return map_loop(
          x, y, n, [=](float v) __attribute__((always_inline)) {
            const float t = v < a ? a : v;
            return b < t ? b : t;
          });
    case UnaryKind::kElu:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v >= 0.0f ? v : a * expm1_f(v)));
    case UnaryKind::kSoftplus:
      return map_loop(x, y, n, NNFUSE_LAMBDA(softplus_f(v)));
    case UnaryKind::kSquare:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v * v));
    case UnaryKind::kCube:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v * v * v));
    case UnaryKind::kPowHalf:
      // pow(-0, 0.5) is +0 and pow(-inf, 0.5) is +inf, unlike sqrt.
      return map_loop(x, y, n, NNFUSE_LAMBDA(v == -kInf ? kInf : std::sqrt(v) + 0.0f));
    case UnaryKind::kIdentity:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v));
  }
}

// ---- Gelu and Swish: one pass instead of the 5 to 9 nodes they replace.
//   erf:   x / 2 * (1 + erf(x / sqrt(2)))
//   tanh:  x / 2 * (1 + tanh(u)) == x * sigmoid(2u), u = sqrt(2 / pi) * (x + 0.044715 x^3)
//          (the sigmoid form keeps the negative tail's relative accuracy)
//   swish: x * sigmoid(alpha x)
enum class GeluMode { kErf, kTanh, kSwish };

NNFUSE_TARGET_CLONES void gelu_loop(GeluMode mode, const float* x, float* y, int64_t n,
                                    float alpha) {
  constexpr float kInvSqrt2 = 0.707106781186547524f;
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071f;  // 2 * sqrt(2 / pi)
  switch (mode) {
    case GeluMode::kErf:
      return map_loop(x, y, n, NNFUSE_LAMBDA(0.5f * v * (1.0f + erf_f(v * kInvSqrt2))));
    case GeluMode::kTanh:
      return map_loop(x, y, n,
                      NNFUSE_LAMBDA(v * sigmoid_f(kTwoSqrt2OverPi * (v + 0.044715f * v * v * v))));
    case GeluMode::kSwish:
      return map_loop(x, y, n, NNFUSE_LAMBDA(v * sigmoid_f(alpha * v)));
  }
}

#undef NNFUSE_LAMBDA

// The mode of a Gelu or Swish node; throws on an unknown `approximate`.
GeluMode gelu_mode(const Node& n, float* alpha) {
  *alpha = 1.0f;
  if (n.is(Op::kSwish)) {
    *alpha = n.attr_float("alpha", 1.0f);
    return GeluMode::kSwish;
  }
  const std::string approx = n.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") {
    fail(ErrorKind::kUnsupported, n.describe(), ": unknown approximate '", approx, "'");
  }
  return approx == "tanh" ? GeluMode::kTanh : GeluMode::kErf;
}

class GeluKernel : public Kernel {
 public:
  explicit GeluKernel(const NodeInfo& info) : who_(info.node.describe()) {
    mode_ = gelu_mode(info.node, &alpha_);
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    parallel_range(x.numel(), kParallelGrain / 8, [&](int64_t lo, int64_t hi) {
      gelu_loop(mode_, px + lo, py + lo, hi - lo, alpha_);
    });
  }

 private:
  std::string who_;
  GeluMode mode_ = GeluMode::kErf;
  float alpha_ = 1.0f;
};

bool gelu_accepts(const NodeInfo& info) {
  const Node& n = info.node;
  // Gelu is also ONNX's (opset 20), with the same semantics.
  const bool domain_ok = n.domain() == kFusedDomain || (n.is(Op::kGelu) && n.domain().empty());
  if (!domain_ok || n.num_inputs() != 1 || !input_is(info, 0, DType::kFloat32) ||
      !single_output(n)) {
    return false;
  }
  try {
    float alpha;
    gelu_mode(n, &alpha);
  } catch (const Error&) {
    return false;  // the reference kernel reports it
  }
  return true;
}

std::unique_ptr<Kernel> gelu_create(const NodeInfo& info) {
  return std::make_unique<GeluKernel>(info);
}

struct UnaryOpInfo {
  UnaryKind kind;
  bool costly;  // transcendental: worth threads at smaller sizes
  const char* a_name = nullptr;
  float a_default = 0;
  const char* b_name = nullptr;
  float b_default = 0;
};

const std::map<std::string, UnaryOpInfo>& unary_ops() {
  static const std::map<std::string, UnaryOpInfo> ops = {
      {"Relu", {UnaryKind::kRelu, false}},
      {"LeakyRelu", {UnaryKind::kLeakyRelu, false, "alpha", 0.01f}},
      {"Sigmoid", {UnaryKind::kSigmoid, true}},
      {"HardSigmoid", {UnaryKind::kHardSigmoid, false, "alpha", 0.2f, "beta", 0.5f}},
      {"HardSwish", {UnaryKind::kHardSwish, false}},
      {"Tanh", {UnaryKind::kTanh, true}},
      {"Erf", {UnaryKind::kErf, true}},
      {"Exp", {UnaryKind::kExp, true}},
      {"Log", {UnaryKind::kLog, true}},
      {"Sqrt", {UnaryKind::kSqrt, true}},
      {"Reciprocal", {UnaryKind::kReciprocal, false}},
      {"Neg", {UnaryKind::kNeg, false}},
      {"Abs", {UnaryKind::kAbs, false}},
      {"Clip", {UnaryKind::kClip, false}},
      {"Elu", {UnaryKind::kElu, true, "alpha", 1.0f}},
      {"Softplus", {UnaryKind::kSoftplus, true}},
  };
  return ops;
}

// Reads a Clip bound (input i, a one-element float32 tensor) into v when present.
void clip_bound(const KernelIO& io, size_t i, const std::string& who, float* v) {
  if (!io.has_input(i)) return;
  const Tensor& t = io.in(i);
  if (t.dtype() != DType::kFloat32 || t.numel() != 1) {
    fail(ErrorKind::kRuntime, who, ": input ", i, " must be a float32 scalar, got ",
         dtype_name(t.dtype()), dims_str(t.shape()));
  }
  *v = t.data<float>()[0];
}

class UnaryKernel : public Kernel {
 public:
  UnaryKernel(const NodeInfo& info, const UnaryOpInfo& op)
      : op_(op), who_(info.node.describe()), opset_(info.opset) {
    const Node& n = info.node;
    if (op.a_name) a_ = n.attr_float(op.a_name, op.a_default);
    if (op.b_name) b_ = n.attr_float(op.b_name, op.b_default);
    if (op.kind == UnaryKind::kClip) {
      a_ = -kInf;
      b_ = kInf;
      if (opset_ < 11) {
        if (n.has_attr("min")) a_ = n.attr_float("min", 0);
        if (n.has_attr("max")) b_ = n.attr_float("max", 0);
      }
    }
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    require_float(x, who_);
    float a = a_, b = b_;
    if (op_.kind == UnaryKind::kClip && opset_ >= 11) {
      clip_bound(io, 1, who_, &a);
      clip_bound(io, 2, who_, &b);
    }
    Tensor& y = io.output(0, DType::kFloat32, x.shape(), x.layout());
    const float* px = x.data<float>();
    float* py = y.data<float>();
    const UnaryKind kind = op_.kind;
    parallel_range(
        x.numel(), op_.costly ? kParallelGrain / 8 : kParallelGrain,
        [&](int64_t lo, int64_t hi) { unary_loop(kind, px + lo, py + lo, hi - lo, a, b); });
  }

 private:
  UnaryOpInfo op_;
  std::string who_;
  int64_t opset_;
  float a_ = 0, b_ = 0;
};

bool unary_accepts(const NodeInfo& info) {
  auto it = unary_ops().find(info.node.op_type());
  if (it == unary_ops().end() || !info.node.domain().empty()) return false;
  if (!input_is(info, 0, DType::kFloat32) || !float_inputs(info) || !single_output(info.node)) {
    return false;
  }
  if (it->second.kind == UnaryKind::kClip ? info.node.num_inputs() > 3
                                          : info.node.num_inputs() != 1) {
    return false;
  }
  // Attributes of the wrong kind are left to the reference kernel to report.
  try {
    UnaryKernel probe(info, it->second);
  } catch (const Error&) {
    return false;
  }
  return true;
}

std::unique_ptr<Kernel> unary_create(const NodeInfo& info) {
  return std::make_unique<UnaryKernel>(info, unary_ops().at(info.node.op_type()));
}

}  // namespace

bool unary_kind_of(const std::string& op_type, UnaryKind* kind) {
  auto it = unary_ops().find(op_type);
  if (it == unary_ops().end()) return false;
  *kind = it->second.kind;
  return true;
}

void unary_run(UnaryKind kind, const float* x, float* y, int64_t n, float a, float b) {
  unary_loop(kind, x, y, n, a, b);
}

void append_unary_kernels(std::vector<std::pair<std::string, KernelFactory>>& t) {
  const KernelFactory f{"cpu.unary", unary_accepts, same_as_input, unary_create, in_place_output0};
  for (const auto& [op, info] : unary_ops()) t.emplace_back(op, f);
  const KernelFactory gelu{"cpu.gelu", gelu_accepts, same_as_input, gelu_create, in_place_output0};
  t.emplace_back("Gelu", gelu);
  t.emplace_back("Swish", gelu);
}

}  // namespace nnfuse::cpu
