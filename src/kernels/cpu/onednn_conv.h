// oneDNN's convolution kernels: the primitive a conv runs (make_pd) and what every kernel over
// it holds (ConvBase), the plain conv (ConvKernel: Conv, ConvTranspose, FusedConv; this file's
// .cc), and the makers of the others: FusedConvPool (onednn_conv_pool.cc), FusedConvSplit
// (onednn_conv_split.cc) and FusedConv with a skip convolution (onednn_conv_skip.cc).
//
// The 2-D ones read NCHW or NHWC and write NHWC, so chains of convs stay channels-last; a plain
// input is reordered to NHWC first, because oneDNN has only its slow reference kernel for NCHW in
// and NHWC out. Weights and bias must be constants: they are reordered once, when the kernel is
// made, into the blocked layout the primitive chooses. FusedConv's epilogue runs as post-ops:
// the residual Sum through the sum post-op (which adds what dst holds: Sum is copied there first,
// unless the planner gave the output Sum's storage), then the activation's eltwise ops.
#pragma once

#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cpu/conv_spec.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/kernel.h"

namespace nnfuse::onednn {

// The primitive a conv runs, and what make_pd chose for it.
struct ConvPd {
  dnnl::primitive_desc pd;
  // oneDNN's Winograd, as ConvSpec::winograd asked, where oneDNN has an implementation (it needs
  // AVX-512) whose scratchpad pays (cost/winograd_rule.h: winograd_scratch_pays). It runs on a
  // blocked layout of its choosing, reordered into and out of by the kernel.
  bool winograd = false;
  // Winograd with an activation its implementation takes no post-op for (SiLU, GELU, ...): the
  // activation runs as eltwise primitives over the kernel's own blocked buffer after the conv,
  // before the reorder out.
  bool act_after = false;
  // A 1-D or 3-D conv or transposed conv runs the direct algorithm on a blocked layout of
  // oneDNN's choosing, reordered into and out of as for Winograd, where oneDNN has a kernel for
  // it and on channels-last only an im2col GEMM. (Convs run channels-last at every rank: NWC,
  // NHWC, NDHWC, where oneDNN has its direct kernels; on the plain NCDHW layout it ran R3D-18's
  // 3x3x3 convs as an im2col GEMM, 1.37x ONNX Runtime's time.)
  bool blocked = false;
  // A plain (NCHW) image (up to 4 channels) into 16 output channels: oneDNN's jit kernel reads
  // NCHW directly when it writes the blocked nChw16c layout, which for 16 channels is NHWC byte
  // for byte, so neither the input nor the output is reordered (an image model's first conv,
  // MobileNetV3's: 0.058 ms against 0.102 for the reorder and the NHWC kernel, 3 -> 16 at
  // 224x224, 2 threads). With 24 to 64 channels the reorder of the blocked output back to NHWC
  // costs more than it saves.
  bool nchw_in = false;
};

// The primitive for `s` (which it may turn into the 2-D conv of width 1 a lifted 1-D conv runs
// as: ConvSpec::lift_h). Throws dnnl::error where oneDNN has no implementation.
ConvPd make_pd(ConvSpec& s);

// Weight dims as oneDNN names them (grouped: G, O/G, I/G, spatial...) and the format of the
// ONNX weight tensor under those dims (`any`: the primitive's choice).
dnnl::memory::desc user_weights_desc(const ConvSpec& s, bool any);

// An NHWC output of shape y (logical NCHW) stored as rows `pitch` floats apart: a part of a
// Concat in place.
dnnl::memory::desc rows_desc(const Dims& y, int64_t pitch);

// FusedConvPool's pool from the conv's output `conv` into `y`: directly, or into `pooled` and
// reordered into `y` by `reorder` where `pooled` is set.
void run_pool(const dnnl::primitive& pool, const dnnl::memory& conv, const dnnl::memory& pooled,
              const dnnl::primitive& reorder, const dnnl::memory& y);

// The buffers a conv kernel takes from the run's scratch (KernelIO::scratch), each at the next
// 64-byte offset after the first `reserved` bytes, or from a buffer of the kernel's own when a
// run brings no scratch (a timing run).
class ScratchParts {
 public:
  explicit ScratchParts(size_t reserved = 0) : bytes_(align_up(reserved, 64)) {}

  dnnl::memory add(const dnnl::memory::desc& d);
  size_t bytes() const { return bytes_; }
  // Points the buffers at the run's scratch, or at the kernel's own where it gives none, and
  // returns where they start (null when there are none).
  std::byte* bind(std::byte* scratch);
  // Frees the kernel's own buffer (a later run without scratch allocates it again).
  void release_own() { own_.reset(); }

