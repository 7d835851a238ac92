// Broadcasting elementwise kernels (float32): Add, Sub, Mul, Div, Pow, Max, Min; the
// comparisons Equal, Less, Greater, LessOrEqual, GreaterOrEqual (bool output); Where. All but
// Pow also take int32 and int64 tensors in plain layout (the index arithmetic of models
// whose shapes are known only at run time: detectors' box and level bookkeeping), as the
// reference kernels compute them: wrapping on overflow, dividing toward zero.
//
// Inputs are walked by a BroadcastLoop (cpu_broadcast.h): one inner loop per stride pattern
// (both vectors, vector and repeated scalar, ...). Channels-last inputs work in storage order
// when every other input is either channels-last of the output's rank (3 to 5) or a
// per-channel / scalar tensor.
// Pow by a constant 1, 2, 3 or 0.5 runs as a unary loop.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>

#include "kernels/cpu/cpu_broadcast.h"
#include "kernels/cpu/cpu_elementwise.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

enum class Family { kArith, kCompare, kWhere };
enum class OpKind {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kPow,
  kPRelu,  // x < 0 ? slope * x : x, the slope (b) broadcast to x
  kEqual,
  kLess,
  kGreater,
  kLessOrEqual,
  kGreaterOrEqual,
  kWhere
};

struct OpDesc {
  OpKind kind;
  Family family;
};

const std::map<std::string, OpDesc>& ops() {
  static const std::map<std::string, OpDesc> m = {
      {"Add", {OpKind::kAdd, Family::kArith}},
      {"Sub", {OpKind::kSub, Family::kArith}},
      {"Mul", {OpKind::kMul, Family::kArith}},
      {"Div", {OpKind::kDiv, Family::kArith}},
      {"Max", {OpKind::kMax, Family::kArith}},
      {"Min", {OpKind::kMin, Family::kArith}},
      {"Pow", {OpKind::kPow, Family::kArith}},
      {"PRelu", {OpKind::kPRelu, Family::kArith}},
      {"Equal", {OpKind::kEqual, Family::kCompare}},
      {"Less", {OpKind::kLess, Family::kCompare}},
      {"Greater", {OpKind::kGreater, Family::kCompare}},
      {"LessOrEqual", {OpKind::kLessOrEqual, Family::kCompare}},
      {"GreaterOrEqual", {OpKind::kGreaterOrEqual, Family::kCompare}},
      {"Where", {OpKind::kWhere, Family::kWhere}},
  };
  return m;
}

// ---- Inner loops. y may be exactly a or b (in place), hence ivdep rather than __restrict.

template <typename In, typename T, typename Op>
NNFUSE_INLINE void zip_loop(const In* a, int64_t sa, const In* b, int64_t sb, T* y, int64_t n,
                            Op op) {
  if (sa != 0 && sb != 0) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);
  } else if (sa != 0) {
    const In bv = b[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], bv);
  } else if (sb != 0) {
    const In av = a[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = op(av, b[i]);
  } else {
    const T v = op(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

#define NNFUSE_LAMBDA2(...) \
  [](float p, float q) __attribute__((always_inline)) { return __VA_ARGS__; }

NNFUSE_TARGET_CLONES void arith_loop(OpKind kind, const float* a, int64_t sa, const float* b,
                                     int64_t sb, float* y, int64_t n) {
  switch (kind) {
    case OpKind::kAdd:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p + q));
    case OpKind::kSub:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p - q));
    case OpKind::kMul:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p * q));
    case OpKind::kDiv:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p / q));
    case OpKind::kMax:  // NaN in either operand gives NaN, as numpy.maximum
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(q != q ? q : (p < q ? q : p)));
    case OpKind::kMin:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(q != q ? q : (q < p ? q : p)));
    case OpKind::kPRelu:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p < 0.0f ? q * p : p));
    default:
      return;
  }
}

NNFUSE_TARGET_CLONES void compare_loop(OpKind kind, const float* a, int64_t sa, const float* b,
                                       int64_t sb, bool* y, int64_t n) {
  switch (kind) {
    case OpKind::kEqual:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p == q));
    case OpKind::kLess:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p < q));
    case OpKind::kGreater:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p > q));
    case OpKind::kLessOrEqual:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p <= q));
    case OpKind::kGreaterOrEqual:
      return zip_loop(a, sa, b, sb, y, n, NNFUSE_LAMBDA2(p >= q));
    default:
      return;
  }
}

#undef NNFUSE_LAMBDA2

