// The registry of user fusion patterns and what their nodes hold.
#include "ops/user_pattern.h"

#include <algorithm>
#include <mutex>

#include "ir/error.h"

namespace nnfuse {

namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::shared_ptr<const FusionPattern>> patterns;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may run during exit
  return *r;
}

template <typename T>
const T* get_if_attr(const std::map<std::string, AttributeValue>& attrs, const std::string& n) {
  auto it = attrs.find(n);
  return it == attrs.end() ? nullptr : std::get_if<T>(&it->second);
}

}  // namespace

void register_fusion_pattern(FusionPattern pattern) {
  const std::string who = "fusion pattern '" + pattern.name + "'";
  if (pattern.name.empty()) fail(ErrorKind::kInvalidArgument, "a fusion pattern needs a name");
  if (pattern.ops.size() < 2) {
    fail(ErrorKind::kInvalidArgument, who, ": a pattern fuses a chain of at least two ops");
  }
  for (const std::string& op : pattern.ops) {
    if (op.empty()) fail(ErrorKind::kInvalidArgument, who, ": an op type is empty");
    if (op_of("", op) == Op::kUnknown) {
      fail(ErrorKind::kInvalidArgument, who, ": '", op, "' is not an ONNX op nnfuse knows");
    }
  }
  if (!pattern.infer_shape) fail(ErrorKind::kInvalidArgument, who, ": infer_shape is missing");
  if (!pattern.compute) fail(ErrorKind::kInvalidArgument, who, ": compute is missing");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& p : r.patterns) {
    if (p->name == pattern.name) {
      fail(ErrorKind::kInvalidArgument, who, " is already registered");
    }
  }
  r.patterns.push_back(std::make_shared<const FusionPattern>(std::move(pattern)));
}

bool unregister_fusion_pattern(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  auto it = std::find_if(r.patterns.begin(), r.patterns.end(),
                         [&](const auto& p) { return p->name == name; });
  if (it == r.patterns.end()) return false;
  r.patterns.erase(it);
  return true;
}

std::vector<std::string> registered_fusion_patterns() {
  std::vector<std::string> names;
  for (const auto& p : fusion_patterns()) names.push_back(p->name);
  return names;
}

std::shared_ptr<const FusionPattern> find_fusion_pattern(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& p : r.patterns) {
    if (p->name == name) return p;
  }
  return nullptr;
}

std::vector<std::shared_ptr<const FusionPattern>> fusion_patterns() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.patterns;
}

int64_t PatternContext::attr_int(size_t i, const std::string& name, int64_t fallback) const {
  const auto* v = get_if_attr<int64_t>(attrs(i), name);
  return v ? *v : fallback;
}

double PatternContext::attr_float(size_t i, const std::string& name, double fallback) const {
  if (const auto* v = get_if_attr<double>(attrs(i), name)) return *v;
  if (const auto* v = get_if_attr<int64_t>(attrs(i), name)) return static_cast<double>(*v);
  return fallback;
}

std::vector<int64_t> PatternContext::attr_ints(size_t i, const std::string& name,
                                               std::vector<int64_t> fallback) const {
  const auto* v = get_if_attr<std::vector<int64_t>>(attrs(i), name);
  return v ? *v : fallback;
}

int PatternContext::input_index(size_t node, size_t slot) const {
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (sources_[k] == InputSource{node, slot}) return static_cast<int>(k);
  }
  return -1;
}

double PatternContext::param(const std::string& name, double fallback) const {
  auto it = params_.find(name);
  return it == params_.end() ? fallback : it->second;
}

AttributeValue to_attribute_value(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      return static_cast<double>(a.f);
    case Attribute::Kind::kInt:
      return a.i;
    case Attribute::Kind::kString:
      return a.s;
    case Attribute::Kind::kFloats:
      return std::vector<double>(a.floats.begin(), a.floats.end());
    case Attribute::Kind::kInts:
      return a.ints;
    case Attribute::Kind::kStrings:
      return a.strings;
    default:
      fail(ErrorKind::kUnsupported, "a ", attribute_kind_name(a.kind),
           " attribute cannot be handed to a fusion pattern");
  }
}

Attribute from_attribute_value(const AttributeValue& v) {
  Attribute a;
  if (const auto* x = std::get_if<int64_t>(&v)) {
    a.kind = Attribute::Kind::kInt;
    a.i = *x;
  } else if (const auto* x = std::get_if<double>(&v)) {
    a.kind = Attribute::Kind::kFloat;
    a.f = static_cast<float>(*x);
  } else if (const auto* x = std::get_if<std::string>(&v)) {
    a.kind = Attribute::Kind::kString;
    a.s = *x;
  } else if (const auto* x = std::get_if<std::vector<int64_t>>(&v)) {
    a.kind = Attribute::Kind::kInts;
    a.ints = *x;
  } else if (const auto* x = std::get_if<std::vector<double>>(&v)) {
    a.kind = Attribute::Kind::kFloats;
    a.floats.assign(x->begin(), x->end());
  } else {
    a.kind = Attribute::Kind::kStrings;
    a.strings = std::get<std::vector<std::string>>(v);
  }
  return a;
}

PatternContext user_pattern_context(const Node& node, const FusionPattern& p) {
  std::vector<std::string> ops;
  if (const Attribute* a = node.find_attr("ops"); a && a->kind == Attribute::Kind::kStrings) {
    ops = a->strings;
  }
  std::vector<std::map<std::string, AttributeValue>> attrs(ops.size());
  std::vector<PatternContext::InputSource> sources;
  const std::vector<int64_t> from = node.attr_ints("inputs_from");
  for (size_t k = 0; k + 1 < from.size(); k += 2) {
    sources.emplace_back(static_cast<size_t>(from[k]), static_cast<size_t>(from[k + 1]));
  }
  for (const auto& [key, a] : node.attrs()) {
    if (key.size() < 3 || key[0] != 'n') continue;
    const size_t dot = key.find('.');
    if (dot == std::string::npos || dot < 2) continue;
    const std::string index = key.substr(1, dot - 1);
    if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const size_t i = std::stoul(index);
    if (i >= attrs.size()) {
      fail(ErrorKind::kInvalidModel, node.describe(), ": attribute '", key, "' names node ", i,
           " of ", ops.size());
    }
    attrs[i][key.substr(dot + 1)] = to_attribute_value(a);
  }
  return PatternContext(p.name, node.name(), std::move(ops), std::move(attrs), std::move(sources),
                        p.params);
}

std::string describe_pattern_at(const std::string& pattern, const std::string& node) {
  return "fusion pattern '" + pattern + "' (node '" + node + "')";
}

}  // namespace nnfuse
