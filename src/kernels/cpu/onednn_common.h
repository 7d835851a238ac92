// Shared by the oneDNN kernels (onednn_*.cc): the process-wide engine and per-thread stream,
// conversions between nnfuse and oneDNN shapes, and the checks every kernel's run() makes.
#pragma once

#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/error.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"
#include "kernels/ref/fused.h"

namespace nnfuse::onednn {

using Tag = dnnl::memory::format_tag;

// One CPU engine for the process.
dnnl::engine& engine();
// A stream per calling thread (a dnnl::stream is not meant to be shared between threads).
dnnl::stream& stream();

dnnl::memory::dims to_dims(const Dims& d);
// Plain (C-order) format tag for `rank` dims (1 to 6).
Tag plain_tag(size_t rank);
// Channels-last format tag for `rank` dims (3 to 5: nwc, nhwc, ndhwc).
Tag channels_last_tag(size_t rank);
// A float32 memory descriptor for a tensor of logical shape `shape` stored in `layout`.
dnnl::memory::desc f32_desc(const Dims& shape, Layout layout = Layout::kPlain);
dnnl::memory::desc f32_desc(const Dims& shape, Tag tag);

// The layout input i arrives in (kPlain for omitted inputs or short lists).
Layout input_layout(const NodeInfo& info, size_t i);
// The shape of input i when known at plan time: a constant's, or the value's static shape.
std::optional<Dims> known_shape(const NodeInfo& info, size_t i);
// True when input i is present, float32 and of known shape.
bool static_f32_input(const NodeInfo& info, size_t i);
// True when the node's output 0, if its shape is known, has shape `want`.
bool output_shape_is(const NodeInfo& info, const Dims& want);

// Throws kRuntime naming `what` unless `t` is float32 of shape `shape` in `layout`.
void check_input(const Tensor& t, const Dims& shape, Layout layout, const std::string& what,
                 size_t index);

// Data pointer of a tensor for a dnnl::memory (oneDNN takes void* even for read-only inputs).
inline void* handle(const Tensor& t) { return const_cast<void*>(t.raw()); }

// Sets the OpenMP thread count for this scope: oneDNN fixes a primitive's thread count when
// it is created, so kernels create theirs with the count the plan runs with.
class ThreadScope {
 public:
  explicit ThreadScope(int n);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_ = 0;
};

// Runs `f`, turning a dnnl::error into an nnfuse::Error that names `what` (the node).
template <typename F>
decltype(auto) guarded(const std::string& what, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const dnnl::error& e) {
    fail(ErrorKind::kRuntime, what, ": oneDNN: ", e.what());
  }
}

// Buffers a kernel owns under the memory objects it made over them (its prepacked weights).
using OwnedBuffers = std::vector<std::shared_ptr<std::byte[]>>;

// Copies a constant tensor `src` (plain, of memory descriptor `user`) into a new memory of
// descriptor `want` (the layout a primitive chose), reordering when they differ. The memory's
// buffer comes from aligned_bytes (large weights on huge pages) and is appended to `owned`,
// which must outlive the memory object.
dnnl::memory prepack(const Tensor& src, const dnnl::memory::desc& user,
                     const dnnl::memory::desc& want, OwnedBuffers& owned);

// Float32 `t` times `scale`: a scaled copy, or t itself (its storage shared) when scale is 1.
Tensor scaled(const Tensor& t, float scale);

// The epilogue activation of a fused node (ai.nnfuse), when its attributes read and oneDNN's
// eltwise post-ops compute it as the reference kernel does; nullopt otherwise. kQuantize only
// where the kernel binds its divisor (`quantize`: bind_activation_args).
std::optional<ref::Activation> fused_activation(const Node& node, bool quantize = false);
// Appends the post-ops of `a` (none for kNone; HardSigmoid is linear, then clip; kQuantize a
// binary division by its scale, of rank `rank`, the primitive's dst's; round; clip; linear).
void append_activation(const ref::Activation& a, dnnl::post_ops& ops, int rank = 0);
// The run-time arguments `a`'s post-ops need in `ops` (kQuantize's divisor, a one-element
// float32 tensor of rank `rank` at `divisor`): added to `args`.
void bind_activation_args(const ref::Activation& a, const dnnl::post_ops& ops, int rank,
                          float* divisor, std::unordered_map<int, dnnl::memory>& args);

// Attributes with scratchpad_mode user, which every primitive the kernels run is created with:
// execute() then gives each execution a scratchpad of the calling thread's own, so a
// primitive runs on any thread, and on several at once (oneDNN's own scratchpad, shared by
// every primitive, binds a primitive to the thread that created it).
dnnl::primitive_attr user_scratchpad_attr();
// A reorder primitive from `from` to `to` (user scratchpad).
dnnl::reorder make_reorder(const dnnl::memory& from, const dnnl::memory& to);

// Whether oneDNN runs the primitive on one of its direct kernels: not its reference kernels,
// not an im2col GEMM, not the scalar `simple_*` pooling.
bool runs_direct_kernel(const dnnl::primitive_desc& pd);

// The primitive descriptor for `d` (a convolution, deconvolution or pooling desc) where oneDNN
// has a direct kernel for it (runs_direct_kernel), else nullopt.
template <typename PrimitiveDesc, typename Desc>
std::optional<PrimitiveDesc> direct_pd(const Desc& d, const dnnl::primitive_attr& attr) {
  try {
    PrimitiveDesc pd(d, attr, engine());
    if (runs_direct_kernel(pd)) return pd;
  } catch (const dnnl::error&) {
  }
  return std::nullopt;
}

// The run's scratch, or (when the caller gives none) a buffer of `bytes` the kernel keeps in
// `own`, made on first use.
std::byte* scratch_or_own(std::byte* given, size_t bytes, std::shared_ptr<std::byte[]>& own);

// Executes `p` with `args` (plus the calling thread's scratchpad where `p` needs one, set as
// args[DNNL_ARG_SCRATCHPAD]) on this thread's stream and waits.
void execute(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args);
void execute(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>&& args);

}  // namespace nnfuse::onednn
