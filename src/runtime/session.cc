#include "runtime/session.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "ir/error.h"
#include "kernels/cpu/layout.h"
#include "kernels/ref/ref_kernels.h"
#include "runtime/denormals.h"
#include "runtime/threads.h"

namespace nnfuse {

std::vector<UnsupportedNode> find_unsupported(const Graph& g) {
  std::vector<UnsupportedNode> r;
  for (const Node* n : g.nodes()) {
    std::string why = ref_unsupported_reason(*n, g.opset(n->domain()));
    if (!why.empty()) r.push_back({n->name(), n->op_type(), why});
  }
  return r;
}

PlanSession::PlanSession(std::unique_ptr<Graph> graph, const PlanOptions& opts) {
  Graph* owned = graph.get();
  graph_ = std::move(graph);
  init(opts, owned);
}

PlanSession::PlanSession(std::shared_ptr<const Graph> graph, const PlanOptions& opts)
    : graph_(std::move(graph)) {
  init(opts, nullptr);
}

void PlanSession::init(const PlanOptions& opts, Graph* owned) {
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
  inputs_ = input_decls(*graph_);
  // A session that owns its graph holds the weights its kernels prepacked once, by them.
  PlanOptions plan_opts = opts;
  plan_opts.release_weights_of = owned;
  plan_ = std::make_unique<ExecutionPlan>(*graph_, plan_opts);
  if (opts.strict) refuse_compute_fallbacks(plan_->reference_fallbacks());
  if (opts.warn_fallbacks) warn_reference_fallbacks(plan_->reference_fallbacks());
  // 64-byte aligned arena: the planner's offsets are multiples of 64. The kernels' shared
  // scratch follows the activations.
  scratch_offset_ = align_up(plan_->peak_activation_bytes(), kArenaAlignment);
  arena_bytes_ = scratch_offset_ + plan_->scratch_bytes();
  threads_ = plan_->num_threads();
  release_arena(acquire_arena());  // the first run's, allocated now
}

namespace {

size_t nbytes_of(const PlanValue& v) {
  size_t n = dtype_size(v.dtype);
  for (int64_t d : v.shape) n *= static_cast<size_t>(std::max<int64_t>(d, 0));
  return n;
}

// "2.5 TiB", "512 MiB", "100 bytes".
std::string bytes_str(size_t b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return s;
}

}  // namespace

std::shared_ptr<std::byte[]> PlanSession::acquire_arena() {
  {
    std::lock_guard<std::mutex> lock(arenas_mu_);
    if (!free_arenas_.empty()) {
      std::shared_ptr<std::byte[]> a = std::move(free_arenas_.back());
      free_arenas_.pop_back();
      return a;
    }
    ++num_arenas_;
  }
  try {
    return aligned_bytes(arena_bytes_ + kArenaAlignment, kArenaAlignment);
  } catch (const std::bad_alloc&) {
    std::lock_guard<std::mutex> lock(arenas_mu_);
    --num_arenas_;
    // Name the largest planned value: usually the one whose shape is the surprise.
    const PlanValue* big = nullptr;
    for (const PlanValue& v : plan_->values()) {
      if (v.buffer < 0 || !v.static_shape) continue;
      if (!big || nbytes_of(v) > nbytes_of(*big)) big = &v;
    }
    fail(ErrorKind::kRuntime, "out of memory: the activations need ", bytes_str(arena_bytes_),
         big ? detail::cat(", the largest '", big->name, "' ", dtype_name(big->dtype),
                           dims_str(big->shape), " ", bytes_str(nbytes_of(*big)))
             : std::string());
  }
}

void PlanSession::release_arena(std::shared_ptr<std::byte[]> arena) {
  std::lock_guard<std::mutex> lock(arenas_mu_);
  free_arenas_.push_back(std::move(arena));
}

size_t PlanSession::num_arenas() const {
  std::lock_guard<std::mutex> lock(arenas_mu_);
  return num_arenas_;
}

std::vector<InputDecl> input_decls(const Graph& g) {
  std::vector<InputDecl> r;
  for (const Value* v : g.runtime_inputs()) r.push_back({v->name(), v->dtype(), v->shape()});
  return r;
}

void check_feeds(const std::vector<InputDecl>& inputs, const std::map<std::string, Tensor>& feeds) {
  std::set<std::string> expected;
  std::map<std::string, int64_t> symbols;  // symbolic dim -> size, consistent across inputs
  for (const InputDecl& v : inputs) {
    expected.insert(v.name);
    auto it = feeds.find(v.name);
    std::string want = dtype_name(v.dtype) + v.shape.str();
    if (it == feeds.end()) {
      fail(ErrorKind::kInvalidInput, "missing input '", v.name, "' (", want, ")");
    }
    const Tensor& t = it->second;
    if (t.dtype() != v.dtype) {
      fail(ErrorKind::kInvalidInput, "input '", v.name, "' has type ", dtype_name(t.dtype()),
           ", the model expects ", want);
    }
    // Refused here, before any kernel runs: a rank or a fixed dim other than the declared
    // one. A symbolic dim takes any size, the same one wherever its name appears.
    const Shape& s = v.shape;
    if (!s.has_rank) continue;
    std::string why;
    if (static_cast<size_t>(t.rank()) != s.dims.size()) {
      why = " (rank " + std::to_string(t.rank()) + ", not " + std::to_string(s.dims.size()) + ")";
    }
    for (size_t i = 0; why.empty() && i < s.dims.size(); ++i) {
      const Dim& d = s.dims[i];
      const int64_t got = t.dim(static_cast<int64_t>(i));
      if (d.known()) {
        if (d.value != got) why = " (dim " + std::to_string(i) + ")";
      } else if (!d.param.empty()) {
        auto [sym, fresh] = symbols.emplace(d.param, got);
        if (!fresh && sym->second != got) {
          why = " (" + d.param + " is " + std::to_string(sym->second) + " in an earlier input)";
        }
      }
    }
    if (!why.empty()) {
      fail(ErrorKind::kInvalidInput, "input '", v.name, "' has shape ", dims_str(t.shape()),
           "; the model expects ", s.str(), why);
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

std::vector<Tensor> PlanSession::run(const std::map<std::string, Tensor>& feeds,
                                     std::vector<StepTiming>* timings) {
  check_feeds(inputs_, feeds);
  const ExecutionPlan& plan = *plan_;
  // The run's OpenMP regions take the plan's thread count, on whichever thread runs it: OpenMP's
  // count is the calling thread's own, set for this run and restored after (runtime/threads.h).
  // Set first: the denormal mode goes to each thread of a region of that many, the threads the
  // kernels then run on.
  const ScopedThreads threads(threads_);
  ScopedFlushDenormals ftz(plan.options().flush_denormals && !plan.options().reference_only);
  const auto& values = plan.values();
  std::vector<Tensor> env(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].constant) {
      env[i] = values[i].folded.defined() ? values[i].folded : values[i].value->constant();
    }
  }
  for (int id : plan.input_ids()) env[id] = feeds.at(values[id].name);
  // This run's arena, back to the pool when the run ends (returned or thrown).
  struct ArenaLease {
    PlanSession* session;
    std::shared_ptr<std::byte[]> arena;
    ~ArenaLease() { session->release_arena(std::move(arena)); }
  } lease{this, acquire_arena()};
  std::byte* const arena_base = lease.arena.get();

  // Storage for a value: its slot in the arena (shared with the group's root, at the offset of
  // its part for a Concat's input in place), or none.
  auto planned = [&](int id) -> Tensor {
    int r = id;
    size_t offset = 0;
    while (values[r].alias_of >= 0) {
      offset += values[r].slice_offset;
      r = values[r].alias_of;
    }
    const PlanValue& rv = values[r];
    if (rv.buffer < 0) return {};
    const PlanValue& v = values[id];
    return Tensor::over(lease.arena, plan.memory().offsets[rv.buffer] + offset, v.dtype, v.shape,
                        v.layout);
  };
  auto t_start = std::chrono::steady_clock::now();
  if (timings) timings->clear();
  const auto& steps = plan.steps();
  for (size_t si = 0; si < steps.size(); ++si) {
    const PlanStep& st = steps[si];
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (st.assembled) {
        // A Concat in place: its inputs' kernels wrote the output's storage.
        Tensor out = planned(st.outputs[0]);
        NNFUSE_CHECK(out.defined(), st.node->describe(), ": the Concat in place has no storage");
        check_output(*st.node, values[st.outputs[0]].value, out);
        env[st.outputs[0]] = std::move(out);
      } else if (st.kind == PlanStep::Kind::kView) {
        const PlanValue& ov = values[st.outputs[0]];
        const Tensor& in = env[st.inputs[0]];
        if (!ov.static_shape) {
          // Dims known only now (views of values of run-time shape): the input's data under
          // the dims the op gives for these inputs.
          KernelContext ctx{*st.node, 0, {}, {}};
          for (int id : st.inputs) ctx.inputs.push_back(id >= 0 ? &env[id] : nullptr);
          Tensor out = in.reshaped(view_output_dims(ctx));
          check_output(*st.node, ov.value, out);
          env[st.outputs[0]] = std::move(out);
        } else {
          env[st.outputs[0]] = in.layout() == Layout::kPlain && ov.layout == Layout::kPlain
                                   ? in.reshaped(ov.shape)
                                   : in.relaid(ov.shape, ov.layout);
        }
      } else if (st.kind == PlanStep::Kind::kReorder) {
        const Tensor& src = env[st.inputs[0]];
        Tensor dst = planned(st.outputs[0]);
        if (!dst.defined()) dst = Tensor(src.dtype(), src.shape());
        dst.set_layout(values[st.outputs[0]].layout);
        convert_layout(src, dst);
        env[st.outputs[0]] = std::move(dst);
      } else {
        KernelIO io;
        for (int id : st.inputs) io.inputs.push_back(id >= 0 ? &env[id] : nullptr);
        for (int id : st.outputs) io.outputs.push_back(id >= 0 ? planned(id) : Tensor());
        if (st.kernel->scratch_bytes() > 0) io.scratch = arena_base + scratch_offset_;
        st.kernel->run(io);
        for (size_t k = 0; k < st.outputs.size(); ++k) {
          int id = st.outputs[k];
          if (id < 0) continue;
          check_output(*st.node, values[id].value, io.outputs[k]);
          env[id] = std::move(io.outputs[k]);
        }
      }
    } catch (const Error& e) {
      std::string msg = e.what();
      // Kernel messages start with the node's description; add it where they do not.
      if (st.node && msg.find(st.node->name()) == std::string::npos) {
        msg = st.node->describe() + ": " + msg;
      }
      throw Error(e.kind(), msg);
    } catch (const std::bad_alloc&) {
      std::string outs;
      for (int id : st.outputs) {
        if (id < 0 || !values[id].static_shape) continue;
        outs += detail::cat(outs.empty() ? " (its outputs: '" : ", '", values[id].name, "' ",
                            dtype_name(values[id].dtype), dims_str(values[id].shape), " ",
                            bytes_str(nbytes_of(values[id])));
      }
      fail(ErrorKind::kRuntime, st.node ? st.node->describe() : std::string("output"),
           ": out of memory", outs.empty() ? "" : outs + ")");
    }
    if (timings) {
      auto t1 = std::chrono::steady_clock::now();
      timings->push_back({si, std::chrono::duration<double, std::milli>(t0 - t_start).count(),
                          std::chrono::duration<double, std::milli>(t1 - t0).count(),
                          omp_get_max_threads()});
    }
    for (int id : st.frees) env[id] = Tensor();
  }
  std::vector<Tensor> outs;
  for (int id : plan.output_ids()) outs.push_back(env[id]);
  return outs;
}

}  // namespace nnfuse
