#include "onnx/inference_guards.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "ir/error.h"
#include "onnx/opset_upgrade.h"
#include "ops/op.h"

namespace nnfuse {

namespace {

// The first guard refusal since the thread last took it (ONNX's non-strict inference swallows
// the error it throws).
thread_local std::string t_refusal;

// The rank of input `i` where inference knows it, else -1.
int input_rank(onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return -1;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

int64_t int_attr(onnx::InferenceContext& ctx, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  return a && a->has_i() ? a->i() : fallback;
}

void check_layer_norm(onnx::InferenceContext& ctx) {
  const int r = input_rank(ctx, 0);
  if (r < 0) return;
  const int64_t axis = int_attr(ctx, "axis", -1);
  if (r == 0 || axis < -r || axis >= r) {
    fail_shape_inference("axis ", axis, " is out of range for an input of rank ", r);
  }
}

void check_gather_nd(onnx::InferenceContext& ctx) {
  const int64_t b = int_attr(ctx, "batch_dims", 0);
  if (b < 0) fail_shape_inference("batch_dims ", b, " is negative");
  const int r = input_rank(ctx, 0), q = input_rank(ctx, 1);
  if (r >= 0 && q >= 0 && b >= std::min(r, q)) {
    fail_shape_inference("batch_dims ", b, " must be below the data's rank ", r,
                         " and the indices' rank ", q);
  }
}

void check_stft(onnx::InferenceContext& ctx) {
  const int r = input_rank(ctx, 0);
  if (r >= 0 && r != 3) {
    fail_shape_inference("the signal has rank ", r, "; it must be 3 ([batch, length, 1 or 2])");
  }
}

// Inputs [0, count) must have rank `rank` where it is known.
template <int kCount, int kRank>
void check_ranks(onnx::InferenceContext& ctx) {
  for (size_t i = 0; i < kCount; ++i) {
    const int r = input_rank(ctx, i);
    if (r >= 0 && r != kRank) {
      fail_shape_inference("input ", i, " has rank ", r, "; it must be ", kRank);
    }
  }
}

// A convolution's weight (input kW) has its image's rank, at least 2 ([M, C/group, k1, ...]).
template <size_t kW>
void check_conv_weight(onnx::InferenceContext& ctx) {
  const int x = input_rank(ctx, 0), w = input_rank(ctx, kW);
  if (w >= 0 && w < 2) fail_shape_inference("the weight has rank ", w, "; it needs at least 2");
  if (x >= 0 && w >= 0 && x != w) {
    fail_shape_inference("the input has rank ", x, " and the weight rank ", w,
                         "; they must be the same");
  }
}

// A sliding window's strides, dilations and kernel size are at least 1 (ONNX's inference
// divides by the stride).
void check_window(onnx::InferenceContext& ctx) {
  for (const char* name : {"strides", "dilations", "kernel_shape"}) {
    const onnx::AttributeProto* a = ctx.getAttribute(name);
    if (!a) continue;
    for (int64_t v : a->ints()) {
      if (v < 1) fail_shape_inference(name, " has ", v, "; each must be at least 1");
    }
  }
}

template <size_t kW>
void check_conv(onnx::InferenceContext& ctx) {
  check_window(ctx);
  check_conv_weight<kW>(ctx);
}

// MaxUnpool's inference (without output_shape) copies the channel dim from the indices' shape
// unchecked. Indices of a known rank other than the input's are refused; indices of unknown rank
// leave the output's shape to nnfuse's own inference (ONNX's is skipped).
bool max_unpool_can_infer(onnx::InferenceContext& ctx) {
  check_window(ctx);
  const int x = input_rank(ctx, 0), i = input_rank(ctx, 1);
  if (i >= 0 && i < 2) fail_shape_inference("the indices have rank ", i, "; they need at least 2");
  if (i >= 0 && x >= 0 && i != x) {
    fail_shape_inference("the indices have rank ", i, "; they must have the input's rank ", x);
  }
  if (x >= 0 && i < 0) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    return false;
  }
  return true;
}

// A check that refuses by throwing and lets ONNX's inference run.
template <void (*kCheck)(onnx::InferenceContext&)>
bool refuse_or_infer(onnx::InferenceContext& ctx) {
  kCheck(ctx);
  return true;
}

// Each check throws to refuse the node, and returns whether ONNX's inference may run on it.
using Guard = bool (*)(onnx::InferenceContext&);

// The default-domain operators whose inference functions read out of bounds (or divide by
// zero) without these.
const std::map<std::string, Guard>& guards() {
  static const std::map<std::string, Guard> g = {
      {"LayerNormalization", refuse_or_infer<check_layer_norm>},
      {"GatherND", refuse_or_infer<check_gather_nd>},
      {"STFT", refuse_or_infer<check_stft>},
      {"Conv", refuse_or_infer<check_conv<1>>},
      {"ConvInteger", refuse_or_infer<check_conv<1>>},
      {"ConvTranspose", refuse_or_infer<check_conv<1>>},
      {"QLinearConv", refuse_or_infer<check_conv<3>>},
      {"AveragePool", refuse_or_infer<check_window>},
      {"MaxPool", refuse_or_infer<check_window>},
      {"LpPool", refuse_or_infer<check_window>},
      {"MaxUnpool", max_unpool_can_infer},
      // The matrices; the recurrent ops' X, W and R (the oldest inference functions index them
      // unchecked).
      {"Gemm", refuse_or_infer<check_ranks<2, 2>>},
      {"RNN", refuse_or_infer<check_ranks<3, 3>>},
      {"GRU", refuse_or_infer<check_ranks<3, 3>>},
      {"LSTM", refuse_or_infer<check_ranks<3, 3>>},
  };
  return g;
}

// Above every default-domain opset libonnx knows.
constexpr int kLastVersion = 40;

// Every registered version of `op` in the default domain.
std::set<onnx::OpSchema*> versions_of(const std::string& op) {
  std::set<onnx::OpSchema*> out;
  for (int v = 1; v <= kLastVersion; ++v) {
    // The registry hands out const schemas of objects it owns and never shares across threads
    // before this runs (install_inference_guards runs once, before any inference).
    if (const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, v, "")) {
      out.insert(const_cast<onnx::OpSchema*>(s));
    }
  }
  return out;
}

}  // namespace

