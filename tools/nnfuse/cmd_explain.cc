// nnfuse explain MODEL.onnx NODE: what fusion did with one node of the model: the rule that
// fused it, into what and with which other nodes, what that saves, and the kernel that runs the
// result; or, for a node that did not fuse, every rule that looked at it and why it declined.
#include <algorithm>
#include <iostream>

#include "runtime/session.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

namespace {

struct ExplainArgs {
  std::string model;
  std::string node;
  FusionFlags flags;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The kernel the fused graph's plan runs `n` on, with the reasons fast kernels declined it
// where it runs on the reference kernel; "" when the graph cannot be planned (shapes unknown).
std::string kernel_of(const std::shared_ptr<const Graph>& g, const Node* n) {
  try {
    PlanOptions o;
    o.warn_fallbacks = false;
    PlanSession s(g, o);
    for (const PlanStep& st : s.plan().steps()) {
      if (st.node != n || st.kind != PlanStep::Kind::kKernel) continue;
      std::string k = st.kernel_name;
      for (const ReferenceFallback& f : s.plan().reference_fallbacks()) {
        if (f.graph_node == n) k += " (" + f.message() + ")";
      }
      return k;
    }
  } catch (const Error&) {
  }
  return "";
}

int explain(const ExplainArgs& a) {
  auto original = load_onnx(a.model, import_options(a.flags));
  const Node* orig = nullptr;
  for (const Node* n : original->nodes()) {
    if (n->name() == a.node) orig = n;
  }
  if (!orig) {
    std::string near;
    int shown = 0;
    for (const Node* n : original->nodes()) {
      if (n->name().find(a.node) != std::string::npos && shown++ < 5)
        near += " '" + n->name() + "'";
    }
    fail(ErrorKind::kInvalidArgument, a.model, ": no node named '", a.node, "'",
         near.empty() ? std::string(" (nnfuse info --graph lists them)") : "; did you mean" + near);
  }
  const std::string what = orig->op_type() + " '" + a.node + "'";

  FusionReport report;
  std::shared_ptr<const Graph> fused = load_and_fuse(a.model, a.flags, &report);
  std::cout << what << " in " << a.model << "\n";

  // The rules that fused it, in pipeline order (a fused node may be fused again).
  std::vector<const FusionBenefit*> steps;
  for (const FusionBenefit& b : report.fused) {
    if (contains(b.fused_from, a.node)) steps.push_back(&b);
  }
  const Node* now = nullptr;  // the node of the fused graph that computes it
  for (const Node* n : fused->nodes()) {
    if (contains(n->fused_from(), a.node) || (n->name() == a.node && n->fused_from().empty())) {
      now = n;
    }
  }
  if (now && !now->fused_from().empty()) {
    std::cout << "fused: into " << now->op_type() << " '" << now->name() << "' by "
              << now->fused_by() << ", with " << now->fused_from().size() - 1 << " other node"
              << (now->fused_from().size() == 2 ? "" : "s") << ": " << join(now->fused_from())
              << "\n";
    for (const FusionBenefit* b : steps) {
      std::cout << "  " << b->pass << ": " << join(b->fused_from) << " -> '" << b->node << "'";
      if (b->kernels_saved || b->bytes_saved) {
        std::cout << ", " << b->kernels_saved << " kernel" << (b->kernels_saved == 1 ? "" : "s")
                  << " and " << b->bytes_saved << " bytes of intermediates saved";
      }
      std::cout << "\n";
    }
  } else if (now) {
    std::cout << "not fused: it runs as it was imported\n";
  } else {
    std::cout << "removed before fusion: computed at compile time or an identity "
                 "(ConstantFoldingPass, ShapeFoldingPass, IdentityEliminationPass)\n";
  }

  // Every declined match that involved it, whatever happened after.
  size_t declined = 0;
  for (const PassRecord& p : report.passes) {
    for (const RejectedMatch& r : p.rejected) {
      if (!contains(r.nodes, a.node)) continue;
      if (declined++ == 0) std::cout << "declined by:\n";
      std::cout << "  " << p.name << " (with " << join(r.nodes) << "): " << r.reason << "\n";
    }
  }
  for (const FallbackRecord& f : report.fallbacks) {
    if (!contains(f.nodes, a.node)) continue;
    ++declined;
    std::cout << "fell back: " << f.pass << " region '" << f.region << "': " << f.reason << "\n";
  }
  if (!declined && !(now && !now->fused_from().empty())) {
    std::cout << "no fusion rule matched a pattern containing it\n";
  }
  if (now) {
    const std::string k = kernel_of(fused, now);
    if (!k.empty()) std::cout << "kernel: " << k << "\n";
  }
  return 0;
}

}  // namespace

Action add_explain(CLI::App& app) {
  auto a = std::make_shared<ExplainArgs>();
  CLI::App* c = app.add_subcommand(
      "explain", "What fusion did with one node: the rule that fused it, or why none did");
  c->add_option("model", a->model, "ONNX model file")->required();
  c->add_option("node", a->node, "The node's name in the model (nnfuse info --graph lists them)")
      ->required();
  c->add_option("--fusion_switch_file,--fusion-switch-file", a->flags.switch_file,
                "Fusion switch file (CANN GE JSON, PassName:off lines, or rules JSON)");
  add_shape_flag(c, a->flags);
  return [a] { return explain(*a); };
}

}  // namespace nnfuse::cli
