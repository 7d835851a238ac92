#include "ops/conv.h"

#include <algorithm>

#include "ir/builder.h"
#include "ir/saturate.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

Attrs conv_attrs(const ConvAttrs& conv, const Activation& act) {
  Attrs a;
  conv.write(a);
  act.write(a);
  return a;
}

// The convolution part's output: X (input `x_at`) by the weight (input `w_at`) under the node's
// own Conv attributes.
std::string conv_shape(const Node& n, size_t x_at, size_t w_at, Shape* out) {
  return conv_output(input_shape(n, x_at), input_shape(n, w_at), ConvAttrs::of(n), out);
}

std::string infer_fused_conv(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = like_input(n, 0).dtype;
  return conv_shape(n, fused_conv::kX, fused_conv::kW, &out[0].shape);
}

std::string infer_scaled_conv(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = like_input(n, 0).dtype;
  return conv_shape(n, scaled_conv::kX, scaled_conv::kW, &out[0].shape);
}

std::string infer_conv_split(const Node& n, std::vector<OutputType>& out) {
  const Dims split = n.attr_ints("split", {});
  out.assign(n.num_outputs(), {});
  if (split.size() != n.num_outputs()) return "split has another number of parts than outputs";
  Shape whole;
  if (std::string why = conv_shape(n, 0, 1, &whole); !why.empty()) return why;
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = {like_input(n, 0).dtype, whole};
    if (whole.has_rank) out[k].shape.dims[1] = Dim{split[k], ""};
  }
  return "";
}

std::string infer_conv_pool(const Node& n, std::vector<OutputType>& out) {
  out.assign(1, {});
  out[0].dtype = like_input(n, 0).dtype;
  Shape conv;
  if (std::string why = conv_shape(n, 0, 1, &conv); !why.empty()) return why;
  return pool_output(conv, pool_of(n), &out[0].shape);
}

// The FLOPs of a convolution writing `conv_out` elements with weight `w` (as a Conv).
int64_t conv_work(const Node& n, const Dims& w, int64_t conv_out) {
  const int64_t w_numel = checked_numel(w);
  // A weight with a zero dim holds no products, and dividing by that dim is undefined.
  if (w_numel <= 0 || w[0] <= 0 || w[1] <= 0) return 0;
  // Each output element of a (grouped) conv sums C/groups * kernel products; ConvTranspose's
  // weight is [C, M/groups, k...].
  int64_t per = w_numel / w[0];
  if (n.is(Op::kConvTranspose))
    per = sat_mul(w_numel / w[1], std::max<int64_t>(1, n.attr_int("group", 1)));
  return sat_mul(sat_mul(2, conv_out), per);
}

int64_t fused_conv_flops(const Node& n) {
  int64_t total = conv_flops(n, fused_conv::kW);
  if (total < 0 || !fused_conv::has_skip_conv(n)) return total;
  // The skip convolution writes the same output: C2/groups * kernel products per element.
  const auto w2 = known_dims(n.input(fused_conv::kSkipW));
  const auto y = known_dims(n.output(0));
  if (!w2 || w2->size() < 3 || (*w2)[0] <= 0 || !y) return -1;
  return sat_add(total, sat_mul(sat_mul(2, checked_numel(*y)), checked_numel(*w2) / (*w2)[0]));
}

int64_t scaled_conv_flops(const Node& n) { return conv_flops(n, scaled_conv::kW); }

int64_t conv_split_flops(const Node& n) {
  // The product writes every output's channels.
  int64_t out = 0;
  for (const Value* o : n.outputs()) {
    const auto y = known_dims(o);
    if (!y) return -1;
    out = sat_add(out, checked_numel(*y));
  }
  const auto w = known_dims(n.input(1));
  const auto x = known_dims(n.input(0));
  if (!w || !x || w->size() < 3) return -1;
  return conv_work(n, *w, out);
}

// The pool's input (the convolution's output) is not a value of the graph: unknown.
int64_t conv_pool_flops(const Node&) { return -1; }

// Input list for FusedConv's builder: trailing absent inputs are dropped by the rewriter.
std::vector<Value*> fused_conv_inputs(const FusedConv& c) {
  if (!c.skip) return {c.x, c.w, c.b, c.sum};
  return {c.x, c.w, c.b, nullptr, c.skip->x, c.skip->w, c.skip->b};
}

}  // namespace

int64_t conv_flops(const Node& n, size_t w_at) {
  const auto y = known_dims(n.output(0));
  const auto w = known_dims(n.input(w_at));
  const auto x = known_dims(n.input(0));
  if (!y || !w || !x || w->size() < 3) return -1;
  return conv_work(n, *w, checked_numel(*y));
}

FusedConv FusedConv::of(const Node& n) {
  FusedConv c;
  c.x = optional_input(&n, fused_conv::kX);
  c.w = optional_input(&n, fused_conv::kW);
  c.b = optional_input(&n, fused_conv::kB);
  c.conv = ConvAttrs::of(n);
  if (n.is(Op::kConv)) return c;
  c.act = read_activation(n);
  if (fused_conv::has_skip_conv(n)) {
    c.skip =
        Skip{optional_input(&n, fused_conv::kSkipX), optional_input(&n, fused_conv::kSkipW),
             optional_input(&n, fused_conv::kSkipB), ConvAttrs::of(n, fused_conv::kSkipPrefix)};
  } else {
    c.sum = optional_input(&n, fused_conv::kSum);
  }
  return c;
}

