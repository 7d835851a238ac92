// What an op is, in one place: every op of nnfuse's own domain (the fused ops and the few others
// it writes) has one definition (OpDef) that every later stage reads instead of knowing the op
// by name:
//   - its inputs and outputs (named, optional or not) and its attributes (typed, with defaults),
//     also given as a typed builder and reader per op (ops/conv.h, ops/dense.h, ...), which the
//     fusion rules build nodes with;
//   - its shape and dtype rule (shape inference of a fused model, and a check of every fusion);
//   - the op class automatic fusion uses, whether it is a compute op (`--strict`), and its cost
//     (FLOPs; bytes moved are its values' sizes);
//   - its ONNX Runtime form: a lowering the ORT exporter writes, a decomposition into standard
//     ops (the definition's own), or the reason there is none.
// Its reference kernel (kernels/ref/) and fast kernels (kernels/cpu/) are found by its Op in
// their explicit tables; a test checks that every defined op has a reference kernel.
//
// ONNX's own ops are defined by ONNX (libonnx's schemas); what nnfuse needs to know of them
// beyond that (class, compute, cost) is in the same form (OpTraits), in ops/onnx_ops.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse {

// Op classes for automatic fusion, as TVM's OpPattern: what an op's data access looks like
// decides which neighbours it may share a generated kernel with. The grouping
// (passes/auto_fuse/grouping.h) puts elementwise, broadcast, injective and last-axis reduction
// ops into regions; out-elementwise-fusable ops (Conv, MatMul...) and opaque ops bound them.
enum class OpClass {
  kElementwise,        // output[i] = f(input[i]...), all inputs of the output's shape
  kBroadcast,          // elementwise whose operands broadcast (or whose shapes are not known)
  kInjective,          // each output element is one input element: Reshape, Transpose, Slice...
  kReduction,          // Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax (row reductions)
  kOutEltwiseFusable,  // Conv, ConvTranspose, MatMul, Gemm, pools, the ai.nnfuse Fused* ops
  kOpaque,             // anything else (norm kernels, data-dependent shapes, control flow...)
};

// "elementwise", "broadcast", "injective", "reduction", "out_eltwise_fusable", "opaque".
const char* op_class_name(OpClass c);

