#include "passes/fusions/fusion_records.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/error.h"
#include "ops/def.h"

namespace nnfuse {

namespace {

// A record made for a node that absorbed fused nodes without recording it: the kernels its
// parts' records saved.
struct Made {
  int kernels_saved = 0;
  void add(const FusionBenefit& part) { kernels_saved += part.kernels_saved; }
};

}  // namespace

std::map<std::string, OriginalCost> original_costs(const Graph& g, const cost::Machine& machine) {
  std::map<std::string, OriginalCost> r;
  for (const Node* n : g.nodes()) {
    if (n->is(Op::kConstant)) continue;
    const int64_t f = std::max<int64_t>(cost::flops(*n), 0), b = cost::bytes_moved(*n);
    r[n->name()] = {f, b, cost::roofline_seconds(f, b, machine)};
  }
  return r;
}

void settle_fusion_records(const Graph& g, FusionReport& report,
                           const std::map<std::string, OriginalCost>& originals,
                           const cost::Machine& machine) {
  // Every node a rule made agrees with its op's definition: its inputs, attributes and the
  // types and shapes the definition's rule gives.
  for (const Node* n : g.nodes()) {
    const ops::OpDef* def = ops::def_of(*n);
    if (!def) continue;
    if (std::string why = ops::check_node(*n, *def); !why.empty()) {
      fail(ErrorKind::kInternal, n->describe(), " (by ", n->fused_by(),
           ") does not agree with the definition of ", n->op_type(), ": ", why);
    }
  }
  std::map<std::string, const Node*> owner;  // original node -> the graph node holding it
  std::set<std::string> names;
  for (const Node* n : g.nodes()) {
    names.insert(n->name());
    for (const std::string& o : n->fused_from()) owner[o] = n;
  }
  std::vector<FusionBenefit> kept, stale;
  for (FusionBenefit& b : report.fused) (names.count(b.node) ? kept : stale).push_back(b);
  std::map<std::string, Made> made;
  for (const FusionBenefit& s : stale) {
    const Node* into = nullptr;
    for (const std::string& o : s.fused_from) {
      if (auto it = owner.find(o); it != owner.end()) {
        into = it->second;
        break;
      }
    }
    if (!into) {  // no fused node holds its nodes now: the record stands as it is
      kept.push_back(s);
      continue;
    }
    auto it = std::find_if(kept.begin(), kept.end(),
                           [&](const FusionBenefit& b) { return b.node == into->name(); });
    if (it == kept.end()) {
      FusionBenefit b = s;
      b.node = into->name();
      b.fused_from = into->fused_from();
      if (into->fused_by() != s.pass) b.pass = s.pass + "+" + into->fused_by();
      b.seconds_after = 0;  // its estimate was for the absorbed node: made again below
      made[b.node].add(s);
      kept.push_back(b);
      continue;
    }
    it->bytes_saved += s.bytes_saved;
    if (it->pass.find(s.pass) == std::string::npos) it->pass = s.pass + "+" + it->pass;
    if (auto m = made.find(it->node); m != made.end()) {
      m->second.add(s);
      continue;
    }
    it->kernels_saved += s.kernels_saved;
    if (s.seconds_after > 0 && it->seconds_after > 0) {
      it->bytes_before += s.bytes_before - s.bytes_after;
      it->seconds_before += s.seconds_before - s.seconds_after;
    }
  }
  // A made record's node runs all its original nodes as one kernel.
  for (FusionBenefit& b : kept) {
    auto m = made.find(b.node);
    if (m == made.end()) continue;
    b.kernels_saved = std::max(m->second.kernels_saved, static_cast<int>(b.fused_from.size()) - 1);
  }
  // A record without an estimate (made here, or by a rule that rewired a node in place): its
  // original nodes as imported against the graph node that runs them now.
  std::map<std::string, const Node*> by_name;
  for (const Node* n : g.nodes()) by_name[n->name()] = n;
  for (FusionBenefit& b : kept) {
    auto n = by_name.find(b.node);
    if (b.seconds_after > 0 || n == by_name.end()) continue;
    b.flops = b.bytes_before = 0;
    b.seconds_before = 0;
    for (const std::string& o : b.fused_from) {
      auto c = originals.find(o);
      if (c == originals.end()) continue;
      b.flops += c->second.flops;
      b.bytes_before += c->second.bytes_moved;
      b.seconds_before += c->second.seconds;
    }
    if (b.seconds_before <= 0) continue;
    b.bytes_after = cost::bytes_moved(*n->second);
    b.seconds_after = cost::roofline_seconds(b.flops, b.bytes_after, machine);
  }
  report.fused = std::move(kept);
}

}  // namespace nnfuse
