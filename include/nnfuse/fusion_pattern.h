// User fusion patterns: a chain of ONNX ops that nnfuse replaces by one node computed by the
// user's code (CANN's custom fusion pattern, with its infer_shape and compute).
//
//   nnfuse::FusionPattern mish;
//   mish.name = "Mish";
//   mish.ops = {"Softplus", "Tanh", "Mul"};   // each op consumes the previous one's output
//   mish.infer_shape = [](const std::vector<nnfuse::TensorInfo>& in, const nnfuse::PatternContext&)
//   {
//     return std::vector<nnfuse::TensorInfo>{in[0]};
//   };
//   mish.compute = [](const std::vector<nnfuse::Tensor>& in, const nnfuse::PatternContext&) { ...
//   }; nnfuse::register_fusion_pattern(mish);
//
// Registered patterns are matched before the built-in fusions, by every compile that follows.
// A match's inputs are the inputs of its nodes that the chain does not produce itself, in node
// order and then input order, each value once (Conv -> BatchNormalization -> Relu: X, W, [B],
// scale, bias, mean, var); its outputs are the last node's. The fused node is reported under the
// pattern's name, and Model::verify checks it against the nodes it replaced.
//
// A match is left unfused, with its reason in the report and a warning on stderr, when an
// intermediate value is used outside the chain, or when infer_shape throws or gives shapes or
// dtypes the graph contradicts. A compute that throws, or returns outputs that differ from what
// infer_shape promised, fails the run with an nnfuse::Error (kRuntime) naming the pattern and the
// node. compute may be called from several threads at once (one compiled model run by many).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nnfuse/dtype.h"
#include "nnfuse/tensor.h"

namespace nnfuse {

// A model input or output as the compiled model declares it; -1 for a dim known only at run
// time.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> shape;
};

// An attribute of a matched node.
using AttributeValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                                    std::vector<double>, std::vector<std::string>>;

// What infer_shape and compute know about the match they are called for.
class PatternContext {
 public:
  // Where each input comes from: {matched node, that node's input index}.
  using InputSource = std::pair<size_t, size_t>;
  PatternContext(std::string pattern, std::string node, std::vector<std::string> ops,
                 std::vector<std::map<std::string, AttributeValue>> attrs,
                 std::vector<InputSource> sources, std::map<std::string, double> params)
      : pattern_(std::move(pattern)),
        node_(std::move(node)),
        ops_(std::move(ops)),
        attrs_(std::move(attrs)),
        sources_(std::move(sources)),
        params_(std::move(params)) {}
  const std::string& pattern() const { return pattern_; }  // the pattern's name
  const std::string& node() const { return node_; }        // the fused node's name
  size_t num_nodes() const { return ops_.size(); }
  const std::string& op(size_t i) const { return ops_.at(i); }  // i-th matched node's op
  // The i-th matched node's attributes (as the model stores them: defaults are absent).
  const std::map<std::string, AttributeValue>& attrs(size_t i) const { return attrs_.at(i); }
  // Typed reads of node i's attribute, `fallback` when it is absent (ints read as floats too).
  int64_t attr_int(size_t i, const std::string& name, int64_t fallback) const;
  double attr_float(size_t i, const std::string& name, double fallback) const;
  std::vector<int64_t> attr_ints(size_t i, const std::string& name,
                                 std::vector<int64_t> fallback = {}) const;
  // Input k of infer_shape and compute is input source(k).second of matched node
  // source(k).first (Conv -> BatchNormalization -> Relu without a conv bias: {0, 0}, {0, 1},
  // {1, 1}, ...), so a pattern tells optional inputs apart.
  size_t num_inputs() const { return sources_.size(); }
  const InputSource& source(size_t k) const { return sources_.at(k); }
  // The input that is input `slot` of matched node `node`, or -1 when it is absent.
  int input_index(size_t node, size_t slot) const;
  // FusionPattern::params.
  const std::map<std::string, double>& params() const { return params_; }
  double param(const std::string& name, double fallback) const;

 private:
  std::string pattern_, node_;
  std::vector<std::string> ops_;
  std::vector<std::map<std::string, AttributeValue>> attrs_;
  std::vector<InputSource> sources_;
  std::map<std::string, double> params_;
};

struct FusionPattern {
  std::string name;                      // reported under this name; a switch file may turn it off
  std::vector<std::string> ops;          // ONNX op types (default domain), a chain of at least two
  std::map<std::string, double> params;  // constants handed to infer_shape and compute
  // The outputs' dtypes and shapes (-1 for a dim unknown at compile time) from the inputs'; an
  // output of undefined dtype takes the first input's.
  std::function<std::vector<TensorInfo>(const std::vector<TensorInfo>& inputs,
                                        const PatternContext& ctx)>
      infer_shape;
  // The outputs from the inputs (plain row-major tensors).
  std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const PatternContext& ctx)>
      compute;
};

// Registers `pattern` for every compile that follows. Throws kInvalidArgument when its name is
// empty or taken, it has fewer than two ops, or infer_shape or compute is missing.
void register_fusion_pattern(FusionPattern pattern);
// Removes a registered pattern (models compiled with it can no longer run); false when none has
// that name.
bool unregister_fusion_pattern(const std::string& name);
// The registered patterns' names, in registration order.
std::vector<std::string> registered_fusion_patterns();

}  // namespace nnfuse
