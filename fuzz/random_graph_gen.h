// The random-graph generator's state and building steps (random_graph.h): the float patterns
// here, the quantized ones in random_graph_quant.cc. Private to the generator.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/error.h"
#include "random_graph.h"
#include "shape/shape_inference.h"

namespace nnfuse::fuzz::detail {

// Thrown when shape inference leaves an output without a static shape.
struct Rejected {};

const std::vector<int64_t> kDims = {1, 2, 3, 4, 5, 7, 8, 16};

class Gen {
 public:
  Gen(const Chooser& choose, const RandomGraphOptions& opts) : choose_(choose), opts_(opts) {
    g_ = std::make_unique<Graph>();
    g_->opsets[""] = 17;
  }

  std::unique_ptr<Graph> build() {
    const int rank = 2 + static_cast<int>(pick(3));
    Dims d;
    for (int i = 0; i < rank; ++i) d.push_back(kDims[pick(kDims.size())]);
    if (rank == 4) d[1] = std::vector<int64_t>{1, 3, 4, 8}[pick(4)];
    Value* x = input(d);
    if (pick(4) == 0) input(pick(2) ? d : Dims{d.back()});
    const int steps = 1 + static_cast<int>(pick(static_cast<uint32_t>(opts_.max_steps)));
    for (int s = 0; s < steps; ++s) step(operand());
    Value* last = pool_.back();
    if (last == x) last = unary("Relu", x);
    g_->add_output(last);
    if (pool_.size() > 2 && pick(3) == 0) {
      Value* extra = pool_[pick(static_cast<uint32_t>(pool_.size() - 1))];
      if (!extra->is_graph_input() && !extra->is_graph_output()) g_->add_output(extra);
    }
    return std::move(g_);
  }

 private:
  struct ConvGeometry {
    int64_t out, k, stride, pad, group;
  };

  uint32_t pick(size_t n) { return n <= 1 ? 0 : choose_(static_cast<uint32_t>(n)); }
  bool coin() { return pick(2) == 1; }

  static Dims dims(const Value* v) { return v->shape().static_dims(); }
  static int64_t rank(const Value* v) { return static_cast<int64_t>(dims(v).size()); }

  Value* operand() {
    if (!opts_.any_order || pick(3) != 0) return pool_.back();
    return pool_[pick(pool_.size())];
  }

  Value* input(const Dims& d) {
    Value* v =
        g_->add_value("in" + std::to_string(g_->inputs().size()), DType::kFloat32, Shape::of(d));
    g_->add_input(v);
    pool_.push_back(v);
    return v;
  }

  // Constants come from a seed drawn once, so a large weight costs one choice.
  Value* weight(const Dims& d, float scale = 1.0f) {
    Tensor t(DType::kFloat32, d);
    uint32_t s = choose_(0xffffffu) * 2654435761u + 1;
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      s = s * 1664525u + 1013904223u;
      p[i] = scale * (static_cast<float>(s >> 8) / 8388608.0f - 1.0f);
    }
    return constant(std::move(t));
  }
  Value* scalar(float f) { return constant(Tensor::scalar<float>(f)); }
  Value* ints(const std::vector<int64_t>& v) {
    return constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  }
  Value* constant(Tensor t) {
    Value* v = g_->add_value(g_->unique_value_name("c"));
    v->set_constant(std::move(t));
    return v;
  }

  Value* node(const std::string& op, std::vector<Value*> ins,
              std::map<std::string, Attribute> attrs = {}, size_t outputs = 1) {
    std::vector<Value*> outs = make(op, std::move(ins), std::move(attrs), outputs);
    for (Value* o : outs) {
      if (o->dtype() != DType::kFloat32) throw Rejected{};
    }
    for (Value* o : outs) pool_.push_back(o);
    return outs[0];
  }

  // A node whose outputs may be of any type (a quantized tensor, an int32 sum, a scale); they
  // do not join the pool of values later steps take.
  std::vector<Value*> make(const std::string& op, std::vector<Value*> ins,
                           std::map<std::string, Attribute> attrs = {}, size_t outputs = 1) {
    std::vector<Value*> outs;
    for (size_t i = 0; i < outputs; ++i) {
      outs.push_back(g_->add_value(g_->unique_value_name(op + "_out")));
    }
    Node* n = g_->add_node(op, op + std::to_string(count_++), std::move(ins), outs);
    for (auto& [k, a] : attrs) n->set_attr(k, a);
    shape::infer_node(*g_, n);
    for (Value* o : outs) {
      if (!o->shape().fully_known()) throw Rejected{};
      int64_t numel = 1;
      for (int64_t e : dims(o)) {
        if (e <= 0) throw Rejected{};  // an empty output: the op does not apply to this shape
        numel *= e;
      }
      if (numel > (1 << 16)) throw Rejected{};
    }
    return outs;
  }
  Value* unary(const std::string& op, Value* x) { return node(op, {x}); }