// Integer arithmetic wraps (through the unsigned type, where overflow is defined); division
// truncates toward zero, and a zero divisor sets *by_zero (the caller fails the run).
template <typename T>
void int_arith_loop(OpKind kind, const T* a, int64_t sa, const T* b, int64_t sb, T* y, int64_t n,
                    std::atomic<bool>* by_zero) {
  using U = std::make_unsigned_t<T>;
  switch (kind) {
    case OpKind::kDiv:
      return zip_loop(a, sa, b, sb, y, n, [by_zero](T p, T q) {
        if (q == 0) {
          by_zero->store(true, std::memory_order_relaxed);
          return T{0};
        }
        return q == -1 ? static_cast<T>(U(0) - U(p)) : static_cast<T>(p / q);
      });
    case OpKind::kAdd:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return static_cast<T>(U(p) + U(q)); });
    case OpKind::kSub:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return static_cast<T>(U(p) - U(q)); });
    case OpKind::kMul:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return static_cast<T>(U(p) * U(q)); });
    case OpKind::kMax:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p < q ? q : p; });
    case OpKind::kMin:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return q < p ? q : p; });
    default:
      return;
  }
}

template <typename T>
void int_compare_loop(OpKind kind, const T* a, int64_t sa, const T* b, int64_t sb, bool* y,
                      int64_t n) {
  switch (kind) {
    case OpKind::kEqual:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p == q; });
    case OpKind::kLess:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p < q; });
    case OpKind::kGreater:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p > q; });
    case OpKind::kLessOrEqual:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p <= q; });
    case OpKind::kGreaterOrEqual:
      return zip_loop(a, sa, b, sb, y, n, [](T p, T q) { return p >= q; });
    default:
      return;
  }
}

template <typename T>
void int_where_loop(const bool* c, int64_t sc, const T* x, int64_t sx, const T* y, int64_t sy,
                    T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = c[i * sc] ? x[i * sx] : y[i * sy];
}

// General Pow: no vector pow, so one std::pow per element (the reference computes in double).
void pow_loop(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::pow(a[i * sa], b[i * sb]);
}

template <int kSC, int kSX, int kSY>
NNFUSE_INLINE void where_loop_t(const bool* c, const float* x, const float* y, float* out,
                                int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) out[i] = c[i * kSC] ? x[i * kSX] : y[i * kSY];
}

NNFUSE_TARGET_CLONES void where_loop(const bool* c, int64_t sc, const float* x, int64_t sx,
                                     const float* y, int64_t sy, float* out, int64_t n) {
  switch ((sc != 0) * 4 + (sx != 0) * 2 + (sy != 0)) {
    case 0:
      return where_loop_t<0, 0, 0>(c, x, y, out, n);
    case 1:
      return where_loop_t<0, 0, 1>(c, x, y, out, n);
    case 2:
      return where_loop_t<0, 1, 0>(c, x, y, out, n);
    case 3:
      return where_loop_t<0, 1, 1>(c, x, y, out, n);
    case 4:
      return where_loop_t<1, 0, 0>(c, x, y, out, n);
    case 5:
      return where_loop_t<1, 0, 1>(c, x, y, out, n);
    case 6:
      return where_loop_t<1, 1, 0>(c, x, y, out, n);
    default:
      return where_loop_t<1, 1, 1>(c, x, y, out, n);
  }
}

// ---- Plan-time analysis.

size_t num_data_inputs(Family f) { return f == Family::kWhere ? 3 : 2; }

std::vector<std::optional<Dims>> static_shapes(const NodeInfo& info, size_t n) {
  std::vector<std::optional<Dims>> s;
  for (size_t i = 0; i < n; ++i) s.push_back(info.input_shape(i));
  return s;
}

std::vector<Layout> layouts_of(const NodeInfo& info, size_t n) {
  std::vector<Layout> l;
  for (size_t i = 0; i < n; ++i) l.push_back(input_layout(info, i));
  return l;
}

// The unary loop for Pow by a constant scalar exponent, when there is one.
std::optional<UnaryKind> pow_as_unary(const NodeInfo& info) {
  const Tensor* e = info.constant(1);
  if (!e || e->dtype() != DType::kFloat32 || e->numel() != 1) return std::nullopt;
  const float v = e->data<float>()[0];
  if (v == 1.0f) return UnaryKind::kIdentity;
  if (v == 2.0f) return UnaryKind::kSquare;
  if (v == 3.0f) return UnaryKind::kCube;
  if (v == 0.5f) return UnaryKind::kPowHalf;
  if (v == -1.0f) return UnaryKind::kReciprocal;
  return std::nullopt;
}

