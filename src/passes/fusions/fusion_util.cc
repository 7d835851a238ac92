#include "passes/fusions/fusion_util.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "passes/report.h"
#include "pattern/rewriter.h"

namespace nnfuse {

using pattern::Pat;

Attribute attr_string(std::string s) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = std::move(s);
  return a;
}
Attribute attr_float(float f) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = f;
  return a;
}
Attribute attr_int(int64_t i) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = i;
  return a;
}

std::vector<std::string> original_names(const std::vector<Node*>& nodes) {
  std::vector<std::string> names;
  for (const Node* n : nodes) {
    if (n->fused_from().empty()) {
      names.push_back(n->name());
    } else {
      names.insert(names.end(), n->fused_from().begin(), n->fused_from().end());
    }
  }
  return names;
}

std::string apply_fusion(Graph& g, PassContext& ctx, const std::string& pass,
                         const std::vector<Node*>& nodes, const std::string& op_type,
                         const std::string& domain, const std::vector<Value*>& inputs,
                         const std::vector<Value*>& outputs,
                         std::map<std::string, Attribute> attrs) {
  std::vector<std::string> names = original_names(nodes);
  std::string why = pattern::check_replaceable(g, nodes, outputs);
  if (!why.empty()) return why;
  // Benefit: every value produced inside the set that is not an output stops being written
  // to memory and read back.
  std::vector<const Value*> intermediates;
  for (const Node* n : nodes) {
    for (const Value* o : n->outputs()) {
      if (o && std::find(outputs.begin(), outputs.end(), o) == outputs.end()) {
        intermediates.push_back(o);
      }
    }
  }
  int64_t bytes = intermediate_bytes(intermediates);
  std::vector<std::string> absorbed;
  for (const Node* n : nodes) absorbed.push_back(n->name());
  Node* fused = pattern::replace_with(g, nodes, op_type, domain, inputs, outputs, attrs, pass);
  fused->set_provenance(names, pass);
  ctx.applied(pass);
  FusionBenefit b{fused->name(), pass, names, bytes, static_cast<int>(nodes.size()) - 1};
  // Fold in the benefits of fused nodes this one absorbed.
  auto& list = ctx.report.fused;
  for (auto it = list.begin(); it != list.end();) {
    if (std::find(absorbed.begin(), absorbed.end(), it->node) != absorbed.end()) {
      b.bytes_saved += it->bytes_saved;
      b.kernels_saved += it->kernels_saved;
      if (it->pass != pass) b.pass = it->pass + "+" + b.pass;
      it = list.erase(it);
    } else {
      ++it;
    }
  }
  list.push_back(b);
  return "";
}

std::vector<ActivationPattern> activation_patterns(const Pat& x) {
  using namespace pattern;
  const float kInvSqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  const float kSqrt2 = static_cast<float>(std::sqrt(2.0));
  Pat gelu_inner = erf(any_of({x / kSqrt2, x * kInvSqrt2}));
  return {
      {"Relu", relu(x)},
      {"Clip", op("Clip", {x, constant("clip_min"), constant("clip_max")})},
      {"LeakyRelu", op("LeakyRelu", {x}).named("act")},
      {"Tanh", tanh(x)},
      {"SiLU", x * sigmoid(x)},
      {"Sigmoid", sigmoid(x)},
      {"HardSwish", op("HardSwish", {x})},
      {"HardSwish", x * op("HardSigmoid", {x}).named("act")},
      {"HardSigmoid", op("HardSigmoid", {x}).named("act")},
      {"Gelu", any_of({(x * 0.5f) * (gelu_inner + 1.0f), x * ((gelu_inner + 1.0f) * 0.5f),
                       (x * (gelu_inner + 1.0f)) * 0.5f})},
  };
}

std::optional<Activation> activation_from_match(const std::string& name, const pattern::Match& m,
                                                std::string* why) {
  Activation a{name, 0, 0};
  if (name == "Clip") {
    const Tensor* lo = pattern::constant_value(m.value("clip_min"));
    const Tensor* hi = pattern::constant_value(m.value("clip_max"));
    if (!lo || !hi || lo->numel() != 1 || hi->numel() != 1 || lo->dtype() != DType::kFloat32 ||
        hi->dtype() != DType::kFloat32) {
      *why = "Clip bounds are not float32 scalar constants";
      return std::nullopt;
    }
    a.alpha = lo->data<float>()[0];
    a.beta = hi->data<float>()[0];
  } else if (name == "LeakyRelu") {
    a.alpha = m.node("act")->attr_float("alpha", 0.01f);
  } else if (name == "HardSigmoid" || name == "HardSwish") {
    Node* hs = m.node("act");
    a.alpha = hs ? hs->attr_float("alpha", 0.2f) : 1.0f / 6.0f;
    a.beta = hs ? hs->attr_float("beta", 0.5f) : 0.5f;
    if (name == "HardSwish" && hs && (std::abs(a.alpha - 1.0f / 6.0f) > 1e-6f || a.beta != 0.5f)) {
      *why = "x * HardSigmoid(x) with alpha/beta other than 1/6 and 0.5 is not HardSwish";
      return std::nullopt;
    }
  }
  return a;
}

void set_activation_attrs(std::map<std::string, Attribute>& attrs, const Activation& a) {
  attrs["activation"] = attr_string(a.name);
  attrs["activation_alpha"] = attr_float(a.alpha);
  attrs["activation_beta"] = attr_float(a.beta);
}

}  // namespace nnfuse

namespace nnfuse {

void rewrite_all(
    Graph& g, PassContext& ctx, const std::string& pass,
    const std::vector<ActivationPattern>& patterns,
    const std::function<std::string(const std::string&, const pattern::Match&)>& rewrite) {
  std::set<std::string> declined;
  for (bool changed = true; changed;) {
    changed = false;
    // Latest nodes first: the largest pattern is found from its last node before a smaller
    // one (without the epilogue) can match at an inner node.
    std::vector<Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (declined.count(n->name())) continue;
      for (const ActivationPattern& p : patterns) {
        auto m = pattern::match_at(g, p.match, n);
        if (!m) continue;
        ctx.matched(pass);
        std::vector<std::string> names = original_names(m->nodes());
        std::string why = rewrite(p.name, *m);
        if (why.empty()) {
          changed = true;
        } else {
          ctx.rejected(pass, names, why);
          declined.insert(n->name());
        }
        break;
      }
      if (changed) break;
    }
  }
}

}  // namespace nnfuse