  // A value of x's dims that every evaluation order computes exactly (x or a graph input with
  // its dims), else nullptr. Only such values feed a discontinuous op (Floor, the condition
  // x > 0): one rounding step upstream of it becomes a jump of 1, or of the whole value, after
  // it (floor(0.99999994) against floor(1) from a saturated Softmax), which no tolerance
  // separates from a wrong kernel.
  Value* exact_like(Value* x) {
    if (x->is_graph_input()) return x;
    for (Value* v : g_->inputs()) {
      if (dims(v) == dims(x)) return v;
    }
    return nullptr;
  }

  // A value `x` can be combined with elementwise: itself, a same-shaped or broadcastable one
  // from the pool, or a constant of a broadcastable shape.
  Value* partner(Value* x) {
    const Dims d = dims(x);
    std::vector<Value*> same;
    for (Value* v : pool_) {
      if (v != x && dims(v) == d) same.push_back(v);
    }
    switch (pick(4)) {
      case 0:
        if (!same.empty()) return same[pick(same.size())];
        return x;
      case 1:
        return weight({d.back()});
      case 2: {
        Dims b = d;
        for (auto& e : b) {
          if (coin()) e = 1;
        }
        return weight(b);
      }
      default:
        return scalar(kScalars[pick(kScalars.size())]);
    }
  }

  // x op p; a divisor is |p| + 1, so no quotient grows past its dividend. Values stay of order
  // one: a division by a weight near 0 made scores of 1e10, whose Softmax picks its maximum by
  // rounding alone, so fused and unfused differed by whole rows with no kernel wrong.
  Value* binary(const std::string& op, Value* x, Value* p) {
    if (op == "Div") p = node("Add", {unary("Abs", p), scalar(1.0f)});
    return node(op, {x, p});
  }

  // Bounded away from 0 too: a reciprocal of at most 2.
  Value* positive(Value* x) { return node("Add", {unary("Abs", x), scalar(0.5f)}); }

  Value* activation(Value* x) {
    switch (pick(8)) {
      case 0:
        return unary("Relu", x);
      case 1:
        return node("Clip", {x, scalar(0.0f), scalar(6.0f)});
      case 2:
        return node("Mul", {x, unary("Sigmoid", x)});
      case 3:
        return gelu_erf(x);
      case 4:
        return gelu_tanh(x);
      case 5:
        return node("LeakyRelu", {x}, {{"alpha", attr_float(0.1f)}});
      case 6:
        return unary("HardSwish", x);
      default:
        return unary("Tanh", x);
    }
  }

  Value* gelu_erf(Value* x) {
    Value* e = unary("Erf", coin() ? node("Div", {x, scalar(1.4142135f)})
                                   : node("Mul", {x, scalar(0.70710678f)}));
    Value* one = node("Add", {e, scalar(1.0f)});
    return coin() ? node("Mul", {node("Mul", {x, scalar(0.5f)}), one})
                  : node("Mul", {node("Mul", {x, one}), scalar(0.5f)});
  }

  Value* gelu_tanh(Value* x) {
    Value* cube = coin() ? node("Pow", {x, scalar(3.0f)}) : node("Mul", {node("Mul", {x, x}), x});
    Value* inner = node("Add", {x, node("Mul", {cube, scalar(0.044715f)})});
    Value* t = unary("Tanh", node("Mul", {inner, scalar(0.7978845608f)}));
    return node("Mul", {node("Mul", {x, scalar(0.5f)}), node("Add", {t, scalar(1.0f)})});
  }

  // x plus a row running from -1 to 1, so what a normalization divides by is of order one. A
  // row of nearly equal values (sums of Softplus(Softmax)) has a variance below the epsilon,
  // where normalizing multiplies the rounding of its input by up to 1/sqrt(epsilon) = 316.
  Value* spread(Value* x) {
    const int64_t c = dims(x).back();
    if (c < 2) return x;
    Tensor t(DType::kFloat32, {c});
    for (int64_t i = 0; i < c; ++i) t.data<float>()[i] = -1.0f + 2.0f * i / (c - 1);
    return node("Add", {x, constant(std::move(t))});
  }

