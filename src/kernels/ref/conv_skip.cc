#include "kernels/ref/conv_skip.h"

#include "kernels/ref/conv_pool.h"

namespace nnfuse::ref {

SkipPart skip_part(const Node& fused) {
  SkipPart p;
  p.graph = std::make_unique<Graph>();
  static const char* const kNames[] = {"x", "w", "b"};
  std::vector<Value*> ins;
  for (size_t i = 0; i < 3; ++i) {
    const Value* v = kSkipInput + i < fused.num_inputs() ? fused.input(kSkipInput + i) : nullptr;
    if (!v) {
      ins.push_back(nullptr);
      continue;
    }
    Value* part = p.graph->add_value(kNames[i], v->dtype(), v->shape());
    p.graph->add_input(part);
    ins.push_back(part);
  }
  while (!ins.empty() && !ins.back()) ins.pop_back();
  const Value* out = fused.num_outputs() > 0 ? fused.output(0) : nullptr;
  Value* y = out ? p.graph->add_value("y", out->dtype(), out->shape()) : p.graph->add_value("y");
  p.node = p.graph->add_node("Conv", fused.name() + "/skip", ins, {y});
  for (const auto& [name, value] : part_attrs(fused, kSkipAttrPrefix))
    p.node->set_attr(name, value);
  return p;
}

}  // namespace nnfuse::ref
