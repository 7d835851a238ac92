#include "runtime/kernel_selection.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "ir/error.h"
#include "runtime/threads.h"

namespace nnfuse {

std::optional<KernelChoices::Choice> KernelChoices::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = chosen_.find(key);
  if (it == chosen_.end()) return std::nullopt;
  return it->second;
}

void KernelChoices::remember(const std::string& key, Choice c) {
  std::lock_guard<std::mutex> lock(mu_);
  chosen_[key] = std::move(c);
}

size_t KernelChoices::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chosen_.size();
}

size_t pick_measured(const std::vector<double>& best_us, const std::vector<double>& margins) {
  const size_t base = best_us.size() - 1;
  size_t pick = base;
  for (size_t i = 0; i < base; ++i) {
    if (best_us[i] < margins[i] * best_us[base] && best_us[i] < best_us[pick]) pick = i;
  }
  return pick;
}

namespace {

void append_attr(std::string& key, const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      key += std::to_string(a.f);
      break;
    case Attribute::Kind::kInt:
      key += std::to_string(a.i);
      break;
    case Attribute::Kind::kString:
      key += a.s;
      break;
    case Attribute::Kind::kFloats:
      for (float f : a.floats) key += std::to_string(f) + ",";
      break;
    case Attribute::Kind::kInts:
      key += dims_str(a.ints);
      break;
    case Attribute::Kind::kStrings:
      for (const std::string& s : a.strings) key += s + ",";
      break;
    case Attribute::Kind::kTensor:
    case Attribute::Kind::kGraph:
      key += attribute_kind_name(a.kind);
      break;
  }
}

// Timing runs of one candidate kernel on inputs of the node's shapes, types and layouts
// (constants as they are, the others filled with 0.5 and 0.25).
class TimedKernel {
 public:
  TimedKernel(Kernel& k, const NodeInfo& info) : k_(k) {
    const size_t n = info.node.num_inputs();
    owned_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!info.has_input(i)) {
        io_.inputs.push_back(nullptr);
      } else if (const Tensor* c = info.constant(i)) {
        io_.inputs.push_back(c);
      } else {
        Tensor t(info.input_dtype(i), *info.input_shape(i));
        if (t.dtype() == DType::kFloat32) {
          std::fill_n(t.data<float>(), t.numel(), i == 0 ? 0.5f : 0.25f);
        }
        if (i < info.input_layouts.size()) t.set_layout(info.input_layouts[i]);
        owned_.push_back(std::move(t));
        io_.inputs.push_back(&owned_.back());
      }
    }
    io_.outputs.resize(info.node.num_outputs());
    k_.run(io_);  // warms up
  }

  // One more run; best() is the fastest so far, in microseconds.
  void run() {
    const auto t0 = std::chrono::steady_clock::now();
    k_.run(io_);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    best_ = std::min(best_, us);
  }
  double best() const { return best_; }

 private:
  Kernel& k_;
  std::vector<Tensor> owned_;
  KernelIO io_;
  double best_ = std::numeric_limits<double>::infinity();
};

// Whether every input that is not a constant has a static shape: what timing runs need.
bool timeable(const NodeInfo& info) {
  for (size_t i = 0; i < info.node.num_inputs(); ++i) {
    if (info.has_input(i) && !info.constant(i) && !info.input_shape(i)) return false;
  }
  return true;
}

// One measurement at a time in the process, so that two plans built at once do not time their
// candidates against each other's work.
std::mutex& timing_mutex() {
  static std::mutex mu;
  return mu;
}

std::string ratio_note(double share, const char* baseline) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", share);
  return std::string("measured: ") + s + "x " + baseline;
}

}  // namespace

std::string measured_key(const NodeInfo& info,
                         const std::vector<const KernelFactory*>& candidates) {
  const Node& n = info.node;
  std::string key = n.domain() + "::" + n.op_type() + "|";
  for (const auto& [name, a] : n.attrs()) {
    key += name + "=";
    append_attr(key, a);
    key += ";";
  }
  key += "|";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!info.has_input(i)) {
      key += "-,";
      continue;
    }
    const Tensor* c = info.constant(i);
    key += dtype_name(c ? c->dtype() : info.input_dtype(i));
    if (c) {
      key += "const";
      key += dims_str(c->shape());
    } else {
      key += info.input(i)->shape().str();
    }
    if (i < info.input_layouts.size()) key += layout_name(info.input_layouts[i]);
    key += ",";
  }
  key += "|";
  for (size_t k = 0; k < n.num_outputs(); ++k) {
    key += n.output(k) ? n.output(k)->shape().str() : std::string("-");
    key += ",";
  }
  key += "|";
  key += std::to_string(info.num_threads);
  key += "|";
  for (const KernelFactory* f : candidates) {
    key += f->name;
    key += ",";
  }
  return key;
}

