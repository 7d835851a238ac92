// The interface between the runtime's execution plan and the kernels that run nodes.
//
// At plan time the runtime asks each kernel factory for an op, in table order (fastest first,
// the reference kernel last), whether it accepts a node given what is known statically
// (NodeInfo: shapes, dtypes, constant inputs, the layouts inputs arrive in). The first that
// accepts is created once (prepacking weights then) and run for every inference.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace nnfuse {

class KernelChooser;

// What a kernel factory may inspect at plan time.
struct NodeInfo {
  const Node& node;
  int64_t opset = 0;
  std::vector<Layout> input_layouts;  // one per input; kPlain for omitted inputs
  // The plan's thread count. A kernel is made with it and runs with it as the calling thread's
  // OpenMP count, which the plan sets for each run (runtime/threads.h): its parallel regions and
  // oneDNN's primitives take that.
  int num_threads = 1;
  // Per input, its value when known at plan time (initializers and Constant nodes); when
  // empty, initializers alone are known.
  std::vector<const Tensor*> input_constants = {};
  // How the plan chooses kernels, for a kernel made of another node's kernel; may be null.
  const KernelChooser* chooser = nullptr;

  const Value* input(size_t i) const { return node.input(i); }
  bool has_input(size_t i) const { return node.input(i) != nullptr; }
  DType input_dtype(size_t i) const;
  // Static shape of input/output i when fully known.
  std::optional<Dims> input_shape(size_t i) const;
  std::optional<Dims> output_shape(size_t i) const;
  // The constant tensor of input i, or nullptr when it is not a constant.
  const Tensor* constant(size_t i) const;
  // True when every present input arrives in `l`.
  bool all_inputs_in(Layout l) const;
};

// Run-time arguments. Outputs planned by the memory planner arrive defined (storage in the
// arena, shape and layout set); others arrive undefined and the kernel allocates them.
struct KernelIO {
  std::vector<const Tensor*> inputs;  // nullptr for omitted inputs
  std::vector<Tensor> outputs;
  // Transient working memory of at least the kernel's scratch_bytes(), 64-byte aligned, valid
  // for this run only: one region every kernel of a plan shares (so it stays in cache from one
  // kernel to the next), or nullptr, and then the kernel uses a buffer of its own.
  std::byte* scratch = nullptr;

  const Tensor& in(size_t i) const { return *inputs[i]; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  // Returns output k with the given dtype, shape and layout: the planned tensor (checked to
  // match) or a freshly allocated one. Either holds arbitrary values: the kernel writes every
  // element.
  Tensor& output(size_t k, DType dtype, const Dims& shape, Layout layout = Layout::kPlain);
};

// A node of a subgraph (an If, Loop or Scan body) with the opset of its graph.
struct BodyNode {
  const Node* node = nullptr;
  int64_t opset = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelIO& io) = 0;
  // False for a constant input the kernel copied (prepacked) when it was created and never
  // reads when it runs: the runtime then need not keep the original.
  virtual bool reads_input(size_t /*i*/) const { return true; }
  // Bytes of KernelIO::scratch the kernel uses while it runs (a multiple of 64).
  virtual size_t scratch_bytes() const { return 0; }
  // Concat in place: asks the kernel to store output k as rows of its last stored dim (a
  // channels-last output's pixels) `pitch` elements apart: its part of a wider buffer, which
  // the planned output tensor then starts (and which the kernel must not touch outside its
  // rows). True when the kernel will, on every run from now on, into planned storage only;
  // it may grow scratch_bytes(). Asked at plan time, before scratch_bytes().
  virtual bool write_output_rows(size_t /*k*/, int64_t /*pitch*/) { return false; }
  // Frees the buffer a run without KernelIO::scratch allocated for itself (a timing run of the
  // measured selection); a later such run allocates it again.
  virtual void release_own_scratch() {}
  // The nodes of the subgraphs a control-flow kernel runs on their reference kernels (no fast
  // kernel accepts them), at any depth: the plan reports them as it reports its own.
  virtual std::vector<BodyNode> reference_body_nodes() const { return {}; }
};

