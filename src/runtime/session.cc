#include "runtime/session.h"

#include <chrono>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

std::vector<UnsupportedNode> find_unsupported(const Graph& g) {
  std::vector<UnsupportedNode> r;
  for (const Node* n : g.nodes()) {
    std::string why = ref_unsupported_reason(*n, g.opset(n->domain()));
    if (!why.empty()) r.push_back({n->name(), n->op_type(), why});
  }
  return r;
}

Session::Session(std::unique_ptr<Graph> graph) : graph_(std::move(graph)) {
  verify_graph(*graph_);
  auto bad = find_unsupported(*graph_);
  if (!bad.empty()) {
    std::map<std::string, std::vector<std::string>> by_op;
    for (auto& u : bad) by_op[u.op_type + " (" + u.reason + ")"].push_back(u.node);
    std::string msg =
        std::to_string(bad.size()) + " unsupported node" + (bad.size() == 1 ? "" : "s") + ":";
    for (auto& [op, nodes] : by_op) {
      msg += " " + op + ": ";
      for (size_t i = 0; i < nodes.size() && i < 5; ++i) msg += (i ? ", " : "") + nodes[i];
      if (nodes.size() > 5) msg += " and " + std::to_string(nodes.size() - 5) + " more";
      msg += ";";
    }
    msg.pop_back();
    throw Error(ErrorKind::kUnsupported, msg);
  }
  order_ = graph_->nodes();
  // Liveness: a value dies after its last reader, unless it is a graph output or constant.
  std::unordered_map<const Value*, size_t> last;
  for (size_t i = 0; i < order_.size(); ++i) {
    for (const Value* v : order_[i]->inputs()) {
      if (v) last[v] = i;
    }
    for (const Value* v : order_[i]->outputs()) {
      if (v && !last.count(v)) last[v] = i;  // produced but never read
    }
  }
  frees_.resize(order_.size());
  for (auto& [v, i] : last) {
    if (!v->is_graph_output() && !v->is_constant() && !v->is_graph_input()) frees_[i].push_back(v);
  }
}

void Session::check_feeds(const std::map<std::string, Tensor>& feeds) const {
  std::set<std::string> expected;
  std::map<std::string, int64_t> symbols;  // symbolic dim -> size, consistent across inputs
  for (const Value* v : graph_->runtime_inputs()) {
    expected.insert(v->name());
    auto it = feeds.find(v->name());
    std::string want = dtype_name(v->dtype()) + v->shape().str();
    if (it == feeds.end()) {
      fail(ErrorKind::kInvalidInput, "missing input '", v->name(), "' (", want, ")");
    }
    const Tensor& t = it->second;
    if (t.dtype() != v->dtype()) {
      fail(ErrorKind::kInvalidInput, "input '", v->name(), "' has type ", dtype_name(t.dtype()),
           ", the model expects ", want);
    }
    const Shape& s = v->shape();
    if (!s.has_rank) continue;
    bool ok = static_cast<size_t>(t.rank()) == s.dims.size();
    for (size_t i = 0; ok && i < s.dims.size(); ++i) {
      const Dim& d = s.dims[i];
      if (d.known()) {
        ok = d.value == t.dim(static_cast<int64_t>(i));
      } else if (!d.param.empty()) {
        auto [sym, fresh] = symbols.emplace(d.param, t.dim(static_cast<int64_t>(i)));
        ok = fresh || sym->second == t.dim(static_cast<int64_t>(i));
      }
    }
    if (!ok) {
      fail(ErrorKind::kInvalidInput, "input '", v->name(), "' has shape ", dims_str(t.shape()),
           ", the model expects ", want);
    }
  }
  for (auto& [name, t] : feeds) {
    if (!expected.count(name)) {
      std::string names;
      for (auto& e : expected) names += (names.empty() ? "" : ", ") + e;
      fail(ErrorKind::kInvalidInput, "the model has no input named '", name, "' (inputs: ", names,
           ")");
    }
  }
}

namespace {

void check_output(const Node& n, const Value* v, const Tensor& t) {
  if (!t.defined()) {
    fail(ErrorKind::kInternal, n.describe(), " did not produce output '", v->name(), "'");
  }
  if (v->dtype() != DType::kUndefined && v->dtype() != t.dtype()) {
    fail(ErrorKind::kRuntime, n.describe(), " produced ", dtype_name(t.dtype()), " for '",
         v->name(), "', the model declares ", dtype_name(v->dtype()));
  }
  const Shape& s = v->shape();
  if (!s.has_rank) return;
  bool ok = static_cast<size_t>(t.rank()) == s.dims.size();
  for (size_t i = 0; ok && i < s.dims.size(); ++i) {
    ok = !s.dims[i].known() || s.dims[i].value == t.dim(static_cast<int64_t>(i));
  }
  if (!ok) {
    fail(ErrorKind::kRuntime, n.describe(), " produced shape ", dims_str(t.shape()), " for '",
         v->name(), "', the model declares ", s.str());
  }
}

}  // namespace

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& feeds,
                                 std::vector<NodeTiming>* timings) const {
  check_feeds(feeds);
  std::unordered_map<const Value*, Tensor> env;
  for (const Value* v : graph_->runtime_inputs()) env[v] = feeds.at(v->name());
  auto lookup = [&](const Value* v) -> const Tensor* {
    if (!v) return nullptr;
    if (v->is_constant()) return &v->constant();
    auto it = env.find(v);
    if (it == env.end()) {
      fail(ErrorKind::kInternal, "value '", v->name(), "' is read before it is computed");
    }
    return &it->second;
  };
  if (timings) timings->clear();
  for (size_t i = 0; i < order_.size(); ++i) {
    const Node& n = *order_[i];
    KernelContext ctx{n, graph_->opset(n.domain()), {}, std::vector<Tensor>(n.num_outputs())};
    for (const Value* v : n.inputs()) ctx.inputs.push_back(lookup(v));
    auto t0 = std::chrono::steady_clock::now();
    try {
      find_ref_kernel(n.op_type())->run(ctx);
    } catch (const Error& e) {
      std::string msg = e.what();
      // Kernel messages start with the node's description; add it where they do not.
      if (msg.find(n.name()) == std::string::npos) msg = n.describe() + ": " + msg;
      throw Error(e.kind(), msg);
    } catch (const std::bad_alloc&) {
      fail(ErrorKind::kRuntime, n.describe(), ": out of memory");
    }
    if (timings) {
      auto t1 = std::chrono::steady_clock::now();
      timings->push_back({&n, std::chrono::duration<double, std::milli>(t1 - t0).count()});
    }
    for (size_t k = 0; k < n.num_outputs(); ++k) {
      const Value* v = n.output(k);
      if (!v) continue;
      check_output(n, v, ctx.outputs[k]);
      env[v] = std::move(ctx.outputs[k]);
    }
    for (const Value* v : frees_[i]) env.erase(v);
  }
  std::vector<Tensor> outs;
  for (const Value* v : graph_->outputs()) outs.push_back(*lookup(v));
  return outs;
}

}  // namespace nnfuse
