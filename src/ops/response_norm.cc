#include "ops/response_norm.h"

#include "ir/builder.h"
#include "ir/saturate.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

std::string infer_response_norm(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, like_input(n, response_norm::kX));
  const Shape& x = out[0].shape;
  if (x.has_rank && x.dims.size() < 3) return "X is not of rank 3 or more";
  return "";
}

// Per element: its square into the norm, then X * N * Gamma + Beta + X.
int64_t response_norm_flops(const Node& n) {
  const Value* y = n.output(0);
  if (!y || !y->shape().fully_known()) return -1;
  return sat_mul(5, checked_numel(y->shape().static_dims()));
}

// Standard ops computing the node (ONNX Runtime's form).
void decompose_response_norm(Graph& g, Node* n) {
  const int64_t opset = g.opset("");
  Value* x = n->input(response_norm::kX);
  Value* gamma = n->input(response_norm::kGamma);
  Value* beta = n->input(response_norm::kBeta);
  Value* y = n->output(0);
  const std::string stem = n->name();
  const int64_t rank = static_cast<int64_t>(x->shape().dims.size());
  const int64_t c_axis = response_norm_channel_axis(*n, rank);
  const float eps = n->attr_float("epsilon", 1e-6f);
  g.remove_node(n);
  auto value = [&](const std::string& s) {
    return g.add_value(g.unique_value_name(stem + s), x->dtype());
  };
  auto constant = [&](const std::string& s, Tensor t) {
    Value* v = g.add_value(g.unique_value_name(stem + s), t.dtype(), Shape::of(t.shape()));
    v->set_constant(std::move(t));
    return v;
  };
  auto node = [&](const char* op, std::vector<Value*> ins, Value* out, const std::string& s) {
    return g.add_node(op, g.unique_node_name(stem + s), ins, {out});
  };
  // A reduction over `axes` keeping them: the axes an attribute before opset 18, an input after.
  auto reduce = [&](const char* op, Value* in, const Dims& axes, const std::string& s) {
    Value* out = value(s);
    Node* r = opset >= 18 ? node(op, {in, constant(s + "_axes", shape_tensor(axes))}, out, s)
                          : node(op, {in}, out, s);
    if (opset < 18) r->set_attr("axes", attr_ints(axes));
    r->set_attr("keepdims", attr_int(1));
    return out;
  };
  Dims spatial;
  for (int64_t a = 1; a < rank; ++a) {
    if (a != c_axis) spatial.push_back(a);
  }
  Value* gx = reduce("ReduceL2", x, spatial, "_norm");
  Value* mean = reduce("ReduceMean", gx, {c_axis}, "_mean");
  Value* denom = value("_denom");
  node("Add", {mean, constant("_eps", Tensor::scalar(eps))}, denom, "_denom");
  Value* nx = value("_scale");
  node("Div", {gx, denom}, nx, "_scale");
  Value* xn = value("_scaled");
  node("Mul", {x, nx}, xn, "_scaled");
  // Gamma and Beta broadcast along the channel axis: as they are when it is the last, else as
  // [C, 1, ...] (a constant reshaped here, a value by a Reshape).
  auto per_channel = [&](Value* v, const std::string& s) {
    if (c_axis == rank - 1) return v;
    Dims shape(static_cast<size_t>(rank - c_axis), 1);
    if (v->is_constant()) {
      shape[0] = v->constant().numel();
      return constant(s, v->constant().reshaped(shape));
    }
    shape[0] = -1;
    Value* r = value(s);
    node("Reshape", {v, constant(s + "_shape", shape_tensor(shape))}, r, s);
    return r;
  };
  Value* affine = value("_affine");
  node("Mul", {xn, per_channel(gamma, "_gamma")}, affine, "_affine");
  Value* shifted = value("_shifted");
  node("Add", {affine, per_channel(beta, "_beta")}, shifted, "_shifted");
  node("Add", {shifted, x}, y, "_residual");
}

}  // namespace

int64_t response_norm_channel_axis(const Node& n, int64_t rank) {
  return n.attr_int("channels_last", 1) != 0 ? rank - 1 : 1;
}

NodeSpec GlobalResponseNorm::spec() const {
  return {Op::kGlobalResponseNorm,
          {x, gamma, beta},
          {{"epsilon", attr_float(epsilon)}, {"channels_last", attr_int(channels_last ? 1 : 0)}}};
}

void append_response_norm_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  t.push_back(
      {.op = Op::kGlobalResponseNorm,
       .summary = "ConvNeXt-V2's Global Response Normalization: Gamma * (X * N) + Beta + "
                  "X, N each map's L2 norm over the mean of them (+ epsilon)",
       .inputs = {{"X"}, {"Gamma"}, {"Beta"}},
       .outputs = {{"Y"}},
       .attrs = {{"epsilon", K::kFloat, "1e-6"}, {"channels_last", K::kInt, "1"}},
       .traits = {.op_class = OpClass::kOpaque, .compute = true, .flops = response_norm_flops},
       .infer = infer_response_norm,
       .ort = {.kind = OrtForm::Kind::kDecomposed,
               .summary = "ReduceL2, ReduceMean, Add, Div, Mul, Mul, Add, Add",
               .decompose = decompose_response_norm}});
}

}  // namespace nnfuse::ops