  Value* layer_norm(Value* x) {
    x = spread(x);
    const int64_t c = dims(x).back();
    if (coin()) {
      return node("LayerNormalization", {x, weight({c}), weight({c})},
                  {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-5f)}});
    }
    std::map<std::string, Attribute> last = {{"axes", attr_ints({-1})}};
    Value* mean = node("ReduceMean", {x}, last);
    Value* d = node("Sub", {x, mean});
    Value* sq = coin() ? node("Pow", {d, scalar(2.0f)}) : node("Mul", {d, d});
    Value* var = node("ReduceMean", {sq}, last);
    Value* den = unary("Sqrt", node("Add", {var, scalar(1e-5f)}));
    Value* y = node("Div", {d, den});
    return node("Add", {node("Mul", {y, weight({c})}), weight({c})});
  }

  Value* rms_norm(Value* x) {
    x = spread(x);
    const int64_t c = dims(x).back();
    Value* sq = coin() ? node("Pow", {x, scalar(2.0f)}) : node("Mul", {x, x});
    Value* ms = node("ReduceMean", {sq}, {{"axes", attr_ints({-1})}});
    Value* r = unary("Sqrt", node("Add", {ms, scalar(1e-6f)}));
    Value* y = coin() ? node("Div", {x, r}) : node("Mul", {x, unary("Reciprocal", r)});
    return node("Mul", {y, weight({c})});
  }

  Value* matmul(Value* x) {
    const int64_t k = dims(x).back();
    const int64_t n = std::vector<int64_t>{1, 3, 8, 16, 17}[pick(5)];
    Value* y = node("MatMul", {x, weight({k, n}, 0.5f)});
    if (coin()) y = node("Add", {y, weight({n})});
    if (coin()) y = activation(y);
    return y;
  }

  // A conv's geometry for input dims d: depthwise a third of the time.
  ConvGeometry conv_geometry(const Dims& d) {
    const int64_t c = d[1];
    const bool depthwise = c > 1 && pick(3) == 0;
    ConvGeometry g;
    g.out = depthwise ? c : std::vector<int64_t>{1, 2, 4, 8, 16}[pick(5)];
    g.k = coin() ? 3 : 1;
    g.stride = pick(3) == 0 ? 2 : 1;
    g.pad = g.k == 3 && coin() ? 1 : 0;
    g.group = depthwise ? c : 1;
    if (d[2] + 2 * g.pad < g.k || d[3] + 2 * g.pad < g.k) throw Rejected{};
    return g;
  }
  static std::map<std::string, Attribute> conv_attrs(const ConvGeometry& g) {
    return {{"kernel_shape", attr_ints({g.k, g.k})},
            {"strides", attr_ints({g.stride, g.stride})},
            {"pads", attr_ints({g.pad, g.pad, g.pad, g.pad})},
            {"group", attr_int(g.group)}};
  }

  Value* conv(Value* x) {
    const Dims d = dims(x);
    const ConvGeometry cg = conv_geometry(d);
    std::vector<Value*> ins = {x, weight({cg.out, d[1] / cg.group, cg.k, cg.k}, 0.5f)};
    if (coin()) ins.push_back(weight({cg.out}));
    Value* y = node("Conv", ins, conv_attrs(cg));
    if (coin()) y = batch_norm(y);
    if (coin()) y = activation(y);
    if (coin() && dims(y) == d) y = node("Add", {y, x});
    return y;
  }

  Value* batch_norm(Value* x) {
    const int64_t c = dims(x)[1];
    Tensor var(DType::kFloat32, {c});
    for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = 0.5f + 0.25f * static_cast<float>(i % 4);
    return node("BatchNormalization",
                {x, weight({c}), weight({c}), weight({c}, 0.2f), constant(std::move(var))},
                {{"epsilon", attr_float(1e-5f)}});
  }

  // Multi-head attention over x [B, S, D]: projections, heads split by Reshape and Transpose,
  // scaled scores, an optional mask, softmax, and the heads merged again.
  Value* attention(Value* x) {
    const Dims d = dims(x);
    const int64_t b = d[0], s = d[1], dm = d[2];
    std::vector<int64_t> heads;
    for (int64_t h = 1; h <= dm; ++h) {
      if (dm % h == 0) heads.push_back(h);
    }
    const int64_t h = heads[pick(heads.size())], dh = dm / h;
    auto split = [&](Value* v) {
      Value* r = node("Reshape", {v, ints({b, s, h, dh})});
      return node("Transpose", {r}, {{"perm", attr_ints({0, 2, 1, 3})}});
    };
    Value* q = split(node("MatMul", {x, weight({dm, dm}, 0.5f)}));
    Value* kt =
        node("Transpose",
             {node("Reshape", {node("MatMul", {x, weight({dm, dm}, 0.5f)}), ints({b, s, h, dh})})},
             {{"perm", attr_ints({0, 2, 3, 1})}});
    Value* v = split(node("MatMul", {x, weight({dm, dm}, 0.5f)}));
    Value* scores = node("MatMul", {q, kt});
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    switch (pick(3)) {
      case 0:
        scores = node("Mul", {scores, scalar(scale)});
        break;
      case 1:
        scores = node("Div", {scores, scalar(std::sqrt(static_cast<float>(dh)))});
        break;
      default:
        break;
    }
    switch (pick(4)) {
      case 0: {  // additive causal mask
        Tensor m(DType::kFloat32, {s, s});
        for (int64_t i = 0; i < s; ++i) {
          for (int64_t j = 0; j < s; ++j) m.data<float>()[i * s + j] = j > i ? -1e9f : 0.0f;
        }
        scores = node("Add", {scores, constant(std::move(m))});
        break;
      }
      case 1: {  // boolean causal mask through Where
        Tensor m(DType::kBool, {s, s});
        for (int64_t i = 0; i < s; ++i) {
          for (int64_t j = 0; j < s; ++j) m.data<bool>()[i * s + j] = j <= i;
        }
        scores = node("Where", {constant(std::move(m)), scores, scalar(-1e9f)});
        break;
      }
      case 2:  // key padding mask, additive, one row per batch
        scores = node("Add", {scores, weight({b, 1, 1, s}, 2.0f)});
        break;
      default:
        break;
    }
    Value* p = node("Softmax", {scores}, {{"axis", attr_int(-1)}});
    Value* o = node("Transpose", {node("MatMul", {p, v})}, {{"perm", attr_ints({0, 2, 1, 3})}});
    o = node("Reshape", {o, ints({b, s, dm})});
    if (coin()) o = node("Add", {node("MatMul", {o, weight({dm, dm}, 0.5f)}), x});
    return o;
  }

  void step(Value* x) {
    const Dims d = dims(x);
    const int64_t r = static_cast<int64_t>(d.size());
    if (r == 0) {  // a scalar (a reduction without keepdims): elementwise only
      node(kBinary[pick(kBinary.size())], {x, coin() ? x : scalar(2.0f)});
      return;
    }
    if (opts_.quantized && coin()) {
      quantized_step(x);
      return;
    }
    switch (pick(16)) {
      case 0: {
        const std::string op = kUnary[pick(kUnary.size())];
        Value* exact = op == "Floor" ? exact_like(x) : x;
        unary(exact ? op : "Abs", exact ? exact : x);
        break;
      }
      case 1:
        binary(kBinary[pick(kBinary.size())], x, partner(x));
        break;
      case 2:
        node(coin() ? "Sqrt" : (coin() ? "Log" : "Reciprocal"), {positive(x)});
        break;
      case 3: {
        const int64_t axis = coin() ? -1 : static_cast<int64_t>(pick(d.size()));
        const std::string op = kReduce[pick(kReduce.size())];
        const int64_t keep = coin() ? 1 : 0;
        if (op == "ReduceSum") {
          node(op, {x, ints({axis})}, {{"keepdims", attr_int(keep)}});
        } else {
          node(op, {x}, {{"axes", attr_ints({axis})}, {"keepdims", attr_int(keep)}});
        }
        break;
      }
      case 4:
        node("Softmax", {x},
             {{"axis", attr_int(coin() ? -1 : static_cast<int64_t>(pick(d.size())))}});
        break;
      case 5:
        matmul(x);
        break;
      case 6: {
        std::vector<int64_t> perm(d.size());
        std::iota(perm.begin(), perm.end(), 0);
        for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[pick(i)]);
        node("Transpose", {x}, {{"perm", attr_ints(perm)}});
        break;
      }
      case 7: {
        std::vector<int64_t> to;
        if (r >= 3 && coin()) {
          to.assign(d.begin(), d.end() - 2);
          to.push_back(d[r - 2] * d[r - 1]);
        } else {
          to = {-1, d.back()};
        }
        node("Reshape", {x, ints(to)});
        break;
      }
      case 8:
        if (r == 4) {
          conv(x);
        } else {
          activation(x);
        }
        break;
      case 9:
        if (r >= 2) {
          batch_norm(x);
        } else {
          layer_norm(x);
        }
        break;
      case 10:
        if (coin()) {
          layer_norm(x);
        } else {
          rms_norm(x);
        }
        break;
      case 11:
        activation(x);
        break;
      case 12:
        if (r == 3) {
          attention(x);
        } else {
          matmul(x);
        }
        break;
      case 13: {
        const int64_t axis = static_cast<int64_t>(pick(d.size()));
        if (coin() && d[axis] % 2 == 0) {
          node("Split", {x, ints({d[axis] / 2, d[axis] / 2})}, {{"axis", attr_int(axis)}}, 2);
        } else {
          node("Concat", {x, partner_same(x)}, {{"axis", attr_int(axis)}});
        }
        break;
      }
      case 14:
        if (r == 4) {
          const std::string op =
              std::vector<std::string>{"MaxPool", "AveragePool", "GlobalAveragePool"}[pick(3)];
          if (op == "GlobalAveragePool") {
            unary(op, x);
          } else {
            const int64_t k = coin() ? 2 : 3, s = coin() ? 1 : 2;
            if (d[2] < k || d[3] < k) throw Rejected{};
            node(op, {x}, {{"kernel_shape", attr_ints({k, k})}, {"strides", attr_ints({s, s})}});
          }
        } else {
          if (Value* exact = exact_like(x)) {
            node("Where", {node("Greater", {exact, scalar(0.0f)}), x, partner(x)});
          } else {
            node("Max", {x, partner(x)});
          }
        }
        break;
      default:
        if (r == 2) {
          node("Gemm", {x, weight({d[1], 8}, 0.5f), weight({8})}, {{"alpha", attr_float(1.0f)}});
        } else {
          binary(kBinary[pick(kBinary.size())], x, partner(x));
        }
        break;
    }
  }

  Value* partner_same(Value* x) {
    for (Value* v : pool_) {
      if (v != x && dims(v) == dims(x) && coin()) return v;
    }
    return x;
  }

  // Quantized patterns (random_graph_quant.cc): values rounded to 8-bit grids around convs,
  // dense layers, residual sums, concats and pass-through ops, in the QDQ, QOperator and
  // dynamic forms ONNX tools write.
  struct Grid {  // a per-tensor quantization: y = saturate(round(x / scale) + zero)
    Value* scale;
    Value* zero;
    float s;
  };
  void quantized_step(Value* x);
  Grid grid(bool u8);
  Value* quantize(Value* x, const Grid& g);
  Value* dequantize(Value* q, const Grid& g);
  Value* fake_quant(Value* x);
  Value* int8_weights(const Dims& d, int axis, bool per_axis, std::vector<float>* scales,
                      Value** scale, Value** zero);
  Value* qdq_conv(Value* x);
  Value* qdq_dense(Value* x);
  Value* qdq_binary(Value* x);
  Value* qdq_concat(Value* x);
  Value* qdq_pass_through(Value* x);
  Value* dequantize_sum(Value* sum, Value* a_scale, Value* w_scale);
  Value* dynamic_dense(Value* x);
  Value* dynamic_conv(Value* x);
  Value* qlinear_conv(Value* x);
  Value* qlinear_matmul(Value* x);

  static inline const std::vector<std::string> kUnary = {
      "Relu",        "Sigmoid",  "Tanh",  "Erf", "Neg", "Abs", "Exp",  "Softplus",
      "HardSigmoid", "Identity", "Floor", "Sin", "Cos", "Elu", "Selu", "Softsign"};
  static inline const std::vector<std::string> kBinary = {"Add", "Mul", "Sub", "Div", "Max", "Min"};
  static inline const std::vector<std::string> kReduce = {"ReduceMean", "ReduceSum", "ReduceMax",
                                                          "ReduceL2"};
  static inline const std::vector<float> kScalars = {
      0.5f, 1.0f, 2.0f, 3.0f, -1.0f, 1.4142135f, 0.70710678f, 1e-5f, 0.044715f};

  const Chooser& choose_;
  RandomGraphOptions opts_;
  std::unique_ptr<Graph> g_;
  std::vector<Value*> pool_;
  int count_ = 0;
};

}  // namespace nnfuse::fuzz::detail