struct KernelFactory {
  const char* name;  // e.g. "onednn.conv", "cpu.binary", "ref"
  // True when this kernel can run the node with inputs in info.input_layouts.
  bool (*accepts)(const NodeInfo& info);
  // Layout of output k given the inputs' layouts; nullptr means always kPlain.
  Layout (*output_layout)(const NodeInfo& info, size_t k);
  std::unique_ptr<Kernel> (*create)(const NodeInfo& info);
  // May output k share storage with input `in_place_input(info, k)` (>= 0) when that input
  // dies at this node? nullptr or -1: no.
  int (*in_place_input)(const NodeInfo& info, size_t k) = nullptr;
  // Why this kernel declines the node, "" when it accepts it: the planner names it when a node
  // falls back to the reference kernel. nullptr: a generic reason (see decline_reason).
  std::string (*declines)(const NodeInfo& info) = nullptr;
  // Measured selection (runtime/kernel_selection.h), where which of the kernels that accept a
  // node runs it fastest depends on the machine: when the first kernel of the table that
  // accepts a node is measured for it, the plan builds and times it and every later one that
  // accepts the node and is measured for it too, and keeps the fastest. The last of them (the
  // most general: oneDNN's direct conv) is the baseline. nullptr: chosen by table order alone.
  bool (*measured)(const NodeInfo& info) = nullptr;
  // For a measured kernel other than the baseline: kept only where its best time is under this
  // share of the baseline's (a margin for what timing it alone does not see).
  double measured_margin = 1.0;
  // Concat in place (runtime/concat_in_place.h): the kernel assembles its output (a Concat's,
  // along its `axis`) from inputs that may already lie in their parts of it, written there by
  // their producers, and copies only the others; the plan places what inputs it can.
  bool assembles_in_place = false;
};

// The plan's choice of kernel for a node (runtime/kernel_selection.h), for a kernel made of
// another node's kernel (a batch loop's single image): that one is chosen as the plan would
// choose it, measured where the plan would measure it.
class KernelChooser {
 public:
  virtual ~KernelChooser() = default;
  // The kernel of the first fast factory of the node's op that accepts `info` as it is (its
  // inputs in info.input_layouts), measured against the others where they are measured, or
  // nullptr when no fast factory accepts it.
  virtual std::unique_ptr<Kernel> create(const NodeInfo& info) const = 0;
};

// Why `f` does not run the node: f.declines's reason, else a generic one that names what is
// notable about the inputs (a dtype other than float32, a shape not known statically).
std::string decline_reason(const KernelFactory& f, const NodeInfo& info);

// accepts() of a factory whose declines() gives the reasons: one set of conditions for both.
template <std::string (*kDeclines)(const NodeInfo&)>
bool accepts_unless_declined(const NodeInfo& info) {
  return kDeclines(info).empty();
}

// Why input i is not a float32 tensor of static shape, "" when it is: "input 'x' has no static
// shape (float32[1, 64, ?, ?])", "input 'x' is int64, not float32", "input 2 is missing".
std::string not_static_f32(const NodeInfo& info, size_t i);
// How reason functions name input i: "input 'x'" (or "input 2" when it is omitted).
std::string input_label(const NodeInfo& info, size_t i);

// For spec functions that also say why they decline: stores the reason in *why (when `why` is
// given and holds none yet) and returns nullopt.
template <typename... Args>
std::nullopt_t decline(std::string* why, Args&&... args) {
  if (why && why->empty()) *why = detail::cat(std::forward<Args>(args)...);
  return std::nullopt;
}

// The ordered kernel table for an op type of the default domain (fast kernels first, then the
// reference kernel). Never empty for an op with a reference kernel.
const std::vector<KernelFactory>& kernels_for(const std::string& op_type);

// Subgraphs (If, Loop and Scan bodies) the control-flow kernels planned so far in this process:
// each once, when its node's kernel is made, never per iteration (kernels/cpu/cpu_control_flow.cc).
size_t subgraph_plans_made();

// Family tables of fast kernels, listed by registry.cc in priority order: the few CPU kernels
// that measure faster than oneDNN's for the same op, oneDNN's, the other CPU kernels.
void append_preferred_cpu_kernels(std::vector<std::pair<std::string, KernelFactory>>& t);
void append_onednn_kernels(std::vector<std::pair<std::string, KernelFactory>>& t);
void append_cpu_kernels(std::vector<std::pair<std::string, KernelFactory>>& t);

// Runs the node's reference kernel on io (its outputs copied into planned storage where there
// is some): for a fast kernel whose fast path does not fit the tensors of a run.
void run_reference(const Node& node, int64_t opset, KernelIO& io);

}  // namespace nnfuse
