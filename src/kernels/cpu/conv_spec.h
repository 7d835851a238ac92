// A convolution node's geometry as the conv kernels take it (ConvSpec): oneDNN's (onednn_conv*.cc)
// and the project's own Winograd and depthwise ones (cpu_winograd_conv.cc, cpu_depthwise_conv.cc)
// read Conv, ConvTranspose and the fused conv ops of ai.nnfuse through it. conv_spec() says
// whether a node is a convolution they can run at all, and why not; which of them runs it is
// conv_factories.cc's business.
//
// Conv (1-D, 2-D, 3-D) and ConvTranspose run channels-last at every rank (NWC, NHWC, NDHWC); the
// input arrives plain or channels-last. FusedConv is the same conv with an epilogue: y =
// act(conv(X, W) + B + Sum), its residual Sum either an input (3) or a second convolution's
// output (inputs 4 to 6, ref/conv_skip.h). FusedConvPool pools its output (MaxPool, the pool_
// attributes), FusedConvSplit cuts its channels into several outputs.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_pool.h"
#include "kernels/kernel.h"
#include "kernels/ref/conv_skip.h"
#include "kernels/ref/fused.h"

namespace nnfuse::onednn {

// The conv ops, as conv_spec reads them.
enum class ConvOp { kConv, kTranspose, kFused, kFusedPool, kFusedSplit };

// FusedConvPool's pool: a MaxPool over the conv's output, written in `out_layout`.
struct ConvPool {
  PoolSpec spec;
  Layout out_layout = Layout::kNHWC;
};

struct ConvSpec {
  bool transpose = false;
  Dims x_shape, w_shape, y_shape;
  int64_t group = 1;
  bool bias = false;
  // As oneDNN takes them: dilations start at 0, and padding_r of a transposed conv has the
  // output_padding taken off (it may go negative).
  Dims strides, dilations, pad_l, pad_r;
  Layout in_layout = Layout::kPlain, out_layout = Layout::kPlain;
  // A strided 1x1 conv without pads runs as an unstrided one on the input subsampled by a
  // strided reorder: oneDNN's NHWC 1x1 kernel is up to 2.4x slower with strides (ResNet-50's
  // 512->1024 projection), and the copy is small.
  bool subsample = false;
  // FusedConv's epilogue. Sum has the output's shape; it arrives in the output's layout or
  // plain (then it is reordered into dst).
  ref::Activation act;
  bool sum = false;
  Layout sum_layout = Layout::kPlain;
  // The residual is a second convolution's output (inputs 4 to 6), written into Y before the
  // first runs; sum is set too, in the output's layout.
  bool skip = false;
  // A 1-D conv (Conv1d) runs as the 2-D conv of height 1 it is (the same bytes in the plain
  // layout): oneDNN has blocked 2-D kernels for every group count, where for 1-D it runs a
  // depthwise conv as an im2col GEMM (384 channels, kernel 31, 1500 samples: 10.0 ms against
  // 0.76 ms as 2-D). x_shape, w_shape and y_shape stay the graph's; prim() gives the dims
  // the primitive and its memory descs are made with, and strides, dilations and pads are
  // stored for 2-D.
  bool lift = false;
  // A lifted 1-D conv as the 2-D conv of width 1 instead ([N, C, L, 1], the same bytes plain and
  // channels-last), where oneDNN has a direct kernel only for that: wav2vec2's grouped
  // positional conv (kernel 128, 16 groups) took 3.8 ms as 1 x 128 on its GEMM, 0.34 ms as
  // 128 x 1. Set by make_pd; strides, dilations and pads are stored in the lifted order.
  bool lift_h = false;
  // FusedConvPool: MaxPool on the conv's output, read from the kernel's own buffer (the
  // blocked one of Winograd: the full-size reorder back to NHWC is never made).
  std::optional<ConvPool> pool;
  // FusedConvSplit: the output channels in parts, one output each. The conv writes all of them
  // into an NHWC buffer of the kernel's own (in the run's scratch), and each part is copied out
  // of it pixel by pixel, while that buffer is still in cache.
  std::vector<int64_t> split;
  // oneDNN's Winograd algorithm asked for (the onednn.winograd kernel; a skip convolution where
  // the rule says it pays): up to 2x faster than the direct NHWC kernel on VGG's and ResNet's
  // 3x3 layers even with the reorders into and out of the blocked layout it needs, relative
  // error ~3e-6 per layer. kWhereScratchPays: where its scratchpad pays (cost/winograd_rule.h:
  // winograd_scratch_pays); kForced: wherever oneDNN has it (NNFUSE_WINOGRAD=force).
  enum class Winograd { kNo, kWhereScratchPays, kForced };
  Winograd winograd = Winograd::kNo;
};

// The node's geometry when a conv kernel can run it (oneDNN's direct algorithm can), else
// nullopt (and the reason in *why). `winograd` is left unset.
std::optional<ConvSpec> conv_spec(const NodeInfo& info, ConvOp op, std::string* why = nullptr);

// The NodeInfo of a FusedConv's skip convolution (`part`, from ref::skip_part): its inputs'
// layouts and constants are the fused node's inputs 4 to 6.
NodeInfo skip_info(const NodeInfo& info, const ref::SkipPart& part);
// The skip convolution's geometry when it can run as a plain conv writing the fused output's
// shape and layout (`main`), else nullopt (and the reason in *why).
std::optional<ConvSpec> skip_spec(const NodeInfo& info, const ConvSpec& main, std::string* why);

// The layout FusedConvPool writes: plain when every consumer reads plain bytes anyway
// (Flatten or Reshape before a classifier: no reorder then), else NHWC.
Layout pool_output_layout(const Node& node);

// Unstrided, undilated, ungrouped 2-D 3x3 convs (no split): the geometry Winograd computes.
bool winograd_geometry(const ConvSpec& s);

// Dims [from, end) of d.
Dims tail(const Dims& d, size_t from);
// A graph shape (input, weight or output) as the primitive sees it: with the height of 1 of a
// lifted 1-D conv (ConvSpec::lift).
Dims prim(const ConvSpec& s, Dims d);
// The input as the primitive reads it: all of X, or the pixels a strided 1x1 conv touches
// (then its strides are 1). Strides of the view are in elements of X's storage; oneDNN
// refuses views whose rows would overlap by its measure (odd sizes), so those run strided.
dnnl::memory::desc input_view(const ConvSpec& s);

}  // namespace nnfuse::onednn