namespace ops {

// The attributes of a node under construction (what a typed builder writes).
using Attrs = std::map<std::string, Attribute>;

// A node to build: what a typed builder (ops/*.h) makes and a rule hands to the rewriter. The
// inputs are positional; a trailing omitted one may be nullptr (the rewriter drops it).
struct NodeSpec {
  Op op = Op::kUnknown;
  std::vector<Value*> inputs;
  Attrs attrs = {};
  // Where the op is in both domains, the one to write it in; unset: ONNX's for ONNX ops, else
  // nnfuse's (spec_domain).
  std::optional<std::string> domain = std::nullopt;
};
// The domain a NodeSpec's node is made in.
std::string spec_domain(const NodeSpec& s);

// What an op's data needs of the machine besides its output (OpTraits::flops): nullptr means
// one operation per output element.
using FlopsFn = int64_t (*)(const Node& n);
// A node's class where it depends on the node (an n-ary op of equal shapes is elementwise).
using ClassFn = OpClass (*)(const Node& n);

struct OpTraits {
  OpClass op_class = OpClass::kOpaque;
  ClassFn node_class = nullptr;  // when set, the class of each node
  // Convolutions, dense products, normalizations, pools, attention, resampling, recurrences...:
  // an op whose reference kernel is a cliff, which `--strict` refuses and every run names.
  bool compute = false;
  // Costs about as much as a dozen adds or more per element (exp, erf, division...): what
  // automatic fusion's recomputation estimate weighs.
  bool expensive = false;
  // Its two inputs may be swapped (Add, Mul, Max...): the pattern matcher tries both orders.
  bool commutative = false;
  FlopsFn flops = nullptr;
};

// One input or output of an op.
struct Port {
  const char* name = {};
  bool optional = false;
  bool variadic = false;  // the last one only: repeats (Concat-like parts, embedding tables)
};

// One attribute: name, kind, and the default when absent ("" when it has none: required, or
// absent meaning "none").
struct AttrSpec {
  std::string name = {};
  Attribute::Kind kind = {};
  const char* default_value = "";
};

// An op's output types and shapes from its inputs' and attributes: what `infer` computes. A dim
// unknown (or symbolic) in the inputs stays so.
struct OutputType {
  DType dtype = DType::kUndefined;
  Shape shape = {};
};
// Fills one OutputType per output (omitted outputs included) and returns "", or the reason the
// node's inputs or attributes do not fit the op.
using InferFn = std::string (*)(const Node& n, std::vector<OutputType>& out);

// A standard-ONNX form of a node, for exporters: adds to `g` nodes of the default domain (or
// ONNX Runtime's com.microsoft) computing `n`'s outputs from its inputs, and removes `n`.
using DecomposeFn = void (*)(Graph& g, Node* n);

// How a node is written for ONNX Runtime (`nnfuse compile --format ort`).
struct OrtForm {
  enum class Kind {
    kLowering,    // the ORT exporter writes it (onnx/ort_*.cc): ORT's contrib ops or standard ones
    kDecomposed,  // `decompose` rewrites it into standard ops, which the exporter writes as they
                  // are
    kNone,        // no ONNX Runtime form: exporting it is an error giving `why`
  };
  Kind kind = Kind::kNone;
  const char* summary = "";  // what it becomes ("FusedConv, or Conv and the activation")
  DecomposeFn decompose = nullptr;
  const char* why = "";
  // With kNone: the reason for this node, when it says more than `why` (names its pattern).
  std::string (*why_for)(const Node& n) = nullptr;
  // The default domain's opset the form needs at least (LayerNormalization: 17); 0 for any.
  int64_t (*min_opset)(const Node& n) = nullptr;
};

struct OpDef {
  Op op = Op::kUnknown;
  const char* summary = "";  // the op's semantics in a line or two
  std::vector<Port> inputs = {};
  std::vector<Port> outputs = {};
  std::vector<AttrSpec> attrs = {};
  bool open_attrs = false;  // takes attributes beyond those listed (a user pattern's nodes')
  OpTraits traits = {};
  InferFn infer = nullptr;
  const char* infer_why = "";  // without `infer`: where the outputs' types come from instead
  OrtForm ort = {};

  std::string_view name() const { return op_name(op); }
};

// The definition of an op of nnfuse's domain, or nullptr (ONNX ops, unknown ops).
const OpDef* find_def(Op op);
inline const OpDef* def_of(const Node& n) {
  return n.domain() == kFusedDomain ? find_def(n.op()) : nullptr;
}
// Every definition, in Op order.
const std::vector<const OpDef*>& all_defs();

// What nnfuse knows of an op beyond its schema: its definition's traits for nnfuse's ops, the
// table of ops/onnx_ops.cc for ONNX's; an unknown op's are the defaults (opaque, not compute).
const OpTraits& traits_of(const Node& n);

// The traits of an op (its definition's where it has one, else ONNX's table).
const OpTraits& traits_of(Op op);

// The node's class: its traits' (node_class when set) — opaque for unknown ops.
OpClass op_class(const Node& node);
// What `--strict` refuses on a reference kernel: a compute op always (kAlways); an op that
// computes on tensor data (the elementwise, broadcast and reduction classes, CumSum) when its
// output is floating point (kOnFloats), so that integer shape and index arithmetic stays allowed;
// nothing else (data movement, shapes, index bookkeeping: kNever).
enum class StrictRefusal { kNever, kOnFloats, kAlways };
StrictRefusal strict_refusal(Op op);
// The same for a node (control flow aside: its subgraphs decide, runtime/reference_fallback.h).
bool strict_refuses(const Node& n);

// Whether the op's traits are listed (a class of its own, not the unknown default): a test keeps
// every op with a reference kernel listed.
bool traits_listed(Op op);

// "" when the node has the inputs, outputs and attribute kinds its definition states (required
// inputs present, no more than it takes, known attributes of the stated kind), else the reason.
std::string check_against_def(const Node& n, const OpDef& def);

// "" when the node agrees with its definition: its inputs, outputs and attributes as
// check_against_def, and each output's dtype and every dim known both to the node's value and to
// the shape rule the same; else the disagreement.
std::string check_node(const Node& n, const OpDef& def);

}  // namespace ops
}  // namespace nnfuse
