// The registry of user fusion patterns (nnfuse/fusion_pattern.h) and what the fused node they
// make holds: op UserPattern in kFusedDomain (ops/region.h), attribute "pattern" (the pattern's
// name), "ops" (the matched ops), "inputs_from" (per input: matched node, input index) and each
// matched node's attributes as "n<i>.<name>". Its reference kernel calls the pattern's compute.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nnfuse/fusion_pattern.h"

namespace nnfuse {

// The registered pattern of that name, or nullptr. Callers keep the pointer: a pattern
// unregistered meanwhile stays alive for them.
std::shared_ptr<const FusionPattern> find_fusion_pattern(const std::string& name);
// Every registered pattern, in registration order.
std::vector<std::shared_ptr<const FusionPattern>> fusion_patterns();

// Node attributes <-> the public attribute values.
AttributeValue to_attribute_value(const Attribute& a);  // kTensor, kGraph: unsupported
Attribute from_attribute_value(const AttributeValue& v);
// The context of a UserPattern node: its matched ops and their attributes.
PatternContext user_pattern_context(const Node& node, const FusionPattern& p);

// "fusion pattern 'Mish' (node 'mul_3')": how errors name a pattern at a node.
std::string describe_pattern_at(const std::string& pattern, const std::string& node);

}  // namespace nnfuse
