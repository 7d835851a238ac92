#include "ops/norm.h"

#include "ir/builder.h"
#include "ir/error.h"
#include "ops/infer_util.h"

namespace nnfuse::ops {

namespace {

// Output 0 (and 1, the sum, when the op has it) like input `x`.
std::string infer_like(const Node& n, std::vector<OutputType>& out, size_t x) {
  out.assign(n.num_outputs(), like_input(n, x));
  return "";
}

std::string infer_like_x(const Node& n, std::vector<OutputType>& out) {
  return infer_like(n, out, 0);
}

// LayerNormalization's Mean and InvStdDev: X's shape with the normalized axes of extent 1.
std::string infer_layer_norm(const Node& n, std::vector<OutputType>& out) {
  out.assign(n.num_outputs(), like_input(n, 0));
  const Shape& x = out[0].shape;
  if (!x.has_rank) return "";
  const int64_t rank = static_cast<int64_t>(x.dims.size());
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return "axis is out of range";
  for (size_t k = 1; k < out.size(); ++k) {
    out[k].dtype = DType::kFloat32;
    for (int64_t d = axis; d < rank; ++d) out[k].shape.dims[d] = Dim{1, ""};
  }
  return "";
}

std::string infer_embed(const Node& n, std::vector<OutputType>& out) {
  using namespace embed_layer_norm;
  out.assign(n.num_outputs(), {});
  if (n.num_inputs() < kFirstTable + 2) return "no table and ids";
  const Shape& ids = input_shape(n, kFirstTable + 1);
  const int64_t e = dim_of(input_shape(n, kFirstTable), 1);
  Shape y = Shape::unknown();
  if (ids.has_rank) {
    y = ids;
    y.dims.push_back(e >= 0 ? Dim{e, ""} : Dim{});
  }
  for (OutputType& o : out) o = {like_input(n, kFirstTable).dtype, y};
  return "";
}

int64_t layer_norm_opset(const Node&) { return 17; }

}  // namespace

NodeSpec LayerNorm::spec() const {
  NodeSpec s{Op::kLayerNormalization,
             {x, scale, bias},
             {{"axis", attr_int(-1)}, {"epsilon", attr_float(epsilon)}}};
  s.domain = own_domain ? kFusedDomain : "";
  return s;
}

NodeSpec RMSNorm::spec() const {
  return {Op::kRMSNorm, {x, gamma}, {{"epsilon", attr_float(epsilon)}}};
}

NodeSpec SkipLayerNorm::spec() const {
  return {Op::kSkipLayerNorm, {x, skip, gamma, beta, bias}, {{"epsilon", attr_float(epsilon)}}};
}

NodeSpec GroupNorm::spec() const {
  NodeSpec s{Op::kGroupNorm,
             {x, gamma, beta, t, tw, tb},
             {{"num_groups", attr_int(num_groups)}, {"epsilon", attr_float(epsilon)}}};
  if (t_silu) s.attrs["t_activation"] = attr_string("SiLU");
  act.write(s.attrs);
  return s;
}

NodeSpec EmbedLayerNorm::spec() const {
  NodeSpec s{Op::kEmbedLayerNorm, {gamma, beta, addend}, {{"epsilon", attr_float(epsilon)}}};
  s.inputs.insert(s.inputs.end(), tables_and_ids.begin(), tables_and_ids.end());
  return s;
}

std::string t_activation_reason(const Node& n) {
  try {
    const std::string a = n.attr_string("t_activation", "");
    return a.empty() || a == "SiLU" ? "" : "t_activation '" + a + "' (takes \"\" or \"SiLU\")";
  } catch (const Error& e) {
    return e.what();
  }
}

bool t_silu(const Node& n) { return n.attr_string("t_activation", "") == "SiLU"; }

void append_norm_defs(std::vector<OpDef>& t) {
  using K = Attribute::Kind;
  const AttrSpec eps{"epsilon", K::kFloat, "1e-5"};
  const OpTraits norm{.op_class = OpClass::kOpaque, .compute = true};
  t.push_back({.op = Op::kLayerNormalization,
               .summary = "ONNX's LayerNormalization (opset 17) in nnfuse's domain, for models of "
                          "older opsets",
               .inputs = {{"X"}, {"Scale"}, {"B", true}},
               .outputs = {{"Y"}, {"Mean", true}, {"InvStdDev", true}},
               .attrs = {{"axis", K::kInt, "-1"}, eps, {"stash_type", K::kInt, "1"}},
               .traits = norm,
               .infer = infer_layer_norm,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "LayerNormalization (the default domain raised to opset 17)",
                       .min_opset = layer_norm_opset}});
  t.push_back({.op = Op::kRMSNorm,
               .summary = "X / sqrt(mean(X^2) + epsilon) * Gamma over the last axis",
               .inputs = {{"X"}, {"Gamma", true}},
               .outputs = {{"Y"}},
               .attrs = {eps},
               .traits = norm,
               .infer = infer_like_x,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "SkipSimplifiedLayerNormalization with a skip of zeros"}});
  t.push_back({.op = Op::kSkipLayerNorm,
               .summary = "S = (X + Bias) + Skip, Y = LayerNorm(S) * Gamma + Beta over the last "
                          "axis; S an output too when read",
               .inputs = {{"X"}, {"Skip"}, {"Gamma"}, {"Beta", true}, {"Bias", true}},
               .outputs = {{"Y"}, {"S", true}},
               .attrs = {eps},
               .traits = norm,
               .infer = infer_like_x,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "SkipLayerNormalization (the sum as output 3)",
                       .min_opset = layer_norm_opset}});
  t.push_back({.op = Op::kGroupNorm,
               .summary = "act(GroupNormalization(X + addend) * Gamma[c] + Beta[c]); the addend "
                          "T, or T x TW + TB (a time embedding)",
               .inputs = {{"X"}, {"Gamma"}, {"Beta"}, {"T", true}, {"TW", true}, {"TB", true}},
               .outputs = {{"Y"}},
               .attrs = {{"num_groups", K::kInt},
                         eps,
                         {"t_activation", K::kString, ""},
                         {"activation", K::kString, ""},
                         {"activation_alpha", K::kFloat, "the activation's"},
                         {"activation_beta", K::kFloat, "the activation's"}},
               .traits = norm,
               .infer = infer_like_x,
               .ort = {.kind = OrtForm::Kind::kLowering,
                       .summary = "Reshape, InstanceNormalization, Reshape, Mul, Add and the "
                                  "activation (with the addend added first)"}});
  t.push_back(
      {.op = Op::kEmbedLayerNorm,
       .summary = "LayerNormalization(Addend + sum_k Gather(Table_k, Ids_k)); the sum an "
                  "output too when read",
       .inputs = {{"Gamma"}, {"Beta", true}, {"Addend", true}, {"Table"}, {"Ids", false, true}},
       .outputs = {{"Y"}, {"S", true}},
       .attrs = {eps},
       .traits = norm,
       .infer = infer_embed,
       .ort = {.kind = OrtForm::Kind::kLowering,
               .summary = "EmbedLayerNormalization (int32 ids) where its form fits, else "
                          "Gather, Add and LayerNormalization",
               .min_opset = layer_norm_opset}});
}

}  // namespace nnfuse::ops
