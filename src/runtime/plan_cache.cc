#include "runtime/plan_cache.h"

#include "ir/error.h"

namespace nnfuse {

PlanCache::PlanCache(std::vector<InputDecl> inputs, Factory make, size_t capacity)
    : inputs_(std::move(inputs)), make_(std::move(make)), capacity_(capacity) {
  if (capacity_ == 0) fail(ErrorKind::kInvalidArgument, "a plan cache needs room for one plan");
}

PlanSession& PlanCache::session_for(const std::map<std::string, Tensor>& feeds) {
  return *acquire(feeds);
}

std::shared_ptr<PlanSession> PlanCache::acquire(const std::map<std::string, Tensor>& feeds) {
  check_feeds(inputs_, feeds);
  Shapes key;
  for (const InputDecl& d : inputs_) key[d.name] = feeds.at(d.name).shape();
  return find_or_build(key);
}

PlanSession& PlanCache::session_for_shapes(const Shapes& key) { return *find_or_build(key); }

std::shared_ptr<PlanSession> PlanCache::find_or_build(const Shapes& key) {
  for (const InputDecl& d : inputs_) {
    auto it = key.find(d.name);
    if (it == key.end()) fail(ErrorKind::kInvalidInput, "no shape for input '", d.name, "'");
    bool ok = !d.shape.has_rank || d.shape.dims.size() == it->second.size();
    for (size_t i = 0; ok && d.shape.has_rank && i < d.shape.dims.size(); ++i) {
      ok = !d.shape.dims[i].known() || d.shape.dims[i].value == it->second[i];
    }
    if (!ok) {
      fail(ErrorKind::kInvalidInput, "input '", d.name, "' has shape ", dims_str(it->second),
           "; the model expects ", d.shape.str());
    }
  }
  if (key.size() != inputs_.size()) {
    fail(ErrorKind::kInvalidInput, "shapes are given for ", key.size(), " inputs; the model has ",
         inputs_.size());
  }
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front().second;
  }
  std::shared_ptr<PlanSession> s = make_(key);
  if (!s) fail(ErrorKind::kInternal, "the plan cache's factory built no session");
  ++builds_;
  lru_.emplace_front(key, std::move(s));
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return lru_.front().second;
}

std::vector<Tensor> PlanCache::run(const std::map<std::string, Tensor>& feeds,
                                   std::vector<StepTiming>* timings) {
  return session_for(feeds).run(feeds, timings);
}

bool has_dynamic_inputs(const std::vector<InputDecl>& inputs) {
  for (const InputDecl& d : inputs) {
    if (!d.shape.fully_known()) return true;
  }
  return false;
}

}  // namespace nnfuse
