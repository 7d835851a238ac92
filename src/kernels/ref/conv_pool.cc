// Reference FusedConvPool: the FusedConv reference kernel, then MaxPool's, each on its own
// attributes.
#include "kernels/ref/conv_pool.h"

#include "kernels/ref/ref_kernels.h"

namespace nnfuse::ref {

PoolPart pool_part(const Node& fused, const Dims& conv_shape) {
  PoolPart p;
  p.graph = std::make_unique<Graph>();
  Value* x = p.graph->add_value("x", DType::kFloat32, Shape::of(conv_shape));
  p.graph->add_input(x);
  Value* y = p.graph->add_value("y", DType::kFloat32);
  p.node = p.graph->add_node("MaxPool", fused.name(), {x}, {y});
  for (const auto& [name, value] : part_attrs(fused, kPoolAttrPrefix))
    p.node->set_attr(name, value);
  return p;
}

std::map<std::string, Attribute> part_attrs(const Node& fused, const std::string& prefix) {
  std::map<std::string, Attribute> attrs;
  for (const auto& [name, value] : fused.attrs()) {
    if (name.compare(0, prefix.size(), prefix) == 0) attrs[name.substr(prefix.size())] = value;
  }
  return attrs;
}

std::vector<Value*> conv_part_inputs(Graph& g, Value* x, const Node& fused, size_t first) {
  g.add_input(x);
  std::vector<Value*> ins = {x};
  for (size_t i = first; i < first + 2; ++i) {
    const Value* v = i < fused.num_inputs() ? fused.input(i) : nullptr;
    Value* part = v ? g.add_value(v->name(), v->dtype(), v->shape()) : nullptr;
    if (part) g.add_input(part);
    ins.push_back(part);
  }
  while (!ins.empty() && !ins.back()) ins.pop_back();
  return ins;
}

Tensor run_conv_part(const KernelContext& ctx, const Node& part, const Tensor& x, size_t first) {
  const RefKernelEntry* conv = find_ref_kernel("FusedConv");
  NNFUSE_CHECK(conv, ctx.node.op_type(), " needs the FusedConv reference kernel");
  std::vector<const Tensor*> ins = {&x, &ctx.in(first),
                                    ctx.has_input(first + 1) ? ctx.inputs[first + 1] : nullptr};
  KernelContext c{part, ctx.opset, std::move(ins), std::vector<Tensor>(1)};
  conv->run(c);
  return std::move(c.outputs[0]);
}

namespace {

void run_fused_conv_pool(KernelContext& ctx) {
  const RefKernelEntry* conv = find_ref_kernel("FusedConv");
  const RefKernelEntry* pool = find_ref_kernel("MaxPool");
  NNFUSE_CHECK(conv && pool, "FusedConvPool needs the FusedConv and MaxPool reference kernels");
  KernelContext c{ctx.node, ctx.opset, ctx.inputs, std::vector<Tensor>(1)};
  conv->run(c);
  PoolPart p = pool_part(ctx.node, c.outputs[0].shape());
  KernelContext q{*p.node, 17, {&c.outputs[0]}, std::vector<Tensor>(1)};
  pool->run(q);
  ctx.outputs[0] = std::move(q.outputs[0]);
}

std::string support_fused_conv_pool(const Node& node, int64_t opset) {
  const RefKernelEntry* conv = find_ref_kernel("FusedConv");
  std::string why = conv->supports ? conv->supports(node, opset) : "";
  if (!why.empty()) return why;
  if (node.num_outputs() != 1) return "FusedConvPool has one output";
  if (!node.has_attr("pool_kernel_shape")) return "pool_kernel_shape is missing";
  return "";
}

}  // namespace
}  // namespace nnfuse::ref

namespace nnfuse {

void append_conv_pool_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"FusedConvPool", ref::run_fused_conv_pool, ref::support_fused_conv_pool});
}

}  // namespace nnfuse
