#include "cost/cost.h"

#include <algorithm>
#include <set>

#include "kernels/ref/conv_skip.h"
#include "kernels/ref/expand_depthwise.h"
#include "kernels/ref/squeeze_excite.h"

namespace nnfuse::cost {

int64_t value_bytes(const Value& v) {
  const size_t elem = dtype_size(v.dtype());
  if (elem == 0 || !v.shape().fully_known()) return -1;
  return checked_numel(v.shape().static_dims(), elem) * static_cast<int64_t>(elem);
}

int64_t intermediate_bytes(const std::vector<const Value*>& values) {
  std::set<const Value*> seen;
  int64_t total = 0;
  for (const Value* v : values) {
    if (!v || !seen.insert(v).second) continue;
    total = sat_add(total, std::max<int64_t>(0, value_bytes(*v)));
  }
  return sat_mul(2, total);
}

std::vector<const Value*> intermediates(const std::vector<Node*>& nodes,
                                        const std::vector<Value*>& outputs) {
  std::vector<const Value*> r;
  for (const Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (o && std::find(outputs.begin(), outputs.end(), o) == outputs.end()) r.push_back(o);
    }
  }
  return r;
}

namespace {

std::optional<Dims> dims_of(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

}  // namespace

int64_t flops(const Node& n) {
  const std::string& op = n.op_type();
  const auto y = dims_of(n.output(0));
  if (!y) return -1;
  const int64_t out = checked_numel(*y);
  if (op == "Conv" || op == "ConvTranspose" || op == "FusedConv" || op == "FusedConvPool" ||
      op == "ScaledConv" || op == "FusedConvSplit") {
    const size_t w_at = op == "ScaledConv" ? 2 : 1;
    const auto w = dims_of(n.input(w_at));
    const auto x = dims_of(n.input(0));
    if (!w || !x || w->size() < 3) return -1;
    // A weight with a zero dim holds no products, and dividing by that dim is undefined.
    const int64_t w_numel = checked_numel(*w);
    if (w_numel <= 0 || (*w)[0] <= 0 || (*w)[1] <= 0) return 0;
    // Each output element of a (grouped) conv sums C/groups * kernel products.
    int64_t per = w_numel / (*w)[0];
    if (op == "ConvTranspose") {
      per = sat_mul(w_numel / (*w)[1], std::max<int64_t>(1, n.attr_int("group", 1)));
    }
    int64_t conv_out = op == "FusedConvPool" ? -1 : out;
    if (op == "FusedConvSplit") {
      // The product writes every output's channels.
      for (size_t k = 1; k < n.num_outputs(); ++k) {
        const auto yk = dims_of(n.output(k));
        conv_out = yk ? sat_add(conv_out, checked_numel(*yk)) : -1;
        if (conv_out < 0) break;
      }
    }
    if (conv_out < 0) return -1;  // the pool's input size is not a value of the graph
    int64_t total = sat_mul(sat_mul(2, conv_out), per);
    if (op == "FusedConv" && ref::has_skip_conv(n)) {
      // The skip convolution writes the same output: C2/groups * kernel products per element.
      const auto w2 = dims_of(n.input(ref::kSkipInput + 1));
      if (!w2 || w2->size() < 3 || (*w2)[0] <= 0) return -1;
      total = sat_add(total, sat_mul(sat_mul(2, conv_out), checked_numel(*w2) / (*w2)[0]));
    }
    return total;
  }
  if (op == "ExpandDepthwise") {
    // The expansion sums C * kh * kw products per expanded element, the depthwise conv k * k
    // per output.
    const auto x = dims_of(n.input(0));
    const auto w1 = dims_of(n.input(ref::kExpandWeight));
    const auto w2 = dims_of(n.input(ref::kDepthwiseWeight));
    if (!x || !w1 || !w2 || x->size() != 4 || w1->size() != 4 || w2->size() != 4) return -1;
    const std::string prefix = ref::kExpandAttrPrefix;
    const std::vector<int64_t> pads = n.attr_ints(prefix + "pads", {0, 0, 0, 0});
    const std::vector<int64_t> strides = n.attr_ints(prefix + "strides", {1, 1});
    if (pads.size() != 4 || strides.size() != 2 || strides[0] < 1 || strides[1] < 1) return -1;
    auto extent = [](int64_t span, int64_t stride) { return span < 0 ? 0 : span / stride + 1; };
    const int64_t he = extent((*x)[2] + pads[0] + pads[2] - (*w1)[2], strides[0]);
    const int64_t we = extent((*x)[3] + pads[1] + pads[3] - (*w1)[3], strides[1]);
    const int64_t expanded = sat_mul(sat_mul((*x)[0], (*w1)[0]), sat_mul(he, we));
    return sat_add(sat_mul(sat_mul(2, expanded), sat_mul((*w1)[1], sat_mul((*w1)[2], (*w1)[3]))),
                   sat_mul(sat_mul(2, out), sat_mul((*w2)[2], (*w2)[3])));
  }
  if (op == "SqueezeExcite") {
    // The pool adds every X value; each part sums `in` products per output; applied, every X
    // value is multiplied once more.
    const auto x = dims_of(n.input(0));
    const auto w1 = dims_of(n.input(ref::kSqueezeWeight));
    const auto w2 = dims_of(n.input(ref::kExciteWeight));
    if (!x || !w1 || !w2 || x->empty()) return -1;
    const int64_t images = (*x)[0];
    return sat_add(sat_mul(checked_numel(*x), ref::squeeze_excite_applies(n) ? 2 : 1),
                   sat_mul(sat_mul(2, images), sat_add(checked_numel(*w1), checked_numel(*w2))));
  }
  if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm" || op == "FusedGemm" ||
      op == "FusedGatedMatMul" || op == "FusedMatMulResidual") {
    const auto a = dims_of(n.input(0));
    if (!a || a->empty()) return -1;
    const bool trans_a = n.attr_int("transA", 0) != 0;
    const int64_t k = a->size() == 1 ? (*a)[0] : trans_a ? (*a)[a->size() - 2] : a->back();
    // The gated product computes both halves (gate and up) of each output element.
    return sat_mul(sat_mul(op == "FusedGatedMatMul" ? 4 : 2, out), k);
  }
  return out;
}

