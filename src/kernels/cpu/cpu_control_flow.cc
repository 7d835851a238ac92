// If, Loop and Scan on kernels planned once: each subgraph's nodes get their kernels when the
// node's kernel is made (the plan's choice for each body node, NodeInfo::chooser: the fast
// kernels that accept the body's shapes, those that take rows or sizes known only at run time
// among them, the reference kernel for the rest), its Constant nodes are computed then, and
// every iteration runs those kernels in order: nothing is chosen, built or prepacked per
// iteration or per branch taken. The node's semantics (trips, carried values, scan slices and
// stacks) are the reference kernels' (kernels/ref/control_flow.h). A body that holds another
// If, Loop or Scan plans it the same way, at any depth.
#include <atomic>
#include <map>
#include <unordered_map>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/layout.h"
#include "kernels/ref/control_flow.h"

namespace nnfuse::cpu {
namespace {

std::atomic<size_t> g_bodies_planned{0};

// One subgraph with a kernel per node, made once.
class PlannedBody {
 public:
  PlannedBody(const Graph& g, const NodeInfo& owner) : g_(g) {
    ++g_bodies_planned;
    // The outer values it captures that are constants (a scripted loop's weights) are constants
    // of the body too, for its kernels to prepack.
    const size_t first_capture = owner.node.num_inputs() - g.num_captures;
    for (size_t c = 0; c < g.num_captures; ++c) {
      const size_t body_input = g.inputs().size() - g.num_captures + c;
      if (const Tensor* t = owner.constant(first_capture + c)) folded_[g.inputs()[body_input]] = *t;
    }
    for (const Node* n : g.nodes()) {
      const int64_t opset = g.opset(n->domain());
      if (n->is(Op::kConstant) && n->num_outputs() == 1 && n->output(0)) {
        KernelIO io;
        io.outputs.resize(1);
        run_reference(*n, opset, io);
        folded_[n->output(0)] = std::move(io.outputs[0]);
        continue;
      }
      std::vector<const Tensor*> consts;
      for (const Value* v : n->inputs()) {
        auto it = v ? folded_.find(v) : folded_.end();
        consts.push_back(it != folded_.end()     ? &it->second
                         : v && v->is_constant() ? &v->constant()
                                                 : nullptr);
      }
      Step s;
      s.node = n;
      s.opset = opset;
      const NodeInfo info{*n,
                          opset,
                          std::vector<Layout>(n->num_inputs(), Layout::kPlain),
                          owner.num_threads,
                          consts,
                          owner.chooser};
      s.kernel = owner.chooser ? owner.chooser->create(info) : nullptr;
      if (!s.kernel) {
        reference_nodes_.push_back({n, opset});
      } else {
        for (const BodyNode& b : s.kernel->reference_body_nodes()) reference_nodes_.push_back(b);
      }
      steps_.push_back(std::move(s));
    }
    // Each value's last reader, so that a body's intermediates are let go of as it runs.
    std::unordered_map<const Value*, size_t> last;
    for (size_t i = 0; i < steps_.size(); ++i) {
      for (const Value* v : steps_[i].node->inputs()) {
        if (v) last[v] = i;
      }
    }
    for (const Value* v : g.outputs()) last.erase(v);
    for (const Value* v : g.inputs()) last.erase(v);
    for (const auto& [v, i] : last) steps_[i].frees.push_back(v);
  }

