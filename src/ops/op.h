// An op's identity: Op::kConv, Op::kFusedConv. Every node knows its Op (Node::op(), set when the
// node is made from its domain and op type), so code asks `n->is(Op::kMatMul)` instead of
// comparing names: the domain is part of the identity (an op of another domain with the same
// name is not Op::kMatMul), and a misspelt op is a compile error rather than a test that never
// matches. The names are listed once, in ops/op_names.inc.
//
// Header-only and dependent on nothing: the IR (ir/graph.h) includes it. What an op of nnfuse's
// own domain is (its inputs, attributes, shape rule, cost...) is its definition (ops/def.h).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace nnfuse {

// The domain of nnfuse's own ops (fused ops and the few it adds).
inline constexpr char kFusedDomain[] = "ai.nnfuse";

enum class Op : uint16_t {
  kUnknown = 0,  // an op nnfuse does not know, or a known name in another domain
#define NNFUSE_OP(name, where) k##name,
#include "ops/op_names.inc"
#undef NNFUSE_OP
  kEnd
};

namespace op_detail {

enum Where : unsigned { kOnnx = 1, kOwn = 2 };

struct Entry {
  std::string_view name;
  unsigned where;
};

inline constexpr std::array<Entry, static_cast<size_t>(Op::kEnd)> kEntries = {{
    {"", 0},
#define NNFUSE_OP(name, where) {#name, where},
#include "ops/op_names.inc"
#undef NNFUSE_OP
}};

}  // namespace op_detail

// The op's name ("Conv"); "" for Op::kUnknown.
inline std::string_view op_name(Op op) { return op_detail::kEntries[static_cast<size_t>(op)].name; }

// Whether `op` belongs to ONNX's default domain, or to nnfuse's (both for an ONNX op nnfuse
// also writes in its own domain).
inline bool is_onnx_op(Op op) {
  return (op_detail::kEntries[static_cast<size_t>(op)].where & op_detail::kOnnx) != 0;
}
inline bool is_own_op(Op op) {
  return (op_detail::kEntries[static_cast<size_t>(op)].where & op_detail::kOwn) != 0;
}

// The op of (domain, op type): "" and "ai.onnx" are ONNX's default domain, "ai.nnfuse" is
// nnfuse's; Op::kUnknown for a name the list lacks or a domain the op does not belong to.
inline Op op_of(std::string_view domain, std::string_view op_type) {
  static const std::unordered_map<std::string_view, Op> kByName = [] {
    std::unordered_map<std::string_view, Op> m;
    for (size_t i = 1; i < op_detail::kEntries.size(); ++i) {
      m.emplace(op_detail::kEntries[i].name, static_cast<Op>(i));
    }
    return m;
  }();
  const unsigned where = domain.empty() || domain == "ai.onnx" ? op_detail::kOnnx
                         : domain == kFusedDomain              ? op_detail::kOwn
                                                               : 0u;
  auto it = kByName.find(op_type);
  if (it == kByName.end()) return Op::kUnknown;
  return op_detail::kEntries[static_cast<size_t>(it->second)].where & where ? it->second
                                                                            : Op::kUnknown;
}

}  // namespace nnfuse
