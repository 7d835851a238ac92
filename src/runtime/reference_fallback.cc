#include "runtime/reference_fallback.h"

#include <algorithm>
#include <map>

#include "ir/error.h"
#include "ops/def.h"

namespace nnfuse {

namespace {

std::string value_str(const Value* v) { return dtype_name(v->dtype()) + v->shape().str(); }

// "Conv 'conv3' (float32[1, 64, ?, ?] -> float32?): onednn.conv: reason; ...", the kernels that
// decline for the same reason one after the other named together ("cpu.winograd, onednn.conv:
// reason").
std::string describe(const ReferenceFallback& f, const char* verb) {
  std::string s = f.op_type + " '" + f.node + "' (" + f.shapes + ")" + verb + ":";
  for (size_t i = 0; i < f.declined.size(); ++i) {
    const bool same = i + 1 < f.declined.size() && f.declined[i + 1].second == f.declined[i].second;
    s += (i == 0 ? " " : s.back() == ',' ? " " : "; ") + f.declined[i].first;
    s += same ? "," : ": " + f.declined[i].second;
  }
  return s;
}

}  // namespace

std::string ReferenceFallback::message() const {
  return describe(*this, " runs on the reference kernel");
}

namespace {

bool is_control_flow(const Node& n) { return n.is(Op::kIf) || n.is(Op::kLoop) || n.is(Op::kScan); }

// The compute ops n's subgraphs hold, at any depth (a control-flow node counts through its own
// subgraphs), each once, in order of first appearance.
void compute_ops_in(const Node& n, std::vector<Op>& found) {
  for (const auto& [name, a] : n.attrs()) {
    if (a.kind != Attribute::Kind::kGraph || !a.g) continue;
    for (const Node* m : a.g->nodes()) {
      if (is_control_flow(*m)) {
        compute_ops_in(*m, found);
      } else if (ops::strict_refuses(*m) &&
                 std::find(found.begin(), found.end(), m->op()) == found.end()) {
        found.push_back(m->op());
      }
    }
  }
}

}  // namespace

bool is_compute_node(const Node& n) {
  if (!is_control_flow(n)) return ops::strict_refuses(n);
  std::vector<Op> found;
  compute_ops_in(n, found);
  return !found.empty();
}

std::optional<ReferenceFallback> reference_fallback(const NodeInfo& info) {
  const Node& n = info.node;
  ReferenceFallback f;
  for (const KernelFactory& k : kernels_for(n.op_type())) {
    if (std::string(k.name) != "ref") f.declined.emplace_back(k.name, decline_reason(k, info));
  }
  const bool compute = is_compute_node(n);
  if (f.declined.empty()) {
    if (!compute) return std::nullopt;
    std::string why = "there is none for " + n.op_type() + " yet";
    std::vector<Op> inside;
    compute_ops_in(n, inside);
    for (size_t i = 0; i < inside.size(); ++i) {
      why += (i ? ", " : "; its subgraphs run ") + std::string(op_name(inside[i]));
    }
    if (!inside.empty()) why += " on the reference kernels";
    f.declined.emplace_back("fast kernels", why);
  }
  f.graph_node = &n;
  f.node = n.name();
  f.op_type = n.op_type();
  f.compute_op = compute;
  std::string ins, outs;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && !info.constant(i)) {
      ins += (ins.empty() ? "" : ", ") + value_str(n.input(i));
    }
  }
  for (const Value* o : n.outputs()) {
    if (o) outs += (outs.empty() ? "" : ", ") + value_str(o);
  }
  f.shapes = ins + (ins.empty() ? "-> " : " -> ") + outs;
  return f;
}

void warn_reference_fallbacks(const std::vector<ReferenceFallback>& fallbacks, size_t limit) {
  std::map<std::string, int> rest;
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    if (i < limit) {
      warn(fallbacks[i].message());
    } else {
      rest[fallbacks[i].op_type]++;
    }
  }
  if (rest.empty()) return;
  std::string ops;
  for (auto& [op, n] : rest) ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(n);
  warn(fallbacks.size() - limit, " more nodes run on the reference kernel (", ops, ")");
}

void refuse_compute_fallbacks(const std::vector<ReferenceFallback>& fallbacks) {
  std::vector<const ReferenceFallback*> compute;
  for (const ReferenceFallback& f : fallbacks) {
    if (f.compute_op) compute.push_back(&f);
  }
  if (compute.empty()) return;
  std::string msg = "--strict: " + std::to_string(compute.size()) + " compute node" +
                    (compute.size() == 1 ? "" : "s") + " would run on the reference kernel:";
  const size_t shown = 5;
  for (size_t i = 0; i < compute.size() && i < shown; ++i) {
    msg += (i ? " | " : " ") + describe(*compute[i], "");
  }
  if (compute.size() > shown) msg += " | and " + std::to_string(compute.size() - shown) + " more";
  throw Error(ErrorKind::kUnsupported, msg);
}

}  // namespace nnfuse
