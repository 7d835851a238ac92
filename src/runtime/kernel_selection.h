// Kernel selection, the step of the plan that gives a node its kernel. The first factory of the
// op's ordered table (kernels/kernel.h) that accepts the node as its inputs arrive wins, else the
// first that accepts it with every input plain (the plan then reorders them). Where the fastest
// of the kernels that accept a node depends on the machine (KernelFactory::measured: a conv's
// oneDNN direct and Winograd algorithms, the project's own Winograd and depthwise kernels), the
// candidates are built and timed on the node's shapes when the plan is built, and the fastest
// is kept, each under its margin of the baseline's time (KernelFactory::measured_margin). The
// choice is remembered per geometry in a KernelChoices, so a network's repeated layers measure
// once.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace nnfuse {

// Measured choices, per node geometry: the op and its attributes, the inputs' shapes, types,
// layouts and which are constants, the outputs' shapes, the thread count and the candidates.
// Whoever plans owns one: a plan makes its own unless PlanOptions gives it one to share (the
// sessions of one compiled model share theirs, so its plans agree and each geometry is measured
// once). Safe to use from several plans at once.
class KernelChoices {
 public:
  struct Choice {
    std::string kernel;  // the factory's name
    std::string note;    // how it was chosen (KernelSelection::note)
  };

  std::optional<Choice> find(const std::string& key) const;
  void remember(const std::string& key, Choice c);
  size_t size() const;

 private:
  friend class KernelSelector;
  mutable std::mutex mu_;  // also held while a geometry is measured, so it is measured once
  std::map<std::string, Choice> chosen_;
};

struct KernelSelection {
  const KernelFactory* factory = nullptr;
  bool plain_inputs = false;  // accepted with every input plain: the plan reorders them
  std::unique_ptr<Kernel> kernel;
  // "" where the table's order chose; for a measured choice "measured", and where a kernel
  // other than the baseline won, its share of the baseline's time: "measured: 0.64x
  // onednn.fused_conv".
  std::string note;
};

// Rounds of timing runs a measurement makes, each candidate once per round in turn, so a burst
// of other work on the machine slows every candidate alike.
inline constexpr int kTimingRounds = 5;

// The candidate a measurement keeps: of `best_us` (each candidate's best time, in table order,
// the last the baseline) the fastest of the baseline and of the others whose time is under their
// `margins` share of the baseline's.
size_t pick_measured(const std::vector<double>& best_us, const std::vector<double>& margins);

// The key under which `info`'s measured choice among `candidates` is remembered.
std::string measured_key(const NodeInfo& info, const std::vector<const KernelFactory*>& candidates);

class KernelSelector final : public KernelChooser {
 public:
  // `reference_only`: only the reference kernels (the oracle), never measured.
  explicit KernelSelector(KernelChoices& choices, bool reference_only = false)
      : choices_(choices), reference_only_(reference_only) {}

  // The kernel for `info`'s node, made for its inputs as they arrive (`info`) or all plain
  // (`plain`, the same node). Throws kUnsupported when no kernel accepts it either way.
  KernelSelection select(const NodeInfo& info, const NodeInfo& plain) const;

  // KernelChooser: the fast kernel for `info` as it is, or nullptr.
  std::unique_ptr<Kernel> create(const NodeInfo& info) const override;

 private:
  // The kernel of table[first] for `info`, measured against the later measured candidates
  // that accept it where table[first] is itself measured for it.
  KernelSelection choose(const std::vector<KernelFactory>& table, size_t first,
                         const NodeInfo& info) const;
  KernelSelection measure(const std::vector<const KernelFactory*>& candidates,
                          const NodeInfo& info) const;

  KernelChoices& choices_;
  bool reference_only_;
};

}  // namespace nnfuse
