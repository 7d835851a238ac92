// PlanCache: runs a model whose inputs have symbolic dims (batch, sequence, image size) at
// whatever shape its inputs have, on fast kernels. Each input-shape signature gets its own
// PlanSession, built by a factory that specializes the model to those shapes (every value static,
// fused and planned for them); at most `capacity` are kept, the least recently used evicted.
// The first run at a new signature pays for specializing; later runs cost what the
// specialized plan costs. Feeds are checked against the model's own declared inputs first,
// so a shape the model forbids is refused before anything is built.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace nnfuse {

class PlanCache {
 public:
  using Shapes = std::map<std::string, Dims>;
  using Factory = std::function<std::unique_ptr<PlanSession>(const Shapes&)>;

  PlanCache(std::vector<InputDecl> inputs, Factory make, size_t capacity);

  // The session for the feeds' shapes, built (and the oldest evicted past capacity) if new.
  PlanSession& session_for(const std::map<std::string, Tensor>& feeds);
  // The same, safe to call from many threads at once: the session stays alive for the caller
  // even when another thread's new shape evicts it meanwhile (builds are serialized).
  std::shared_ptr<PlanSession> acquire(const std::map<std::string, Tensor>& feeds);
  // The same for input shapes given directly (each input named; rank and fixed dims checked
  // against the declarations).
  PlanSession& session_for_shapes(const Shapes& shapes);
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds,
                          std::vector<StepTiming>* timings = nullptr);

  const std::vector<InputDecl>& inputs() const { return inputs_; }
  size_t size() const { return lru_.size(); }
  size_t capacity() const { return capacity_; }
  size_t builds() const { return builds_; }  // sessions built so far (misses)
  size_t hits() const { return hits_; }
  // Whether a session for these shapes is held now.
  bool holds(const Shapes& shapes) const { return index_.count(shapes) != 0; }

 private:
  std::vector<InputDecl> inputs_;
  Factory make_;
  size_t capacity_;
  size_t builds_ = 0, hits_ = 0;
  std::shared_ptr<PlanSession> find_or_build(const Shapes& shapes);

  std::mutex mu_;
  using Entry = std::pair<Shapes, std::shared_ptr<PlanSession>>;
  std::list<Entry> lru_;  // most recently used first
  std::map<Shapes, std::list<Entry>::iterator> index_;
};

// Whether any graph input has a dim that is not a fixed size.
bool has_dynamic_inputs(const std::vector<InputDecl>& inputs);

}  // namespace nnfuse
