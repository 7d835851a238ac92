#include "passes/auto_fuse/op_class.h"

#include <map>
#include <set>
#include <vector>

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

// kElementwise or kBroadcast, decided from the input shapes.
constexpr OpClass kNary = static_cast<OpClass>(-1);

using Table = std::map<std::string, OpClass>;

const Table& onnx_table() {
  static const Table t = [] {
    Table r;
    for (const char* op : {"Abs",        "Acos",   "Acosh",       "Asin",
                           "Asinh",      "Atan",   "Atanh",       "Ceil",
                           "Celu",       "Clip",   "Cos",         "Cosh",
                           "Dropout",    "Elu",    "Erf",         "Exp",
                           "Floor",      "Gelu",   "HardSigmoid", "HardSwish",
                           "Identity",   "IsInf",  "IsNaN",       "LeakyRelu",
                           "Log",        "Mish",   "Neg",         "Not",
                           "Reciprocal", "Relu",   "Round",       "Selu",
                           "Sigmoid",    "Sign",   "Sin",         "Sinh",
                           "Softplus",   "Shrink", "Softsign",    "Sqrt",
                           "Swish",      "Tan",    "Tanh",        "ThresholdedRelu"})
      r[op] = OpClass::kElementwise;
    for (const char* op :
         {"Add",  "And",         "BitShift", "Div",  "Equal", "Greater", "GreaterOrEqual",
          "Less", "LessOrEqual", "Max",      "Mean", "Min",   "Mod",     "Mul",
          "Or",   "Pow",         "PRelu",    "Sub",  "Sum",   "Where",   "Xor"})
      r[op] = kNary;
    for (const char* op :
         {"Cast",    "CastLike",        "Concat",         "DepthToSpace", "Expand", "EyeLike",
          "Flatten", "Gather",          "GatherElements", "GatherND",     "OneHot", "Pad",
          "Reshape", "ReverseSequence", "Slice",          "SpaceToDepth", "Split",  "Squeeze",
          "Tile",    "Transpose",       "Trilu",          "Unsqueeze"})
      r[op] = OpClass::kInjective;
    for (const char* op : {"ArgMax", "ArgMin", "Hardmax", "LogSoftmax", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                           "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Softmax"})
      r[op] = OpClass::kReduction;
    // Pools as TVM classes them: a window reduction whose output takes an elementwise epilogue.
    for (const char* op : {"AveragePool", "Conv", "ConvTranspose", "Gemm", "GlobalAveragePool",
                           "GlobalMaxPool", "LpPool", "MatMul", "MatMulInteger", "MaxPool"})
      r[op] = OpClass::kOutEltwiseFusable;
    // Listed so the choice is explicit: own kernels (norms), data-dependent or computed
    // shapes, scatters, scans, control flow.
    for (const char* op : {"BatchNormalization",
                           "Compress",
                           "Constant",
                           "ConstantOfShape",
                           "CumSum",
                           "If",
                           "InstanceNormalization",
                           "LayerNormalization",
                           "Loop",
                           "LRN",
                           "MeanVarianceNormalization",
                           "NonMaxSuppression",
                           "NonZero",
                           "Range",
                           "Resize",
                           "Scan",
                           "ScatterElements",
                           "ScatterND",
                           "Shape",
                           "Size",
                           "TopK"})
      r[op] = OpClass::kOpaque;
    // Run on their reference kernels as they are: losses, quantization, recurrences, detection
    // and sampling, linear algebra, signal processing.
    for (const char* op : {"BlackmanWindow",
                           "ConvInteger",
                           "DequantizeLinear",
                           "Det",
                           "DFT",
                           "DynamicQuantizeLinear",
                           "Einsum",
                           "GridSample",
                           "GRU",
                           "HammingWindow",
                           "HannWindow",
                           "LSTM",
                           "MaxUnpool",
                           "MelWeightMatrix",
                           "NegativeLogLikelihoodLoss",
                           "QLinearConv",
                           "QLinearMatMul",
                           "QuantizeLinear",
                           "RNN",
                           "RoiAlign",
                           "SoftmaxCrossEntropyLoss",
                           "STFT",
                           "Unique"})
      r[op] = OpClass::kOpaque;
    return r;
  }();
  return t;
}