KernelSelection KernelSelector::select(const NodeInfo& info, const NodeInfo& plain) const {
  const std::vector<KernelFactory>& table = kernels_for(info.node.op_type());
  const bool already_plain = info.input_layouts == plain.input_layouts;
  for (size_t i = 0; i < table.size(); ++i) {
    const KernelFactory& f = table[i];
    if (reference_only_ && std::string(f.name) != "ref") continue;
    if (f.accepts(info)) return choose(table, i, info);
    if (!already_plain && f.accepts(plain)) {
      KernelSelection r = choose(table, i, plain);
      r.plain_inputs = true;
      return r;
    }
  }
  fail(ErrorKind::kUnsupported, info.node.describe(), ": no kernel accepts this node");
}

std::unique_ptr<Kernel> KernelSelector::create(const NodeInfo& info) const {
  const std::vector<KernelFactory>& table = kernels_for(info.node.op_type());
  for (size_t i = 0; i < table.size(); ++i) {
    if (std::string(table[i].name) == "ref") continue;
    if (table[i].accepts(info)) return choose(table, i, info).kernel;
  }
  return nullptr;
}

KernelSelection KernelSelector::choose(const std::vector<KernelFactory>& table, size_t first,
                                       const NodeInfo& info) const {
  const KernelFactory& f = table[first];
  if (!reference_only_ && f.measured && f.measured(info) && timeable(info)) {
    std::vector<const KernelFactory*> candidates = {&f};
    for (size_t j = first + 1; j < table.size(); ++j) {
      const KernelFactory& g = table[j];
      if (g.measured && g.accepts(info) && g.measured(info)) candidates.push_back(&g);
    }
    if (candidates.size() > 1) return measure(candidates, info);
  }
  KernelSelection r;
  r.factory = &f;
  r.kernel = f.create(info);
  return r;
}

KernelSelection KernelSelector::measure(const std::vector<const KernelFactory*>& candidates,
                                        const NodeInfo& info) const {
  const std::string key = measured_key(info, candidates);
  std::lock_guard<std::mutex> lock(choices_.mu_);
  KernelSelection r;
  if (auto it = choices_.chosen_.find(key); it != choices_.chosen_.end()) {
    for (const KernelFactory* f : candidates) {
      if (it->second.kernel == f->name) r.factory = f;
    }
    NNFUSE_CHECK(r.factory, "the remembered kernel ", it->second.kernel, " is no candidate");
    r.kernel = r.factory->create(info);
    r.note = it->second.note;
    return r;
  }
  std::lock_guard<std::mutex> timing(timing_mutex());
  // Built in table order; timed in turn, the baseline first.
  std::vector<std::unique_ptr<Kernel>> kernels;
  for (const KernelFactory* f : candidates) kernels.push_back(f->create(info));
  const size_t base = candidates.size() - 1;
  std::vector<size_t> order = {base};
  for (size_t i = base; i-- > 0;) order.push_back(i);
  ScopedThreads threads(info.num_threads);
  std::vector<std::unique_ptr<TimedKernel>> timed(candidates.size());
  for (size_t i : order) timed[i] = std::make_unique<TimedKernel>(*kernels[i], info);
  for (int round = 0; round < kTimingRounds; ++round) {
    for (size_t i : order) timed[i]->run();
  }
  std::vector<double> best, margins;
  for (size_t i = 0; i < candidates.size(); ++i) {
    best.push_back(timed[i]->best());
    margins.push_back(candidates[i]->measured_margin);
  }
  timed.clear();
  const size_t pick = pick_measured(best, margins);
  r.factory = candidates[pick];
  r.kernel = std::move(kernels[pick]);
  // Its timing runs' own scratch is freed: the plan gives its runs the shared scratch.
  r.kernel->release_own_scratch();
  r.note = pick == base ? "measured" : ratio_note(best[pick] / best[base], candidates[base]->name);
  choices_.chosen_[key] = {r.factory->name, r.note};
  return r;
}

}  // namespace nnfuse