bool int_type(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

// The type of the operands (Where's x and y): float32, or an integer type the op runs on.
std::optional<DType> operand_type(const NodeInfo& info, const OpDesc& d) {
  const size_t n = num_data_inputs(d.family), first = d.family == Family::kWhere ? 1 : 0;
  if (info.node.num_inputs() != n || (first == 1 && !input_is(info, 0, DType::kBool)) ||
      !info.has_input(first)) {
    return std::nullopt;
  }
  const DType t = info.input_dtype(first);
  for (size_t i = first; i < n; ++i) {
    if (!input_is(info, i, t)) return std::nullopt;
  }
  if (t == DType::kFloat32) return t;
  if (int_type(t) && d.kind != OpKind::kPow && d.kind != OpKind::kPRelu) return t;
  return std::nullopt;
}

bool broadcast_accepts(const NodeInfo& info) {
  auto it = ops().find(info.node.op_type());
  if (it == ops().end() || !info.node.domain().empty() || !single_output(info.node)) return false;
  const std::optional<DType> t = operand_type(info, it->second);
  if (!t) return false;
  const size_t n = num_data_inputs(it->second.family);
  // Integers: plain layout only.
  if (*t != DType::kFloat32 && !info.all_inputs_in(Layout::kPlain)) return false;
  if (it->second.kind == OpKind::kPRelu) {
    // The slope broadcasts to X's shape only (unidirectionally); the reference reports others.
    const std::vector<std::optional<Dims>> shapes = static_shapes(info, 2);
    if (!shapes[0] || !shapes[1]) return false;
    const std::optional<Dims> out = broadcast_dims(*shapes[0], *shapes[1]);
    if (!out || *out != *shapes[0]) return false;
  }
  return elementwise_layout(static_shapes(info, n), layouts_of(info, n)).has_value();
}

Layout broadcast_output_layout(const NodeInfo& info, size_t) {
  const size_t n = info.node.num_inputs();
  return elementwise_layout(static_shapes(info, n), layouts_of(info, n)).value_or(Layout::kPlain);
}

int broadcast_in_place(const NodeInfo& info, size_t k) {
  auto it = ops().find(info.node.op_type());
  if (k != 0 || it == ops().end() || it->second.family == Family::kCompare) return -1;
  const size_t n = info.node.num_inputs();
  std::vector<std::optional<Dims>> shapes = static_shapes(info, n);
  Dims out;
  for (const auto& s : shapes) {
    if (!s) return -1;
    std::optional<Dims> b = broadcast_dims(out, *s);
    if (!b) return -1;
    out = *b;
  }
  const Layout l = broadcast_output_layout(info, 0);
  for (size_t i = it->second.family == Family::kWhere ? 1 : 0; i < n; ++i) {
    if (*shapes[i] == out && input_layout(info, i) == l) return static_cast<int>(i);
  }
  return -1;
}

// ---- The kernel.

class BroadcastKernel : public Kernel {
 public:
  explicit BroadcastKernel(const NodeInfo& info)
      : desc_(ops().at(info.node.op_type())),
        who_(info.node.describe()),
        layout_(broadcast_output_layout(info, 0)),
        type_(operand_type(info, desc_).value_or(DType::kFloat32)) {
    if (desc_.kind == OpKind::kPow) pow_unary_ = pow_as_unary(info);
  }

  void run(KernelIO& io) override {
    const size_t n = num_data_inputs(desc_.family);
    std::vector<const Tensor*> in(n);
    Dims out;
    for (size_t i = 0; i < n; ++i) {
      in[i] = &io.in(i);
      const DType want = desc_.family == Family::kWhere && i == 0 ? DType::kBool : type_;
      if (in[i]->dtype() != want) {
        fail(ErrorKind::kRuntime, who_, ": input ", i, " has type ", dtype_name(in[i]->dtype()),
             ", expected ", dtype_name(want));
      }
      std::optional<Dims> b = broadcast_dims(out, in[i]->shape());
      if (!b) {
        fail(ErrorKind::kRuntime, who_, ": shapes ", dims_str(out), " and ",
             dims_str(in[i]->shape()), " cannot be broadcast");
      }
      out = *b;
    }
    // Storage-order shapes: everything as is when plain; [N, H, W, C] orders when NHWC.
    std::vector<Dims> storage;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = *in[i];
      if (layout_ == Layout::kPlain) {
        if (t.layout() != Layout::kPlain) {
          fail(ErrorKind::kRuntime, who_, ": input ", i, " arrived in ", layout_name(t.layout()),
               " layout, planned plain");
        }
        storage.push_back(t.shape());
        continue;
      }
      const size_t r = out.size();
      const bool ok =
          t.layout() == Layout::kNHWC ? t.shape().size() == r : plain_matches_nhwc(t.shape(), r);
      if (!ok || !channels_last_rank(r)) {
        fail(ErrorKind::kRuntime, who_, ": input ", i, " of shape ", dims_str(t.shape()),
             " cannot broadcast in channels-last order");
      }
      Dims aligned(r - t.shape().size(), 1);
      aligned.insert(aligned.end(), t.shape().begin(), t.shape().end());
      storage.push_back(storage_dims(aligned, Layout::kNHWC));
    }
    const DType out_type = desc_.family == Family::kCompare ? DType::kBool : type_;
    Tensor& y = io.output(0, out_type, out, layout_);
    const BroadcastLoop loop = make_broadcast_loop(storage_dims(out, layout_), storage);
    if (type_ == DType::kInt64) return run_int<int64_t>(loop, in, y);
    if (type_ == DType::kInt32) return run_int<int32_t>(loop, in, y);
    if (pow_unary_) {
      const float* px = in[0]->data<float>();
      float* py = y.data<float>();
      const UnaryKind kind = *pow_unary_;
      parallel_range(y.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
        unary_run(kind, px + lo, py + lo, hi - lo, 0, 0);
      });
      return;
    }
    switch (desc_.family) {
      case Family::kArith: {
        const float* a = in[0]->data<float>();
        const float* b = in[1]->data<float>();
        float* py = y.data<float>();
        const int64_t sa = loop.inner_stride(0), sb = loop.inner_stride(1);
        const OpKind kind = desc_.kind;
        if (kind == OpKind::kPow) {
          for_each_run(loop, 16, [&](const int64_t* off, int64_t o, int64_t len) {
            pow_loop(a + off[0], sa, b + off[1], sb, py + o, len);
          });
        } else {
          for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
            arith_loop(kind, a + off[0], sa, b + off[1], sb, py + o, len);
          });
        }
        return;
      }
      case Family::kCompare: {
        const float* a = in[0]->data<float>();
        const float* b = in[1]->data<float>();
        bool* py = y.data<bool>();
        const int64_t sa = loop.inner_stride(0), sb = loop.inner_stride(1);
        const OpKind kind = desc_.kind;
        for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
          compare_loop(kind, a + off[0], sa, b + off[1], sb, py + o, len);
        });
        return;
      }
      case Family::kWhere: {
        const bool* c = in[0]->data<bool>();
        const float* a = in[1]->data<float>();
        const float* b = in[2]->data<float>();
        float* py = y.data<float>();
        const int64_t sc = loop.inner_stride(0), sa = loop.inner_stride(1),
                      sb = loop.inner_stride(2);
        for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
          where_loop(c + off[0], sc, a + off[1], sa, b + off[2], sb, py + o, len);
        });
        return;
      }
    }
  }

 private:
  template <typename T>
  void run_int(const BroadcastLoop& loop, const std::vector<const Tensor*>& in, Tensor& y) const {
    const OpKind kind = desc_.kind;
    switch (desc_.family) {
      case Family::kArith: {
        const T* a = in[0]->data<T>();
        const T* b = in[1]->data<T>();
        T* py = y.data<T>();
        const int64_t sa = loop.inner_stride(0), sb = loop.inner_stride(1);
        std::atomic<bool> by_zero{false};
        for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
          int_arith_loop(kind, a + off[0], sa, b + off[1], sb, py + o, len, &by_zero);
        });
        if (by_zero.load()) fail(ErrorKind::kRuntime, who_, ": integer division by zero");
        return;
      }
      case Family::kCompare: {
        const T* a = in[0]->data<T>();
        const T* b = in[1]->data<T>();
        bool* py = y.data<bool>();
        const int64_t sa = loop.inner_stride(0), sb = loop.inner_stride(1);
        for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
          int_compare_loop(kind, a + off[0], sa, b + off[1], sb, py + o, len);
        });
        return;
      }
      case Family::kWhere: {
        const bool* c = in[0]->data<bool>();
        const T* a = in[1]->data<T>();
        const T* b = in[2]->data<T>();
        T* py = y.data<T>();
        const int64_t sc = loop.inner_stride(0), sa = loop.inner_stride(1),
                      sb = loop.inner_stride(2);
        for_each_run(loop, 1, [&](const int64_t* off, int64_t o, int64_t len) {
          int_where_loop(c + off[0], sc, a + off[1], sa, b + off[2], sb, py + o, len);
        });
        return;
      }
    }
  }

  OpDesc desc_;
  std::string who_;
  Layout layout_;
  DType type_;
  std::optional<UnaryKind> pow_unary_;
};

std::unique_ptr<Kernel> broadcast_create(const NodeInfo& info) {
  return std::make_unique<BroadcastKernel>(info);
}

}  // namespace

void append_binary_kernels(FactoryTable& t) {
  const KernelFactory arith{"cpu.binary", broadcast_accepts, broadcast_output_layout,
                            broadcast_create, broadcast_in_place};
  const KernelFactory compare{"cpu.compare", broadcast_accepts, broadcast_output_layout,
                              broadcast_create, broadcast_in_place};
  const KernelFactory where{"cpu.where", broadcast_accepts, broadcast_output_layout,
                            broadcast_create, broadcast_in_place};
  for (const auto& [op, d] : ops()) {
    t.emplace_back(op, d.family == Family::kArith     ? arith
                       : d.family == Family::kCompare ? compare
                                                      : where);
  }
}

}  // namespace nnfuse::cpu
