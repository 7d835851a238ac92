#include "ops/onnx_ops.h"

#include <array>

#include "ir/builder.h"
#include "ops/conv.h"
#include "ops/dense.h"

namespace nnfuse::ops {

NodeSpec Conv::spec() const {
  NodeSpec s{Op::kConv, {x, w, b}, {}};
  conv.write(s.attrs);
  return s;
}

NodeSpec Pool::spec() const {
  NodeSpec s{op, {x}, {}};
  pool.write(s.attrs);
  return s;
}

NodeSpec Gather::spec() const { return {Op::kGather, {data, indices}, {{"axis", attr_int(axis)}}}; }

Transpose Transpose::of(const Node& n) {
  Transpose t{n.input(0), std::nullopt};
  if (n.has_attr("perm")) t.perm = n.attr_ints("perm");
  return t;
}

NodeSpec Transpose::spec() const {
  NodeSpec s{Op::kTranspose, {x}, {}};
  if (perm) s.attrs["perm"] = attr_ints(*perm);
  return s;
}

NodeSpec Reduce::spec() const {
  NodeSpec s{op, {x, axes}, {}};
  if (axes_attr) s.attrs["axes"] = attr_ints(*axes_attr);
  if (keepdims) s.attrs["keepdims"] = attr_int(*keepdims);
  return s;
}

NodeSpec Reshape::spec() const { return {Op::kReshape, {x, shape}, {}}; }

namespace {

// Same known shapes on every input: elementwise; else the inputs broadcast.
OpClass nary_class(const Node& n) {
  const Shape* first = nullptr;
  for (const Value* v : n.inputs()) {
    if (!v) continue;
    if (!v->shape().fully_known()) return OpClass::kBroadcast;
    if (!first) {
      first = &v->shape();
    } else if (!(v->shape() == *first)) {
      return OpClass::kBroadcast;
    }
  }
  return OpClass::kElementwise;
}

int64_t conv_weight_flops(const Node& n) { return conv_flops(n, 1); }

struct Row {
  Op op;
  OpTraits traits;
};

// Classes as TVM's OpPattern gives them (pools as a window reduction whose output takes an
// elementwise epilogue); opaque where the choice is explicit: own kernels (norms), data-dependent
// or computed shapes, scatters, scans, control flow, and ops that run on their reference kernels
// as they are (losses, quantization, recurrences, detection and sampling, linear algebra, signal
// processing). Compute ops: convolutions and dense products, pools, normalizations (Softmax
// normalizes attention's rows), attention and resampling, and the recurrences, quantized
// products, Einsums, sampling and transforms whose reference kernels are slow; control flow
// counts when its subgraphs hold one. Expensive: about a dozen adds or more per element.
const Row kRows[] = {
    {Op::kAbs, {.op_class = OpClass::kElementwise}},
    {Op::kAcos, {.op_class = OpClass::kElementwise}},
    {Op::kAcosh, {.op_class = OpClass::kElementwise}},
    {Op::kAdd, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kAnd, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kArgMax, {.op_class = OpClass::kReduction}},
    {Op::kArgMin, {.op_class = OpClass::kReduction}},
    {Op::kAsin, {.op_class = OpClass::kElementwise}},
    {Op::kAsinh, {.op_class = OpClass::kElementwise}},
    {Op::kAtan, {.op_class = OpClass::kElementwise}},
    {Op::kAtanh, {.op_class = OpClass::kElementwise}},
    {Op::kAttention, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kAveragePool, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kBatchNormalization, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kBitShift, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kBlackmanWindow, {.op_class = OpClass::kOpaque}},
    {Op::kCast, {.op_class = OpClass::kInjective}},
    {Op::kCastLike, {.op_class = OpClass::kInjective}},
    {Op::kCeil, {.op_class = OpClass::kElementwise}},
    {Op::kCelu, {.op_class = OpClass::kElementwise}},
    {Op::kClip, {.op_class = OpClass::kElementwise}},
    {Op::kCompress, {.op_class = OpClass::kOpaque}},
    {Op::kConcat, {.op_class = OpClass::kInjective}},
    {Op::kConstant, {.op_class = OpClass::kOpaque}},
    {Op::kConstantOfShape, {.op_class = OpClass::kOpaque}},
    {Op::kConv,
     {.op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = conv_weight_flops}},
    {Op::kConvInteger, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kConvTranspose,
     {.op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = conv_weight_flops}},
    {Op::kCos, {.op_class = OpClass::kElementwise}},
    {Op::kCosh, {.op_class = OpClass::kElementwise}},
    {Op::kCumSum, {.op_class = OpClass::kOpaque}},
    {Op::kDFT, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kDepthToSpace, {.op_class = OpClass::kInjective}},
    {Op::kDequantizeLinear, {.op_class = OpClass::kOpaque}},
    {Op::kDet, {.op_class = OpClass::kOpaque}},
    {Op::kDiv, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .expensive = true}},
    {Op::kDropout, {.op_class = OpClass::kElementwise}},
    {Op::kDynamicQuantizeLinear, {.op_class = OpClass::kOpaque}},
    {Op::kEinsum, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kElu, {.op_class = OpClass::kElementwise}},
    {Op::kEqual, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kErf, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kExp, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kExpand, {.op_class = OpClass::kInjective}},
    {Op::kEyeLike, {.op_class = OpClass::kInjective}},
    {Op::kFlatten, {.op_class = OpClass::kInjective}},
    {Op::kFloor, {.op_class = OpClass::kElementwise}},
    {Op::kGRU, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kGather, {.op_class = OpClass::kInjective}},
    {Op::kGatherElements, {.op_class = OpClass::kInjective}},
    {Op::kGatherND, {.op_class = OpClass::kInjective}},
    {Op::kGelu, {.op_class = OpClass::kElementwise}},
    {Op::kGemm, {.op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = dense_flops}},
    {Op::kGlobalAveragePool, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kGlobalLpPool, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kGlobalMaxPool, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kGreater, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kGreaterOrEqual, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kGridSample, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kGroupNormalization, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kHammingWindow, {.op_class = OpClass::kOpaque}},
    {Op::kHannWindow, {.op_class = OpClass::kOpaque}},
    {Op::kHardSigmoid, {.op_class = OpClass::kElementwise}},
    {Op::kHardSwish, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kHardmax, {.op_class = OpClass::kReduction}},
    {Op::kIdentity, {.op_class = OpClass::kElementwise}},
    {Op::kIf, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kInstanceNormalization, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kIsInf, {.op_class = OpClass::kElementwise}},
    {Op::kIsNaN, {.op_class = OpClass::kElementwise}},
    {Op::kLRN, {.op_class = OpClass::kOpaque}},
    {Op::kLSTM, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kLayerNormalization, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kLeakyRelu, {.op_class = OpClass::kElementwise}},
    {Op::kLess, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kLessOrEqual, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kLog, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kLogSoftmax, {.op_class = OpClass::kReduction, .compute = true}},
    {Op::kLoop, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kLpPool, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kMatMul, {.op_class = OpClass::kOutEltwiseFusable, .compute = true, .flops = dense_flops}},
    {Op::kMatMulInteger, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kMax, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kMaxPool, {.op_class = OpClass::kOutEltwiseFusable, .compute = true}},
    {Op::kMaxUnpool, {.op_class = OpClass::kOpaque}},
    {Op::kMean, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .expensive = true}},
    {Op::kMeanVarianceNormalization, {.op_class = OpClass::kOpaque}},
    {Op::kMelWeightMatrix, {.op_class = OpClass::kOpaque}},
    {Op::kMin, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kMish, {.op_class = OpClass::kElementwise}},
    {Op::kMod, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kMul, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kNeg, {.op_class = OpClass::kElementwise}},
    {Op::kNegativeLogLikelihoodLoss, {.op_class = OpClass::kOpaque}},
    {Op::kNonMaxSuppression, {.op_class = OpClass::kOpaque}},
    {Op::kNonZero, {.op_class = OpClass::kOpaque}},
    {Op::kNot, {.op_class = OpClass::kElementwise}},
    {Op::kOneHot, {.op_class = OpClass::kInjective}},
    {Op::kOr, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kPRelu, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kPad, {.op_class = OpClass::kInjective}},
    {Op::kPow, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .expensive = true}},
    {Op::kQLinearConv, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kQLinearMatMul, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kQuantizeLinear, {.op_class = OpClass::kOpaque}},
    {Op::kRNN, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kRange, {.op_class = OpClass::kOpaque}},
    {Op::kReciprocal, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kReduceL1, {.op_class = OpClass::kReduction}},
    {Op::kReduceL2, {.op_class = OpClass::kReduction}},
    {Op::kReduceLogSum, {.op_class = OpClass::kReduction}},
    {Op::kReduceLogSumExp, {.op_class = OpClass::kReduction}},
    {Op::kReduceMax, {.op_class = OpClass::kReduction}},
    {Op::kReduceMean, {.op_class = OpClass::kReduction}},
    {Op::kReduceMin, {.op_class = OpClass::kReduction}},
    {Op::kReduceProd, {.op_class = OpClass::kReduction}},
    {Op::kReduceSum, {.op_class = OpClass::kReduction}},
    {Op::kReduceSumSquare, {.op_class = OpClass::kReduction}},
    {Op::kRelu, {.op_class = OpClass::kElementwise}},
    {Op::kReshape, {.op_class = OpClass::kInjective}},
    {Op::kResize, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kReverseSequence, {.op_class = OpClass::kInjective}},
    {Op::kRoiAlign, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kRound, {.op_class = OpClass::kElementwise}},
    {Op::kSTFT, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kScan, {.op_class = OpClass::kOpaque, .compute = true}},
    {Op::kScatterElements, {.op_class = OpClass::kOpaque}},
    {Op::kScatterND, {.op_class = OpClass::kOpaque}},
    {Op::kSelu, {.op_class = OpClass::kElementwise}},
    {Op::kShape, {.op_class = OpClass::kOpaque}},
    {Op::kShrink, {.op_class = OpClass::kElementwise}},
    {Op::kSigmoid, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kSign, {.op_class = OpClass::kElementwise}},
    {Op::kSin, {.op_class = OpClass::kElementwise}},
    {Op::kSinh, {.op_class = OpClass::kElementwise}},
    {Op::kSize, {.op_class = OpClass::kOpaque}},
    {Op::kSlice, {.op_class = OpClass::kInjective}},
    {Op::kSoftmax, {.op_class = OpClass::kReduction, .compute = true}},
    {Op::kSoftmaxCrossEntropyLoss, {.op_class = OpClass::kOpaque}},
    {Op::kSoftplus, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kSoftsign, {.op_class = OpClass::kElementwise}},
    {Op::kSpaceToDepth, {.op_class = OpClass::kInjective}},
    {Op::kSplit, {.op_class = OpClass::kInjective}},
    {Op::kSqrt, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kSqueeze, {.op_class = OpClass::kInjective}},
    {Op::kSub, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kSum, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
    {Op::kSwish, {.op_class = OpClass::kElementwise}},
    {Op::kTan, {.op_class = OpClass::kElementwise}},
    {Op::kTanh, {.op_class = OpClass::kElementwise, .expensive = true}},
    {Op::kThresholdedRelu, {.op_class = OpClass::kElementwise}},
    {Op::kTile, {.op_class = OpClass::kInjective}},
    {Op::kTopK, {.op_class = OpClass::kOpaque}},
    {Op::kTranspose, {.op_class = OpClass::kInjective}},
    {Op::kTrilu, {.op_class = OpClass::kInjective}},
    {Op::kUnique, {.op_class = OpClass::kOpaque}},
    {Op::kUnsqueeze, {.op_class = OpClass::kInjective}},
    {Op::kWhere, {.op_class = OpClass::kBroadcast, .node_class = nary_class}},
    {Op::kXor, {.op_class = OpClass::kBroadcast, .node_class = nary_class, .commutative = true}},
};

}  // namespace

const OpTraits* onnx_traits(Op op) {
  static const auto t = [] {
    std::array<const OpTraits*, static_cast<size_t>(Op::kEnd)> r{};
    for (const Row& row : kRows) r[static_cast<size_t>(row.op)] = &row.traits;
    return r;
  }();
  return t[static_cast<size_t>(op)];
}

}  // namespace nnfuse::ops