const Table& fused_table() {
  static const Table t = [] {
    Table r;
    for (const char* op : {"Gelu", "Swish"}) r[op] = OpClass::kElementwise;
    r["ScaleShift"] = OpClass::kBroadcast;  // x * scale[c] + shift[c]
    for (const char* op :
         {"FusedConv", "FusedConvPool", "FusedGemm", "FusedGlobalPoolGemm", "FusedLayerNormMatMul",
          "FusedMatMul", "FusedMatMulLayerNorm", "FusedGatedMatMul", "FusedMatMulResidual",
          "MultiHeadAttention", "ScaledConv"})
      r[op] = OpClass::kOutEltwiseFusable;
    // FusedRegion: already a generated kernel; regions do not nest. UserPattern: the user's
    // code computes it.
    for (const char* op :
         {"EmbedLayerNorm", "FusedRegion", "GroupNorm", "LayerNormalization", "RMSNorm",
          "SkipLayerNorm", "SqueezeExcite", "UserPattern", "FusedConvSplit", "ExpandDepthwise"})
      r[op] = OpClass::kOpaque;
    return r;
  }();
  return t;
}

const Table* table_for(const std::string& domain) {
  if (is_default_domain(domain)) return &onnx_table();
  if (domain == kFusedDomain) return &fused_table();
  return nullptr;
}

bool same_known_shapes(const Node& node) {
  const Shape* first = nullptr;
  for (const Value* v : node.inputs()) {
    if (!v) continue;
    if (!v->shape().fully_known()) return false;
    if (!first) {
      first = &v->shape();
    } else if (!(v->shape() == *first)) {
      return false;
    }
  }
  return true;
}

bool is_last(int64_t axis, int64_t rank) { return axis == rank - 1 || axis == -1; }

}  // namespace

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kBroadcast:
      return "broadcast";
    case OpClass::kInjective:
      return "injective";
    case OpClass::kReduction:
      return "reduction";
    case OpClass::kOutEltwiseFusable:
      return "out_eltwise_fusable";
    case OpClass::kOpaque:
      return "opaque";
  }
  return "?";
}

OpClass op_class(const Node& node) {
  const Table* t = table_for(node.domain());
  if (!t) return OpClass::kOpaque;
  auto it = t->find(node.op_type());
  if (it == t->end()) return OpClass::kOpaque;
  // A ScaleShift of a concatenation (inputs 3 on are further parts) is a data movement.
  if (node.op_type() == "ScaleShift" && node.num_inputs() > 3) return OpClass::kOpaque;
  if (it->second != kNary) return it->second;
  return same_known_shapes(node) ? OpClass::kElementwise : OpClass::kBroadcast;
}

bool op_class_listed(const std::string& op_type, const std::string& domain) {
  const Table* t = table_for(domain);
  return t && t->count(op_type) != 0;
}

bool is_last_axis_reduction(const Node& node, int64_t opset) {
  if (op_class(node) != OpClass::kReduction) return false;
  const Value* x = node.input(0);
  if (!x || !x->shape().has_rank) return false;
  const int64_t rank = static_cast<int64_t>(x->shape().dims.size());
  if (rank == 0) return false;
  const std::string& op = node.op_type();
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
    return is_last(node.attr_int("axis", opset >= 13 ? -1 : 1), rank);
  }
  if (op == "ArgMax" || op == "ArgMin") return is_last(node.attr_int("axis", 0), rank);
  // Reduce*: axes from the constant second input (ReduceSum from opset 13, all from 18) or
  // the attribute; empty axes reduce every axis unless noop_with_empty_axes.
  std::vector<int64_t> axes;
  if (const Value* a = node.input(1)) {
    if (!a->is_constant()) return false;
    axes = a->constant().to_int64_vector();
  } else {
    axes = node.attr_ints("axes", {});
  }
  if (axes.empty()) return rank == 1 && node.attr_int("noop_with_empty_axes", 0) == 0;
  std::set<int64_t> distinct;
  for (int64_t a : axes) distinct.insert(a < 0 ? a + rank : a);
  return distinct.size() == 1 && *distinct.begin() == rank - 1;
}

}  // namespace nnfuse