 private:
  size_t bytes_ = 0;
  std::vector<std::pair<dnnl::memory, size_t>> parts_;
  std::shared_ptr<std::byte[]> own_;
};

// What every oneDNN conv kernel holds: the primitive, its prepacked weights and bias, and the
// memory objects it binds on each run to X, to its own buffers (in the run's scratch) and to Sum.
class ConvBase : public Kernel {
 public:
  // The weights and biases are prepacked.
  bool reads_input(size_t i) const override { return i != 1 && i != 2; }
  size_t scratch_bytes() const override { return scratch_.bytes(); }
  void release_own_scratch() override { scratch_.release_own(); }

 protected:
  // Makes the primitive and prepacks the weights and bias (inputs 1 and 2 of `info`).
  ConvBase(const NodeInfo& info, const ConvSpec& spec);

  // The primitive's src: X itself, or (`reorder`) a buffer of our own X is reordered into.
  void bind_src(bool reorder);
  // Points the primitive's src at X, or reorders X into the kernel's own buffer (bind_src).
  void bind_x(const Tensor& x);
  // The primitive's dst as a buffer of our own, with Sum (if any) reordered into it.
  void bind_own_dst();
  // A reorder of Sum (in its layout) into dst.
  void bind_sum();
  // The activation's eltwise primitives, in place over the conv's own dst (ConvPd::act_after).
  void make_act_after();
  void run_act_after();
  dnnl::memory scratch_memory(const dnnl::memory::desc& d) { return scratch_.add(d); }
  void bind_scratch(std::byte* scratch) { scratch_.bind(scratch); }

  std::string what_;
  ConvSpec s_;
  ConvPd cp_;
  ScratchParts scratch_;
  OwnedBuffers packed_;  // under the prepacked weights and bias
  dnnl::primitive prim_, to_nhwc_, sum_to_dst_;
  std::vector<dnnl::primitive> act_after_;
  dnnl::memory src_, dst_, user_src_, user_sum_;
  std::unordered_map<int, dnnl::memory> args_;
  float divisor_ = 1.0f;  // the activation's run-time argument (bind_activation_args)
  std::mutex mu_;         // the memory objects are rebound on every run
};

// A conv (Conv, ConvTranspose, FusedConv) into its output: directly on the direct algorithm, or
// through a blocked buffer of its own (Winograd, and the 1-D and 3-D convs run blocked).
class ConvKernel : public ConvBase {
 public:
  ConvKernel(const NodeInfo& info, const ConvSpec& spec);

  // Concat in place: a channels-last 4-D output stored at the Concat's pitch, where the kernel
  // reorders its result anyway: the reorder out of the blocked buffer writes the rows where they
  // belong. Not the direct conv, whose oneDNN kernels write dense outputs only: its result copied
  // to the rows from the scratch cost GoogLeNet's as much as the Concat's copy of it did. Not
  // with a residual either (its sum post-op reads the output).
  bool write_output_rows(size_t k, int64_t pitch) override;
  void run(KernelIO& io) override;

  // The conv of X into Y with `sum` (Sum, or Y itself where Y already holds the residual: a
  // skip convolution's output) added first when the spec has one. `scratch`: KernelIO's.
  void run_conv(const Tensor& x, Tensor& y, const Tensor* sum, std::byte* scratch);

 private:
  // Winograd and the N-d blocked convs: X -> blocked, (Sum -> blocked dst), conv, blocked dst
  // -> Y. Y may share Sum's storage: Sum is read before Y is written.
  void run_reordered(const Tensor& x, Tensor& y, const Tensor* sum);
  // Leaves the residual in y for the sum post-op: a copy, a reorder from plain, or nothing
  // when y already is Sum's storage (in place).
  void put_sum(const Tensor& sum, const Tensor& x, Tensor& y);

  dnnl::primitive from_dst_;  // blocked dst -> Y
  dnnl::memory user_dst_;
  int64_t pitch_ = 0;  // the output's pitch as a part of a Concat in place, or 0
};

// The kernel for a node with spec `s` on oneDNN (s.winograd: its Winograd algorithm, where
// make_pd finds it): ConvKernel, or the FusedConvPool or FusedConvSplit one. A FusedConv with a
// skip convolution goes to make_skip_conv_kernel.
std::unique_ptr<Kernel> make_conv_kernel(const NodeInfo& info, const ConvSpec& s);
// FusedConvPool: the conv into a buffer of its own, then the pool from it (onednn_conv_pool.cc).
std::unique_ptr<Kernel> make_conv_pool_kernel(const NodeInfo& info, const ConvSpec& s);
// FusedConvSplit: the conv into the scratch, its channels copied into the outputs
// (onednn_conv_split.cc).
std::unique_ptr<Kernel> make_conv_split_kernel(const NodeInfo& info, const ConvSpec& s);
// FusedConv with a skip convolution of spec `skip` (skip_spec) as its residual
// (onednn_conv_skip.cc).
std::unique_ptr<Kernel> make_skip_conv_kernel(const NodeInfo& info, const ConvSpec& s,
                                              const ConvSpec& skip);

}  // namespace nnfuse::onednn
