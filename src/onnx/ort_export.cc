// The ONNX Runtime export: the driver, and the lowerings of the convolution and dense ops.
#include "onnx/ort_export.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/builder.h"
#include "ir/error.h"
#include "kernels/ref/conv_pool.h"
#include "kernels/ref/conv_skip.h"
#include "kernels/ref/expand_depthwise.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/squeeze_excite.h"
#include "onnx/exporter.h"

namespace nnfuse {

namespace {

using ref::ActivationKind;

// The default domain's opset of the export: the graph's, raised to what the lowerings of its
// nodes need (ops::OrtForm::min_opset: LayerNormalization, which several write, is an ONNX op from
// opset 17, and every op's opset-13 semantics hold through 17).
int64_t export_opset(const Graph& g) {
  int64_t opset = g.opset("");
  for (const Node* n : g.nodes()) {
    const ops::OpDef* def = ops::def_of(*n);
    if (def && def->ort.min_opset) opset = std::max(opset, def->ort.min_opset(*n));
  }
  return opset;
}

using Lower = void (OrtLowering::*)(const Node&);

// Conv's own attributes, as a fused conv node carries them.
constexpr const char* kConvAttrs[] = {"auto_pad",     "dilations", "group",
                                      "kernel_shape", "pads",      "strides"};

// ORT's FusedConv and FusedGemm apply these activations themselves (MLAS activations), with
// their parameters in activation_params / activation_alpha, activation_beta.
bool ort_fusable(ActivationKind k) {
  switch (k) {
    case ActivationKind::kRelu:
    case ActivationKind::kLeakyRelu:
    case ActivationKind::kClip:
    case ActivationKind::kSigmoid:
    case ActivationKind::kTanh:
    case ActivationKind::kHardSigmoid:
      return true;
    default:
      return false;
  }
}

// ORT's FusedGemm takes these (its activation functors; every parameter must be set).
bool ort_gemm_fusable(ActivationKind k) {
  switch (k) {
    case ActivationKind::kRelu:
    case ActivationKind::kLeakyRelu:
    case ActivationKind::kSigmoid:
    case ActivationKind::kTanh:
    case ActivationKind::kHardSigmoid:
      return true;
    default:
      return false;
  }
}

// FusedGemm's activation attributes: the functor reads alpha, beta and gamma uninitialized
// when absent, so all three are written.
void set_gemm_activation(onnx::NodeProto* p, const std::string& name, const ref::Activation& a) {
  ProtoWriter::set_string(p, "activation", name);
  ProtoWriter::set_float(p, "activation_alpha", a.alpha);
  ProtoWriter::set_float(p, "activation_beta", a.beta);
  ProtoWriter::set_float(p, "activation_gamma", 0.0f);
}

std::vector<float> activation_params(const ref::Activation& a) {
  switch (a.kind) {
    case ActivationKind::kLeakyRelu:
      return {a.alpha};
    case ActivationKind::kClip:
    case ActivationKind::kHardSigmoid:
      return {a.alpha, a.beta};
    default:
      return {};
  }
}

// FusedConv's activation and activation_params (ORT checks their count for the activation).
void set_conv_activation(onnx::NodeProto* p, const std::string& name, const ref::Activation& a) {
  ProtoWriter::set_string(p, "activation", name);
  if (auto params = activation_params(a); !params.empty()) {
    ProtoWriter::set_floats(p, "activation_params", params);
  }
}

std::string name_of(const Value* v) { return v ? v->name() : ""; }

std::optional<Dims> static_dims(const Value* v) {
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

}  // namespace

OrtLowering::OrtLowering(const Graph& g, onnx::GraphProto* gp) : g_(g), w_(g, gp, export_opset(g)) {
  plan();
}

void OrtLowering::declare_shape(const std::string& name, DType dtype, const Dims& dims) {
  onnx::ValueInfoProto* vi = w_.graph_proto()->add_value_info();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

void OrtLowering::declare(const Value* v) {
  if (!v || v->is_graph_output() || v->dtype() == DType::kUndefined) return;
  onnx::ValueInfoProto* vi = w_.graph_proto()->add_value_info();
  value_info_to_proto(v, vi);
}

const std::map<Op, void (OrtLowering::*)(const Node&)>& OrtLowering::lowerings() {
  static const std::map<Op, Lower> m = {
      {Op::kFusedConv, &OrtLowering::lower_conv},
      {Op::kScaledConv, &OrtLowering::lower_scaled_conv},
      {Op::kFusedConvSplit, &OrtLowering::lower_conv_split},
      {Op::kFusedConvPool, &OrtLowering::lower_conv_pool},
      {Op::kFusedGemm, &OrtLowering::lower_gemm},
      {Op::kFusedMatMul, &OrtLowering::lower_matmul},
      {Op::kFusedGlobalPoolGemm, &OrtLowering::lower_pool_gemm},
      {Op::kSqueezeExcite, &OrtLowering::lower_squeeze_excite},
      {Op::kExpandDepthwise, &OrtLowering::lower_expand_depthwise},
      {Op::kGelu, &OrtLowering::lower_standalone_activation},
      {Op::kSwish, &OrtLowering::lower_standalone_activation},
      {Op::kScaleShift, &OrtLowering::lower_scale_shift},
      {Op::kGroupNorm, &OrtLowering::lower_group_norm},
      {Op::kSkipLayerNorm, &OrtLowering::lower_skip_layer_norm},
      {Op::kRMSNorm, &OrtLowering::lower_rms_norm},
      {Op::kLayerNormalization, &OrtLowering::lower_layer_norm},
      {Op::kEmbedLayerNorm, &OrtLowering::lower_embed},
      {Op::kMultiHeadAttention, &OrtLowering::lower_attention},
      {Op::kFusedMatMulLayerNorm, &OrtLowering::lower_matmul_layer_norm},
      {Op::kFusedLayerNormMatMul, &OrtLowering::lower_layer_norm_matmul},
      {Op::kFusedGatedMatMul, &OrtLowering::lower_gated_matmul},
      {Op::kFusedMatMulResidual, &OrtLowering::lower_matmul_residual},
      {Op::kMatMulIntegerToFloat, &OrtLowering::lower_matmul_integer_to_float},
      {Op::kMatMulNBits, &OrtLowering::lower_matmul_nbits},
      {Op::kFusedRegion, &OrtLowering::lower_region},
  };
  return m;
}

void OrtLowering::lower(const Node& n) {
  w_.begin(n.name());
  if (auto it = rewrites_.find(&n); it != rewrites_.end()) return it->second();
  const ops::OpDef* def = ops::def_of(n);
  if (!def) fail(ErrorKind::kUnsupported, n.describe(), ": not an op of ", kFusedDomain);
  switch (def->ort.kind) {
    case ops::OrtForm::Kind::kNone:
      fail(ErrorKind::kUnsupported, n.describe(), ": ",
           def->ort.why_for ? def->ort.why_for(n) : std::string(def->ort.why),
           "; export with the nnfuse format, or compile without it");
    case ops::OrtForm::Kind::kDecomposed:
      return write_decomposed(n, *def);
    case ops::OrtForm::Kind::kLowering:
      break;
  }
  auto it = lowerings().find(n.op());
  if (it == lowerings().end()) {
    fail(ErrorKind::kInternal, n.describe(),
         ": its definition names an ONNX Runtime lowering "
         "that the exporter does not have");
  }
  (this->*it->second)(n);
}

bool ort_lowering_exists(Op op) { return OrtLowering::lowerings().count(op) != 0; }

void OrtLowering::write_activation(const Node& n, const std::string& in, const std::string& out,
                                   const std::string& name) {
  const ref::Activation a = ref::read_activation(n);
  onnx::NodeProto* p = nullptr;
  switch (a.kind) {
    case ActivationKind::kNone:
      w_.node("Identity", {in}, {out}, "", name);
      return;
    case ActivationKind::kRelu:
      w_.node("Relu", {in}, {out}, "", name);
      return;
    case ActivationKind::kSigmoid:
      w_.node("Sigmoid", {in}, {out}, "", name);
      return;
    case ActivationKind::kTanh:
      w_.node("Tanh", {in}, {out}, "", name);
      return;
    case ActivationKind::kLeakyRelu:
      p = w_.node("LeakyRelu", {in}, {out}, "", name);
      ProtoWriter::set_float(p, "alpha", a.alpha);
      return;
    case ActivationKind::kHardSigmoid:
      p = w_.node("HardSigmoid", {in}, {out}, "", name);
      ProtoWriter::set_float(p, "alpha", a.alpha);
      ProtoWriter::set_float(p, "beta", a.beta);
      return;
    case ActivationKind::kClip:
      w_.node("Clip", {in, w_.scalar(a.alpha), w_.scalar(a.beta)}, {out}, "", name);
      return;
    case ActivationKind::kHardSwish:
      if (w_.opset() >= 14) {
        w_.node("HardSwish", {in}, {out}, "", name);
      } else {
        const std::string gate = w_.fresh(out + "_gate");
        p = w_.node("HardSigmoid", {in}, {gate}, "", name + "_gate");
        ProtoWriter::set_float(p, "alpha", 1.0f / 6.0f);
        ProtoWriter::set_float(p, "beta", 0.5f);
        w_.node("Mul", {in, gate}, {out}, "", name);
      }
      return;
    case ActivationKind::kSiLU:
    case ActivationKind::kSwish:
      p = w_.node("QuickGelu", {in}, {out}, kOrtDomain, name);
      ProtoWriter::set_float(p, "alpha", a.kind == ActivationKind::kSiLU ? 1.0f : a.alpha);
      return;
    case ActivationKind::kGelu:
      w_.node("Gelu", {in}, {out}, kOrtDomain, name);
      return;
    case ActivationKind::kQuantize: {
      // The grid of 256 steps from beta as uint8 with zero point -beta (any 8-bit type and
      // zero point with the same lowest step gives the same values).
      const std::string q = w_.fresh(out + "_quantized");
      const std::string s = w_.scalar(a.alpha);
      const std::string z = w_.constant(
          "zero_point", Tensor::scalar<uint8_t>(static_cast<uint8_t>(-static_cast<int>(a.beta))));
      w_.node("QuantizeLinear", {in, s, z}, {q}, "", name + "_quantize");
      w_.node("DequantizeLinear", {q, s, z}, {out}, "", name);
      return;
    }
    case ActivationKind::kGeluTanh:
      w_.node("FastGelu", {in}, {out}, kOrtDomain, name);
      return;
  }
}

namespace {

bool has_activation(const Node& n) { return ref::read_activation(n).kind != ActivationKind::kNone; }

}  // namespace

void OrtLowering::write_conv(const Node& n, const std::string& x, size_t first_weight,
                             const Value* conv_value, const std::string& out,
                             const std::string& name, const std::string& skip) {
  // FusedConv(X, W, B?, Z?): ORT adds Z before its activation, Z of exactly the output's shape.
  const ref::Activation a = ref::read_activation(n);
  const Value* z = skip.empty() ? n.input(first_weight + 2) : nullptr;
  const auto zd = static_dims(z);
  const auto yd = static_dims(conv_value);
  const bool z_inside = !z || (zd && yd && *zd == *yd);
  const bool act_inside = a.kind == ActivationKind::kNone || (ort_fusable(a.kind) && z_inside);
  std::vector<std::string> ins = {x, name_of(n.input(first_weight)),
                                  name_of(n.input(first_weight + 1))};
  if (z && z_inside) ins.push_back(z->name());
  if (!skip.empty()) ins.push_back(skip);
  while (ins.back().empty()) ins.pop_back();
  const bool last = z_inside && act_inside;
  const std::string conv_out = last ? out : w_.fresh(out + "_conv");
  onnx::NodeProto* p =
      w_.node("FusedConv", ins, {conv_out}, kOrtDomain, last ? name : name + "_conv");
  for (const char* k : kConvAttrs) {
    if (const Attribute* at = n.find_attr(k)) ProtoWriter::set_attr(p, k, *at);
  }
  if (a.kind != ActivationKind::kNone && act_inside) {
    set_conv_activation(p, n.attr_string("activation", ""), a);
  }
  if (last) return;
  std::string cur = conv_out;
  if (z && !z_inside) {
    const std::string sum = a.kind == ActivationKind::kNone ? out : w_.fresh(out + "_sum");
    w_.node("Add", {cur, z->name()}, {sum}, "",
            a.kind == ActivationKind::kNone ? name : name + "_sum");
    cur = sum;
  }
  if (a.kind != ActivationKind::kNone) write_activation(n, cur, out, name);
}

void OrtLowering::lower_conv(const Node& n) {
  std::string skip;
  if (ref::has_skip_conv(n)) {
    // The skip convolution as a Conv of its own, its output FusedConv's Z.
    skip = w_.fresh(name_of(n.output(0)) + "_skip");
    std::vector<std::string> ins;
    for (size_t i = ref::kSkipInput; i < n.num_inputs(); ++i) ins.push_back(name_of(n.input(i)));
    while (!ins.empty() && ins.back().empty()) ins.pop_back();
    onnx::NodeProto* p = w_.node("Conv", ins, {skip}, "", n.name() + "_skip");
    for (const auto& [k, at] : ref::part_attrs(n, ref::kSkipAttrPrefix)) {
      ProtoWriter::set_attr(p, k, at);
    }
  }
  write_conv(n, name_of(n.input(0)), 1, n.output(0), name_of(n.output(0)), n.name(), skip);
}

void OrtLowering::lower_scaled_conv(const Node& n) {
  // ScaledConv(X, scale, W, B?, Z?) = FusedConv(X * scale, W, B, Z).
  const std::string scaled = w_.fresh(name_of(n.input(0)) + "_scaled");
  w_.node("Mul", {name_of(n.input(0)), name_of(n.input(1))}, {scaled}, "", n.name() + "_scale");
  write_conv(n, scaled, 2, n.output(0), name_of(n.output(0)), n.name());
}

void OrtLowering::lower_conv_split(const Node& n) {
  // FusedConvSplit(X, W, B?) = Split(FusedConv(X, W, B), axis 1, its split sizes).
  const std::string whole = w_.fresh(name_of(n.output(0)) + "_whole");
  write_conv(n, name_of(n.input(0)), 1, nullptr, whole, n.name() + "_conv");
  const std::vector<int64_t> split = n.attr_ints("split");
  std::vector<std::string> outs;
  for (const Value* v : n.outputs()) outs.push_back(name_of(v));
  std::vector<std::string> ins = {whole};
  Tensor sizes(DType::kInt64, {static_cast<int64_t>(split.size())});
  std::copy(split.begin(), split.end(), sizes.data<int64_t>());
  if (opset() >= 13) ins.push_back(w_.constant(n.name() + "_split", sizes));
  onnx::NodeProto* p = w_.node("Split", ins, outs, "", n.name());
  ProtoWriter::set_attr(p, "axis", attr_int(1));
  if (opset() < 13) ProtoWriter::set_attr(p, "split", attr_ints(split));
}

void OrtLowering::lower_conv_pool(const Node& n) {
  // FusedConvPool = MaxPool(FusedConv(...)) with the pool's attributes prefixed "pool_".
  const std::string out = name_of(n.output(0));
  const std::string conv_out = w_.fresh(out + "_conv");
  write_conv(n, name_of(n.input(0)), 1, nullptr, conv_out, n.name() + "_conv");
  onnx::NodeProto* pool = w_.node("MaxPool", {conv_out}, {out}, "", n.name());
  for (const auto& [k, at] : ref::part_attrs(n, ref::kPoolAttrPrefix)) {
    ProtoWriter::set_attr(pool, k, at);
  }
}

void OrtLowering::lower_gemm(const Node& n) {
  const ref::Activation a = ref::read_activation(n);
  const bool inner = a.kind != ActivationKind::kNone && !ort_gemm_fusable(a.kind);
  const std::string out = name_of(n.output(0));
  const std::string gemm_out = inner ? w_.fresh(out + "_gemm") : out;
  std::vector<std::string> ins;
  for (size_t i = 0; i < n.num_inputs() && i < 3; ++i) ins.push_back(name_of(n.input(i)));
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  const bool fused = a.kind != ActivationKind::kNone && !inner;
  onnx::NodeProto* p =
      w_.node(fused ? "FusedGemm" : "Gemm", ins, {gemm_out}, fused ? kOrtDomain : "", n.name());
  for (const char* k : {"alpha", "beta", "transA", "transB"}) {
    if (const Attribute* at = n.find_attr(k)) ProtoWriter::set_attr(p, k, *at);
  }
  if (fused) set_gemm_activation(p, n.attr_string("activation", ""), a);
  if (inner) write_activation(n, gemm_out, out, n.name() + "_act");
}

void OrtLowering::write_dense(const Node& n, const std::string& a, const std::string& b,
                              const std::string& bias, const std::string& out,
                              const std::string& name, bool as_gemm) {
  const ref::Activation act = ref::read_activation(n);
  const Value* av = g_.find_value(a);
  const Value* bv = g_.find_value(b);
  const Value* biasv = bias.empty() ? nullptr : g_.find_value(bias);
  const auto ad = static_dims(av);
  const auto bd = static_dims(bv);
  const auto biasd = static_dims(biasv);
  // A 2-D product with a bias of one value per column (or none) is a Gemm, as ORT makes it.
  const bool gemm =
      as_gemm || (ad && bd && ad->size() == 2 && bd->size() == 2 &&
                  (bias.empty() || (biasd && biasd->size() == 1 && (*biasd)[0] == (*bd)[1])));
  if (gemm) {
    const bool inner = act.kind != ActivationKind::kNone && !ort_gemm_fusable(act.kind);
    const bool fused = act.kind != ActivationKind::kNone && !inner;
    const std::string gemm_out = inner ? w_.fresh(out + "_gemm") : out;
    std::vector<std::string> ins = {a, b};
    if (!bias.empty()) ins.push_back(bias);
    onnx::NodeProto* p =
        w_.node(fused ? "FusedGemm" : "Gemm", ins, {gemm_out}, fused ? kOrtDomain : "", name);
    if (fused) set_gemm_activation(p, n.attr_string("activation", ""), act);
    if (inner) write_activation(n, gemm_out, out, name + "_act");
    return;
  }
  const bool vector_bias = biasd && biasd->size() == 1 && bd && (*biasd)[0] == bd->back();
  if (act.kind == ActivationKind::kNone && bias.empty()) {
    w_.node("MatMul", {a, b}, {out}, "", name);
    return;
  }
  const std::string mm = w_.fresh(out + "_matmul");
  w_.node("MatMul", {a, b}, {mm}, "", name + "_matmul");
  if (vector_bias && act.kind == ActivationKind::kGelu) {
    w_.node("BiasGelu", {mm, bias}, {out}, kOrtDomain, name);
    return;
  }
  if (vector_bias && act.kind == ActivationKind::kGeluTanh) {
    w_.node("FastGelu", {mm, bias}, {out}, kOrtDomain, name);
    return;
  }
  if (bias.empty()) {
    write_activation(n, mm, out, name);
    return;
  }
  if (act.kind == ActivationKind::kNone) {
    w_.node("Add", {mm, bias}, {out}, "", name);
    return;
  }
  const std::string biased = w_.fresh(out + "_biased");
  w_.node("Add", {mm, bias}, {biased}, "", name + "_bias");
  write_activation(n, biased, out, name);
}

void OrtLowering::lower_matmul(const Node& n) {
  write_dense(n, name_of(n.input(0)), name_of(n.input(1)), name_of(n.input(2)),
              name_of(n.output(0)), n.name());
}

void OrtLowering::lower_matmul_residual(const Node& n) {
  // FusedMatMulResidual(A, B, Bias?, R) = the FusedMatMul lowering, then Add(·, R).
  const std::string out = name_of(n.output(0)), product = w_.fresh(out + "_product");
  write_dense(n, name_of(n.input(0)), name_of(n.input(1)), name_of(n.input(2)), product,
              n.name() + "_product");
  w_.node("Add", {product, name_of(n.input(3))}, {out}, "", n.name());
}

void OrtLowering::lower_gated_matmul(const Node& n) {
  // FusedGatedMatMul(X, W, Bias?) = act(X Wg + bg) * (X Wu + bu): the two dense layers again
  // (constant weights and bias split back into their halves), the gate's with the activation,
  // and a Mul, as an exporter writes them (ORT fuses those itself).
  // A norm prologue (a Gamma input) is written first.
  const std::string x =
      n.num_inputs() > 3 && n.input(3) ? write_norm_prologue(n) : name_of(n.input(0));
  const std::string out = name_of(n.output(0));
  const Tensor* w = n.input(1)->is_constant() ? &n.input(1)->constant() : nullptr;
  const Tensor* b = n.input(2) && n.input(2)->is_constant() ? &n.input(2)->constant() : nullptr;
  NNFUSE_CHECK(w && w->rank() == 2 && w->dim(1) % 2 == 0 && (!n.input(2) || b), n.describe(),
               ": W is not a constant [K, 2N] (or the bias not a constant)");
  const int64_t half = w->dim(1) / 2;
  // Columns [from, from + half) of a [R, 2 half] matrix.
  auto columns = [&](const Tensor& t, int64_t from) {
    Tensor r(DType::kFloat32, {t.dim(0), half});
    for (int64_t i = 0; i < t.dim(0); ++i) {
      const float* row = t.data<float>() + i * 2 * half + from;
      std::copy(row, row + half, r.data<float>() + i * half);
    }
    return r;
  };
  const Tensor bias = b ? b->reshaped({1, 2 * half}) : Tensor();
  auto bias_half = [&](int64_t from) { return columns(bias, from).reshaped({half}); };
  const std::string gate = w_.fresh(out + "_gate"), up = w_.fresh(out + "_up");
  write_dense(n, x, w_.constant(out + "_wg", columns(*w, 0)),
              b ? w_.constant(out + "_bg", bias_half(0)) : "", gate, n.name() + "_gate");
  const std::string wu = w_.constant(out + "_wu", columns(*w, half));
  if (b) {
    const std::string mm = w_.fresh(out + "_up_product");
    w_.node("MatMul", {x, wu}, {mm}, "", n.name() + "_up");
    w_.node("Add", {mm, w_.constant(out + "_bu", bias_half(half))}, {up}, "",
            n.name() + "_up_bias");
  } else {
    w_.node("MatMul", {x, wu}, {up}, "", n.name() + "_up");
  }
  w_.node("Mul", {gate, up}, {out}, "", n.name());
}

void OrtLowering::lower_pool_gemm(const Node& n) {
  // FusedGlobalPoolGemm(X, B, C?) = FusedGemm(Flatten(GlobalAveragePool(X)), B, C).
  const std::string out = name_of(n.output(0));
  const std::string pooled = w_.fresh(out + "_pooled");
  const std::string flat = w_.fresh(out + "_flat");
  w_.node("GlobalAveragePool", {name_of(n.input(0))}, {pooled}, "", n.name() + "_pool");
  w_.node("Flatten", {pooled}, {flat}, "", n.name() + "_flatten");
  const ref::Activation a = ref::read_activation(n);
  const bool inner = a.kind != ActivationKind::kNone && !ort_gemm_fusable(a.kind);
  const bool fused = a.kind != ActivationKind::kNone && !inner;
  const std::string gemm_out = inner ? w_.fresh(out + "_gemm") : out;
  std::vector<std::string> ins = {flat, name_of(n.input(1))};
  if (n.input(2)) ins.push_back(name_of(n.input(2)));
  onnx::NodeProto* p =
      w_.node(fused ? "FusedGemm" : "Gemm", ins, {gemm_out}, fused ? kOrtDomain : "", n.name());
  for (const char* k : {"alpha", "beta", "transB"}) {
    if (const Attribute* at = n.find_attr(k)) ProtoWriter::set_attr(p, k, *at);
  }
  if (fused) set_gemm_activation(p, n.attr_string("activation", ""), a);
  if (inner) write_activation(n, gemm_out, out, n.name() + "_act");
}

void OrtLowering::lower_squeeze_excite(const Node& n) {
  // SqueezeExcite(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(GlobalAveragePool(X), W1, B1), W2,
  // B2), each part a FusedConv of its prefixed attributes.
  const std::string out = name_of(n.output(0));
  const std::string pooled = w_.fresh(out + "_pooled");
  w_.node("GlobalAveragePool", {name_of(n.input(0))}, {pooled}, "", n.name() + "_pool");
  const ref::SqueezeExcitePart squeeze = ref::squeeze_excite_part(n, false);
  const ref::SqueezeExcitePart excite = ref::squeeze_excite_part(n, true);
  const std::string squeezed = w_.fresh(out + "_squeezed");
  write_conv(*squeeze.node, pooled, 1, squeeze.node->output(0), squeezed, n.name() + "_squeeze");
  if (!ref::squeeze_excite_applies(n)) {
    write_conv(*excite.node, squeezed, 1, excite.node->output(0), out, n.name());
    return;
  }
  // Applied: X times the scale.
  const std::string scale = w_.fresh(out + "_scale");
  write_conv(*excite.node, squeezed, 1, excite.node->output(0), scale, n.name() + "_excite");
  w_.node("Mul", {name_of(n.input(0)), scale}, {out}, "", n.name());
}

void OrtLowering::lower_expand_depthwise(const Node& n) {
  // ExpandDepthwise(X, W1, B1?, W2, B2?) = FusedConv(FusedConv(X, W1, B1), W2, B2), each part a
  // FusedConv of its prefixed attributes.
  const std::string out = name_of(n.output(0));
  const ref::ExpandDepthwisePart expand = ref::expand_depthwise_part(n, false);
  const ref::ExpandDepthwisePart depthwise = ref::expand_depthwise_part(n, true);
  const std::string expanded = w_.fresh(out + "_expanded");
  write_conv(*expand.node, name_of(n.input(0)), 1, expand.node->output(0), expanded,
             n.name() + "_expand");
  write_conv(*depthwise.node, expanded, 1, depthwise.node->output(0), out, n.name());
}

void OrtLowering::lower_standalone_activation(const Node& n) {
  const std::string in = name_of(n.input(0)), out = name_of(n.output(0));
  if (n.is(Op::kSwish)) {
    onnx::NodeProto* p = w_.node("QuickGelu", {in}, {out}, kOrtDomain, n.name());
    ProtoWriter::set_float(p, "alpha", n.attr_float("alpha", 1.0f));
    return;
  }
  const bool tanh = n.attr_string("approximate", "none") == "tanh";
  w_.node(tanh ? "FastGelu" : "Gelu", {in}, {out}, kOrtDomain, n.name());
}

void OrtLowering::lower_scale_shift(const Node& n) {
  const auto c = static_dims(n.input(1));
  NNFUSE_CHECK(c && c->size() == 1, n.describe(), ": Scale must be a vector");
  const std::string out = name_of(n.output(0));
  const bool act = has_activation(n);
  auto xd = static_dims(n.input(0));
  std::string x = name_of(n.input(0));
  if (n.num_inputs() > 3) {
    // A ScaleShift of a concatenation: the Concat along the channels, then as one of one part.
    std::vector<std::string> parts = {x};
    for (size_t i = 3; i < n.num_inputs(); ++i) parts.push_back(name_of(n.input(i)));
    x = w_.fresh(out + "_concat");
    ProtoWriter::set_int(w_.node("Concat", parts, {x}, "", n.name() + "_concat"), "axis", 1);
    if (xd) (*xd)[1] = (*c)[0];
  }
  const ref::Activation a = ref::read_activation(n);
  if (act && ort_fusable(a.kind) && xd && xd->size() >= 3 && n.input(1)->is_constant()) {
    // With an activation: a depthwise 1x1 FusedConv (weights the scale, bias the shift) applies
    // it too, in one node, as ORT's NCHWc transformer rewrites a BatchNormalization and ReLU.
    Dims wd = {(*c)[0], 1};
    wd.resize(xd->size(), 1);
    onnx::NodeProto* p =
        w_.node("FusedConv",
                {x, w_.constant(n.name() + "_scale", n.input(1)->constant().reshaped(wd)),
                 name_of(n.input(2))},
                {out}, kOrtDomain, n.name());
    ProtoWriter::set_int(p, "group", (*c)[0]);
    ProtoWriter::set_ints(p, "kernel_shape", Dims(xd->size() - 2, 1));
    set_conv_activation(p, n.attr_string("activation", ""), a);
    return;
  }
  // x * scale[c] + shift[c] is an inference BatchNormalization with mean 0, variance 1 and
  // epsilon 0 (x - 0) / sqrt(1 + 0) * scale + shift: exactly.
  const std::string bn_out = act ? w_.fresh(out + "_bn") : out;
  const Tensor zeros(DType::kFloat32, *c);
  Tensor ones(DType::kFloat32, *c);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data<float>()[i] = 1.0f;
  onnx::NodeProto* p =
      w_.node("BatchNormalization",
              {x, name_of(n.input(1)), name_of(n.input(2)), w_.constant(n.name() + "_mean", zeros),
               w_.constant(n.name() + "_var", ones)},
              {bn_out}, "", act ? n.name() + "_bn" : n.name());
  ProtoWriter::set_float(p, "epsilon", 0.0f);
  if (act) write_activation(n, bn_out, out, n.name());
}

}  // namespace nnfuse