void install_inference_guards() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& [name, fn] : guards()) {
      const std::string op = name;
      auto* const check = fn;
      for (onnx::OpSchema* s : versions_of(op)) {
        onnx::InferenceFunction inner = s->GetTypeAndShapeInferenceFunction();
        s->TypeAndShapeInferenceFunction([op, inner, check](onnx::InferenceContext& ctx) {
          bool infer = true;
          try {
            infer = check(ctx);
          } catch (const onnx::InferenceError& e) {
            if (t_refusal.empty()) {
              std::string why = e.what();
              const std::string tag = "[ShapeInferenceError] ";
              if (why.rfind(tag, 0) == 0) why.erase(0, tag.size());
              t_refusal = "a " + op + " node: " + why;
            }
            throw;
          }
          if (infer && inner) inner(ctx);
        });
      }
    }
  });
}

std::string take_guard_refusal() {
  std::string out;
  out.swap(t_refusal);
  return out;
}

namespace {

// `defined`: on entry, the names the enclosing graphs define (a subgraph may read them).
void check_names_defined(const onnx::GraphProto& g, std::set<std::string> defined,
                         const std::string& label) {
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) {
      if (!i.empty() && !defined.count(i)) {
        fail(ErrorKind::kInvalidModel, label, ": node '", n.name(), "' (", n.op_type(), ") reads '",
             i, "', which no node, input or initializer defines");
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_names_defined(a.g(), defined, label);
      for (const auto& sub : a.graphs()) check_names_defined(sub, defined, label);
    }
  }
  for (const auto& v : g.output()) {
    if (!defined.count(v.name())) {
      fail(ErrorKind::kInvalidModel, label, ": graph output '", v.name(),
           "' is not produced by any node, input or initializer");
    }
  }
}

}  // namespace