  std::vector<Tensor> run(const std::vector<const Tensor*>& inputs, const Node& owner) const {
    check_body_inputs(g_, inputs, owner);
    std::unordered_map<const Value*, Tensor> vals;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]) vals[g_.inputs()[i]] = *inputs[i];
    }
    auto get = [&](const Value* v) -> const Tensor* {
      if (!v) return nullptr;
      if (auto it = vals.find(v); it != vals.end()) return &it->second;
      if (auto it = folded_.find(v); it != folded_.end()) return &it->second;
      if (v->is_constant()) return &v->constant();
      fail(ErrorKind::kRuntime, owner.describe(), ": subgraph value '", v->name(),
           "' has no value (an optional input not given?)");
    };
    for (const Step& s : steps_) {
      KernelIO io;
      for (const Value* v : s.node->inputs()) io.inputs.push_back(get(v));
      io.outputs.resize(s.node->num_outputs());
      if (s.kernel) {
        s.kernel->run(io);
      } else {
        run_reference(*s.node, s.opset, io);
      }
      for (size_t k = 0; k < s.node->num_outputs(); ++k) {
        const Value* o = s.node->output(k);
        if (!o || !io.outputs[k].defined()) continue;
        Tensor& t = io.outputs[k];
        vals[o] = t.layout() == Layout::kPlain ? std::move(t) : to_layout(t, Layout::kPlain);
      }
      for (const Value* v : s.frees) vals.erase(v);
    }
    std::vector<Tensor> out;
    for (const Value* v : g_.outputs()) out.push_back(*get(v));
    return out;
  }

  const std::vector<BodyNode>& reference_nodes() const { return reference_nodes_; }

 private:
  struct Step {
    const Node* node = nullptr;
    int64_t opset = 0;
    std::unique_ptr<Kernel> kernel;  // null: the reference kernel
    std::vector<const Value*> frees;
  };
  const Graph& g_;
  std::map<const Value*, Tensor> folded_;
  std::vector<Step> steps_;
  std::vector<BodyNode> reference_nodes_;
};

class ControlFlowKernel : public Kernel {
 public:
  explicit ControlFlowKernel(const NodeInfo& info) : node_(info.node), opset_(info.opset) {
    for (const auto& [name, a] : info.node.attrs()) {
      if (a.kind != Attribute::Kind::kGraph || !a.g) continue;
      auto body = std::make_unique<PlannedBody>(*a.g, info);
      for (const BodyNode& b : body->reference_nodes()) reference_nodes_.push_back(b);
      bodies_[a.g.get()] = std::move(body);
    }
  }

  void run(KernelIO& io) override {
    KernelContext ctx{node_, opset_, io.inputs, std::vector<Tensor>(node_.num_outputs())};
    run_control_flow(ctx, [this](const Graph& body, const std::vector<const Tensor*>& inputs,
                                 const Node& owner) {
      auto it = bodies_.find(&body);
      NNFUSE_CHECK(it != bodies_.end(), owner.describe(), ": a subgraph that was not planned");
      return it->second->run(inputs, owner);
    });
    for (size_t k = 0; k < io.outputs.size(); ++k) {
      Tensor& got = ctx.outputs[k];
      if (!got.defined()) continue;
      if (io.outputs[k].defined()) {
        Tensor& dst = io.output(k, got.dtype(), got.shape(), io.outputs[k].layout());
        convert_layout(got, dst);
      } else {
        io.outputs[k] = std::move(got);
      }
    }
  }

  std::vector<BodyNode> reference_body_nodes() const override { return reference_nodes_; }

 private:
  const Node& node_;
  int64_t opset_;
  std::map<const Graph*, std::unique_ptr<PlannedBody>> bodies_;
  std::vector<BodyNode> reference_nodes_;
};

std::string control_flow_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.is(Op::kIf) && !n.is(Op::kLoop) && !n.is(Op::kScan)) return "not If, Loop or Scan";
  if (!info.chooser) return "no kernel chooser to plan its subgraphs with";
  if (!info.all_inputs_in(Layout::kPlain)) return "an input that is not plain";
  return control_flow_support(n, info.opset);
}

std::unique_ptr<Kernel> control_flow_create(const NodeInfo& info) {
  return std::make_unique<ControlFlowKernel>(info);
}

}  // namespace

void append_control_flow_kernels(FactoryTable& t) {
  for (const char* op : {"If", "Loop", "Scan"}) {
    t.emplace_back(op,
                   KernelFactory{"cpu.control_flow", accepts_unless_declined<control_flow_declines>,
                                 nullptr, control_flow_create, nullptr, control_flow_declines});
  }
}

}  // namespace nnfuse::cpu

namespace nnfuse {
size_t subgraph_plans_made() { return cpu::g_bodies_planned.load(); }
}  // namespace nnfuse
