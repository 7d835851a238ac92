// User fusion patterns (nnfuse/fusion_pattern.h): each registered chain of ops becomes one
// UserPattern node whose reference kernel runs the pattern's compute. infer_shape is checked
// against what the graph knows before anything changes; a match it contradicts stays unfused.
#include <algorithm>
#include <iostream>

#include "ir/error.h"
#include "ops/region.h"
#include "ops/user_pattern.h"
#include "passes/fusions/fusion_util.h"
#include "passes/fusions/fusions.h"

namespace nnfuse {

namespace {

TensorInfo info_of(const Value& v) {
  TensorInfo t;
  t.name = v.name();
  t.dtype = v.dtype();
  for (const Dim& d : v.shape().dims) t.shape.push_back(d.known() ? d.value : -1);
  return t;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r + "]";
}

// The chain's inputs: what its nodes read that it does not produce, each value once, with where
// each is first read ({node index, input index}).
std::vector<Value*> chain_inputs(const std::vector<Node*>& chain, std::vector<int64_t>* sources) {
  std::vector<Value*> r;
  for (size_t i = 0; i < chain.size(); ++i) {
    for (size_t slot = 0; slot < chain[i]->num_inputs(); ++slot) {
      Value* v = chain[i]->input(slot);
      if (!v || std::find(r.begin(), r.end(), v) != r.end()) continue;
      const Node* p = v->producer();
      if (p && std::find(chain.begin(), chain.end(), p) != chain.end()) continue;
      r.push_back(v);
      sources->push_back(static_cast<int64_t>(i));
      sources->push_back(static_cast<int64_t>(slot));
    }
  }
  return r;
}

// Fuses one match; "" when done, else why not.
std::string fuse_match(Graph& g, PassContext& ctx, const FusionPattern& p,
                       const std::vector<Node*>& chain) {
  if (std::string why = chain_escape(chain); !why.empty()) return why;
  ops::UserPattern up{{}, p.name, {chain.begin(), chain.end()}, {}};
  std::vector<std::string> op_types;
  std::vector<std::map<std::string, AttributeValue>> node_attrs;
  for (const Node* n : chain) {
    op_types.push_back(n->op_type());
    node_attrs.emplace_back();
    for (const auto& [name, a] : n->attrs()) {
      if (a.kind == Attribute::Kind::kTensor || a.kind == Attribute::Kind::kGraph) {
        return n->describe() + " has a " + attribute_kind_name(a.kind) + " attribute '" + name +
               "', which a fusion pattern cannot be handed";
      }
      node_attrs.back()[name] = to_attribute_value(a);
    }
  }
  std::vector<int64_t>& from = up.inputs_from;
  up.inputs = chain_inputs(chain, &from);
  const std::vector<Value*>& inputs = up.inputs;
  std::vector<PatternContext::InputSource> sources;
  for (size_t k = 0; k + 1 < from.size(); k += 2) {
    sources.emplace_back(static_cast<size_t>(from[k]), static_cast<size_t>(from[k + 1]));
  }
  std::vector<Value*> outputs;
  for (Value* v : chain.back()->outputs()) {
    if (v) outputs.push_back(v);
  }
  std::vector<TensorInfo> in_info;
  for (const Value* v : inputs) {
    if (!v->shape().has_rank) return std::string("input '") + v->name() + "' has no known rank";
    in_info.push_back(info_of(*v));
  }
  const PatternContext pc(p.name, chain.back()->name(), op_types, std::move(node_attrs),
                          std::move(sources), p.params);
  std::vector<TensorInfo> out_info;
  try {
    out_info = p.infer_shape(in_info, pc);
  } catch (const std::exception& e) {
    return std::string("infer_shape failed: ") + e.what();
  } catch (...) {
    return "infer_shape failed with an exception that is not std::exception";
  }
  if (out_info.size() != outputs.size()) {
    return std::string("infer_shape gave ") + std::to_string(out_info.size()) +
           " outputs, the chain has " + std::to_string(outputs.size());
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    TensorInfo& t = out_info[k];
    const Value& v = *outputs[k];
    if (t.dtype == DType::kUndefined) t.dtype = in_info.empty() ? v.dtype() : in_info[0].dtype;
    if (v.dtype() != DType::kUndefined && t.dtype != v.dtype()) {
      return std::string("infer_shape gave ") + dtype_name(t.dtype) + " for '" + v.name() +
             "', the graph has " + dtype_name(v.dtype());
    }
    const Shape& s = v.shape();
    bool same = !s.has_rank || s.dims.size() == t.shape.size();
    for (size_t d = 0; same && s.has_rank && d < s.dims.size(); ++d) {
      same = t.shape[d] < 0 || !s.dims[d].known() || s.dims[d].value == t.shape[d];
    }
    if (!same) {
      return std::string("infer_shape gave ") + shape_text(t.shape) + " for '" + v.name() +
             "', the graph has " + s.str();
    }
  }
  // What infer_shape knows and the graph did not.
  std::vector<std::pair<Value*, Shape>> learned;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Shape s = outputs[k]->shape();
    if (!s.has_rank) {
      s.has_rank = true;
      s.dims.assign(out_info[k].shape.size(), Dim{});
    }
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (!s.dims[d].known() && out_info[k].shape[d] >= 0)
        s.dims[d] = Dim{out_info[k].shape[d], ""};
    }
    learned.emplace_back(outputs[k], std::move(s));
  }
  std::string why = apply_fusion(g, ctx, p.name, chain, up.spec(), outputs);
  if (!why.empty()) return why;
  for (size_t k = 0; k < learned.size(); ++k) {
    learned[k].first->set_dtype(out_info[k].dtype);
    learned[k].first->set_shape(std::move(learned[k].second));
  }
  return "";
}

}  // namespace

void run_fusion_patterns(Graph& g, PassContext& ctx,
                         const std::function<bool(const std::string&)>& enabled) {
  for (const std::shared_ptr<const FusionPattern>& p : fusion_patterns()) {
    if (!enabled(p->name)) continue;
    ctx.report.record(p->name);  // listed even with no match
    const size_t rejected_before = ctx.report.record(p->name).rejected.size();
    const std::vector<Op> ops = onnx_ops_named(p->ops);
    rewrite_each(
        g, ctx, p->name, [&](Node* n) { return chain_from(n, ops); },
        [&](const std::vector<Node*>& chain) { return fuse_match(g, ctx, *p, chain); });
    const auto& rejected = ctx.report.record(p->name).rejected;
    for (size_t i = rejected_before; i < rejected.size(); ++i) {
      std::cerr << "warning: "
                << describe_pattern_at(p->name,
                                       rejected[i].nodes.empty() ? "?" : rejected[i].nodes.back())
                << ": left unfused: " << rejected[i].reason << "\n";
    }
  }
}

}  // namespace nnfuse
