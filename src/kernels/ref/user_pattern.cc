// The reference kernel of a UserPattern node: the registered pattern's compute.
#include "ops/user_pattern.h"

#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

namespace {

std::string supports_user_pattern(const Node& node, int64_t) {
  const std::string name = node.attr_string("pattern", "");
  if (name.empty()) return "the node names no fusion pattern";
  if (!find_fusion_pattern(name)) {
    return "fusion pattern '" + name + "' is not registered in this process";
  }
  return "";
}

void run_user_pattern(KernelContext& ctx) {
  const Node& node = ctx.node;
  const std::string name = node.attr_string("pattern", "");
  const std::shared_ptr<const FusionPattern> p = find_fusion_pattern(name);
  const std::string who = describe_pattern_at(name, node.name());
  if (!p) fail(ErrorKind::kUnsupported, who, ": the pattern is not registered in this process");
  const PatternContext pc = user_pattern_context(node, *p);
  std::vector<Tensor> in;
  in.reserve(ctx.num_inputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.in(i));
  std::vector<Tensor> out;
  try {
    out = p->compute(in, pc);
  } catch (const std::exception& e) {
    fail(ErrorKind::kRuntime, who, ": compute failed: ", e.what());
  } catch (...) {
    fail(ErrorKind::kRuntime, who, ": compute failed with an exception that is not std::exception");
  }
  if (out.size() != node.num_outputs()) {
    fail(ErrorKind::kRuntime, who, ": compute returned ", out.size(), " outputs, the node has ",
         node.num_outputs());
  }
  for (size_t k = 0; k < out.size(); ++k) {
    const Value* v = node.output(k);
    if (!v) continue;
    if (!out[k].defined()) fail(ErrorKind::kRuntime, who, ": compute's output ", k, " is empty");
    if (v->dtype() != DType::kUndefined && out[k].dtype() != v->dtype()) {
      fail(ErrorKind::kRuntime, who, ": compute's output ", k, " is ", dtype_name(out[k].dtype()),
           ", infer_shape said ", dtype_name(v->dtype()));
    }
    if (out[k].layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who, ": compute's output ", k, " is not a plain tensor");
    }
    const Shape& s = v->shape();
    bool same = !s.has_rank || s.dims.size() == out[k].shape().size();
    for (size_t d = 0; same && s.has_rank && d < s.dims.size(); ++d) {
      same = !s.dims[d].known() || s.dims[d].value == out[k].shape()[d];
    }
    if (!same) {
      fail(ErrorKind::kRuntime, who, ": compute's output ", k, " has shape ",
           dims_str(out[k].shape()), ", infer_shape said ", s.str());
    }
    ctx.outputs[k] = std::move(out[k]);
  }
}

}  // namespace

void append_user_pattern_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"UserPattern", run_user_pattern, supports_user_pattern});
}

}  // namespace nnfuse