NodeSpec FusedConv::spec() const {
  NodeSpec s{Op::kFusedConv, fused_conv_inputs(*this), conv_attrs(conv, act)};
  if (skip) skip->conv.write(s.attrs, fused_conv::kSkipPrefix);
  return s;
}

NodeSpec ScaledConv::spec() const {
  return {Op::kScaledConv, {x, scale, w, b, sum}, conv_attrs(conv, act)};
}

NodeSpec FusedConvSplit::spec() const {
  NodeSpec s{Op::kFusedConvSplit, {x, w, b}, conv_attrs(conv, act)};
  s.attrs["split"] = attr_ints(split);
  return s;
}

NodeSpec FusedConvPool::spec() const {
  NodeSpec s = conv.spec();
  s.op = Op::kFusedConvPool;
  pool.write(s.attrs, fused_conv_pool::kPoolPrefix);
  return s;
}

void append_conv_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  const std::vector<AttrSpec> conv = {{"auto_pad", K::kString, "NOTSET"},
                                      {"dilations", K::kInts, "1 per spatial dim"},
                                      {"group", K::kInt, "1"},
                                      {"kernel_shape", K::kInts, "the weight's"},
                                      {"pads", K::kInts, "0"},
                                      {"strides", K::kInts, "1 per spatial dim"},
                                      {"activation", K::kString, ""},
                                      {"activation_alpha", K::kFloat, "the activation's"},
                                      {"activation_beta", K::kFloat, "the activation's"}};
  // Conv's own attributes and the epilogue's, then the op's.
  auto with = [&](const std::vector<AttrSpec>& more) {
    std::vector<AttrSpec> r = conv;
    r.insert(r.end(), more.begin(), more.end());
    return r;
  };
  t.push_back(
      {.op = Op::kFusedConv,
       .summary = "act(Conv(X, W, B) [+ Sum]), or act(Conv(X, W, B) + Conv(X2, W2, B2)) "
                  "with a skip convolution (attributes skip_*)",
       .inputs =
           {{"X"}, {"W"}, {"B", true}, {"Sum", true}, {"X2", true}, {"W2", true}, {"B2", true}},
       .outputs = {{"Y"}},
       .attrs = with({{"skip_auto_pad", K::kString},
                      {"skip_dilations", K::kInts},
                      {"skip_group", K::kInt},
                      {"skip_kernel_shape", K::kInts},
                      {"skip_pads", K::kInts},
                      {"skip_strides", K::kInts}}),
       .traits = {.op_class = OpClass::kOutEltwiseFusable,
                  .compute = true,
                  .flops = fused_conv_flops},
       .infer = infer_fused_conv,
       .ort = {.kind = OrtForm::Kind::kLowering,
               .summary = "FusedConv (the activation after it where ORT's kernel lacks "
                          "it; the residual as Z, a skip convolution as a Conv before it)"}});
  t.push_back(
      {.op = Op::kScaledConv,
       .summary = "act(Conv(X * S, W, B) [+ Sum]), S one value per channel [N or 1, C, 1, 1]",
       .inputs = {{"X"}, {"S"}, {"W"}, {"B", true}, {"Sum", true}},
       .outputs = {{"Y"}},
       .attrs = conv,
       .traits = {.op_class = OpClass::kOutEltwiseFusable,
                  .compute = true,
                  .flops = scaled_conv_flops},
       .infer = infer_scaled_conv,
       .ort = {.kind = OrtForm::Kind::kLowering, .summary = "Mul, FusedConv"}});
  t.push_back({.op = Op::kFusedConvSplit,
               .summary = "Split(act(Conv(X, W, B)), axis 1, split): convolutions of one X side "
                          "by side",
               .inputs = {{"X"}, {"W"}, {"B", true}},
               .outputs = {{"Y", false, true}},
               .attrs = with({{"split", K::kInts}}),
               .traits = {.op_class = OpClass::kOpaque, .compute = true, .flops = conv_split_flops},
               .infer = infer_conv_split,
               .ort = {.kind = OrtForm::Kind::kLowering, .summary = "FusedConv, Split (axis 1)"}});
  t.push_back({.op = Op::kFusedConvPool,
               .summary = "MaxPool(FusedConv(X, W, B, Sum)), the pool's attributes prefixed pool_",
               .inputs = {{"X"}, {"W"}, {"B", true}, {"Sum", true}},
               .outputs = {{"Y"}},
               .attrs = with({{"pool_auto_pad", K::kString},
                              {"pool_ceil_mode", K::kInt},
                              {"pool_count_include_pad", K::kInt},
                              {"pool_storage_order", K::kInt},
                              {"pool_dilations", K::kInts},
                              {"pool_kernel_shape", K::kInts},
                              {"pool_pads", K::kInts},
                              {"pool_strides", K::kInts}}),
               .traits = {.op_class = OpClass::kOutEltwiseFusable,
                          .compute = true,
                          .flops = conv_pool_flops},
               .infer = infer_conv_pool,
               .ort = {.kind = OrtForm::Kind::kLowering, .summary = "FusedConv, MaxPool"}});
}

}  // namespace nnfuse::ops