int64_t bytes_moved(const Node& n) {
  std::vector<const Value*> seen;
  int64_t total = 0;
  auto add = [&](const Value* v) {
    if (!v || std::find(seen.begin(), seen.end(), v) != seen.end()) return;
    seen.push_back(v);
    total = sat_add(total, std::max<int64_t>(value_bytes(*v), 0));
  };
  for (const Value* v : n.inputs()) add(v);
  for (const Value* v : n.outputs()) add(v);
  return total;
}

int64_t domain_elements(const std::vector<Node*>& nodes) {
  int64_t domain = 0;
  for (const Node* n : nodes) {
    for (const Value* v : n->outputs()) {
      if (const auto d = dims_of(v)) domain = std::max(domain, checked_numel(*d));
    }
  }
  return domain;
}

Recompute recomputation(const std::vector<Node*>& nodes, int64_t per_row) {
  // Ops whose evaluation costs about as much as a dozen or more adds.
  static const std::set<std::string> expensive = {"Div",     "Erf",      "Exp",  "HardSwish",
                                                  "Log",     "Mean",     "Pow",  "Reciprocal",
                                                  "Sigmoid", "Softplus", "Sqrt", "Tanh"};
  const int64_t domain = domain_elements(nodes);
  Recompute r;
  for (const Node* n : nodes) {
    const auto d = n->num_outputs() == 1 ? dims_of(n->output(0)) : std::nullopt;
    if (!d) continue;
    const int64_t k = checked_numel(*d);
    if (k >= domain || k == per_row) continue;
    r.elements = sat_add(r.elements, domain - k);
    r.cost = sat_add(r.cost, sat_mul(domain - k, expensive.count(n->op_type()) ? 16 : 1));
  }
  return r;
}

double roofline_seconds(int64_t flops, int64_t bytes, const Machine& m) {
  const double compute = static_cast<double>(std::max<int64_t>(flops, 0)) / m.flops_per_s;
  const double memory = static_cast<double>(std::max<int64_t>(bytes, 0)) / m.bytes_per_s;
  return std::max(compute, memory) + m.launch_s;
}

Benefit fusion_benefit(const std::vector<Node*>& nodes, const std::vector<Value*>& outputs,
                       const Machine& m) {
  Benefit b{intermediate_bytes(intermediates(nodes, outputs)), kernels_saved(nodes.size())};
  for (const Node* n : nodes) {
    const int64_t f = std::max<int64_t>(flops(*n), 0), moved = bytes_moved(*n);
    b.flops = sat_add(b.flops, f);
    b.bytes_before = sat_add(b.bytes_before, moved);
    b.seconds_before += roofline_seconds(f, moved, m);
  }
  b.bytes_after = std::max<int64_t>(b.bytes_before - b.bytes_saved, 0);
  if (!nodes.empty()) b.seconds_after = roofline_seconds(b.flops, b.bytes_after, m);
  return b;
}

GraphCost graph_cost(const Graph& g, const Machine& m) {
  GraphCost c;
  for (const Node* n : g.nodes()) {
    if (n->op_type() == "Constant") continue;
    const int64_t f = std::max<int64_t>(flops(*n), 0), moved = bytes_moved(*n);
    ++c.kernels;
    c.flops = sat_add(c.flops, f);
    c.bytes_moved = sat_add(c.bytes_moved, moved);
    c.seconds += roofline_seconds(f, moved, m);
  }
  return c;
}

}  // namespace nnfuse::cost