void check_names_defined(const onnx::ModelProto& m, const std::string& label) {
  check_names_defined(m.graph(), {}, label);
}

void check_inputs_typed(const onnx::ModelProto& m, const std::string& label) {
  for (const auto& v : m.graph().input()) {
    if (v.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      fail(ErrorKind::kInvalidModel, label, ": graph input '", v.name(), "' has no type");
    }
    // ONNX's inference functions read a tensor's type from inputs their schema says are tensors
    // without checking (MaxUnpool's read a map as one, found by fuzz_model); nnfuse's values are
    // tensors only, so any other input is refused first.
    if (v.type().value_case() != onnx::TypeProto::kTensorType) {
      const char* kind = "a value of another type than a tensor";
      switch (v.type().value_case()) {
        case onnx::TypeProto::kSequenceType:
          kind = "a sequence";
          break;
        case onnx::TypeProto::kMapType:
          kind = "a map";
          break;
        case onnx::TypeProto::kOptionalType:
          kind = "an optional";
          break;
        case onnx::TypeProto::kSparseTensorType:
          kind = "a sparse tensor";
          break;
        default:
          break;
      }
      fail(ErrorKind::kUnsupported, label, ": graph input '", v.name(), "' is ", kind,
           "; nnfuse runs tensors only");
    }
    // ONNX's inference takes a tensor of no element type for no type at all, and an inference
    // function that copies the input's shape then reads a null type (EyeLike's, found by
    // fuzz_model).
    if (v.type().tensor_type().elem_type() == onnx::TensorProto::UNDEFINED) {
      fail(ErrorKind::kInvalidModel, label, ": graph input '", v.name(),
           "' is a tensor of no element type");
    }
  }
}

namespace {

// Ranks of the values a graph and its enclosing graphs type, by name.
using Ranks = std::map<std::string, int>;

void add_ranks(const onnx::GraphProto& g, Ranks& ranks) {
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
      ranks[v.name()] = v.type().tensor_type().shape().dim_size();
    }
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& t : g.initializer()) ranks[t.name()] = t.dims_size();
}

void check_graph(const onnx::GraphProto& g, Ranks ranks, const std::string& label) {
  add_ranks(g, ranks);
  for (const auto& n : g.node()) {
    if (op_of(n.domain(), n.op_type()) == Op::kGemm) {
      // The Gemm 6-to-7 adapter reads two dims of A and of B, as their shapes say.
      for (int i = 0; i < 2 && i < n.input_size(); ++i) {
        const auto it = ranks.find(n.input(i));
        const int r = it == ranks.end() ? -1 : it->second;
        if (r != 2) {
          fail(ErrorKind::kInvalidModel, label, ": Gemm node '", n.name(), "': input ", i, " ('",
               n.input(i), "') ",
               r < 0 ? std::string("has no known shape") : "has rank " + std::to_string(r),
               "; converting an opset below 7 needs both matrices of rank 2");
        }
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) check_graph(a.g(), ranks, label);
      for (const auto& sub : a.graphs()) check_graph(sub, ranks, label);
    }
  }
}

}  // namespace

void check_converter_preconditions(const onnx::ModelProto& m, const std::string& label) {
  if (default_opset(m) >= 7) return;
  // The adapters see the shapes ONNX's inference gives; a copy is inferred to see them too.
  install_inference_guards();
  onnx::ModelProto inferred = m;
  take_guard_refusal();
  try {
    onnx::ShapeInferenceOptions so(/*check_type=*/false, /*strict=*/0, /*data_prop=*/false);
    onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), so);
  } catch (const std::exception&) {
    // What inference refuses, the converter and the importer report in their own words.
  }
  if (std::string refusal = take_guard_refusal(); !refusal.empty()) {
    fail(ErrorKind::kInvalidModel, label, ": ", refusal);
  }
  check_graph(inferred.graph(), {}, label);
}

}  // namespace nnfuse
