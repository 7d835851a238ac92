// The report's graph pictures: a graph as Graphviz DOT with its fused nodes (or, before
// fusion, the groups of original nodes each fused node came from) outlined and colored by the
// rule that fused them, and Graphviz's `dot` turning DOT into inline SVG. A graph over
// kMaxPictureNodes nodes is drawn collapsed: one box per block (the first components of the
// nodes' '/'-separated names, as PyTorch's exporter writes them), each block drawn on its own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse {

inline constexpr size_t kMaxPictureNodes = 250;

// Each rule's color, in the order the rules appear in `rules` (the report's fused nodes).
std::map<std::string, std::string> rule_colors(const std::vector<std::string>& rules);

// The fused graph's provenance: each original node's fused node, and each fused node's rule.
struct FusionGroups {
  std::map<std::string, std::string> group_of;  // original node name -> fused node name
  std::map<std::string, std::string> rule_of;   // fused node name -> rule
};
FusionGroups fusion_groups(const Graph& fused);

struct GraphPicture {
  std::string overview;  // the whole graph, or its blocks when collapsed
  // Collapsed only: each block's name and its own picture, in graph order.
  std::vector<std::pair<std::string, std::string>> blocks;
  size_t nodes = 0;
};

// The DOT pictures of `g`: with `groups`, the graph before fusion, each fused node's original
// nodes in one outlined box of its rule's color; without, the fused graph, each fused node
// filled with its rule's color.
GraphPicture graph_dot(const Graph& g, const std::map<std::string, std::string>& colors,
                       const FusionGroups* groups = nullptr);

// `dot -Tsvg` of `dot_text`: the <svg> element, or "" with the reason in *error (Graphviz
// missing, a failed layout).
std::string dot_to_svg(const std::string& dot_text, std::string* error);

}  // namespace nnfuse
