// oneDNN Conv (1-D, 2-D, 3-D) and ConvTranspose (2-D). The 2-D ones read NCHW or NHWC and
// write NHWC, so chains of convs stay channels-last; a plain input is reordered to NHWC first,
// because oneDNN has only its slow reference kernel for NCHW in and NHWC out. 1-D and 3-D
// convs are plain in and out. Weights and bias must be constants: the weights are reordered
// once, in create(), into the blocked layout the primitive chooses.
//
// FusedConv (ai.nnfuse) is the same primitive with post-ops: y = act(conv(X, W) + B + Sum),
// the residual Sum through the sum post-op (which adds what dst holds: Sum is copied there
// first, unless the planner gave the output Sum's storage), then the activation's eltwise ops.
// Its residual may come from a second convolution instead (ref/conv_skip.h): that conv, a
// kernel of this file's own, writes its result into Y first, and the sum post-op adds it.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "cost/winograd_rule.h"
#include "kernels/cpu/cpu_depthwise.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/cpu_winograd.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"
#include "kernels/cpu/onednn_pool.h"
#include "kernels/ref/conv_pool.h"
#include "kernels/ref/conv_skip.h"
#include "kernels/ref/nn_internal.h"

namespace nnfuse::onednn {
namespace {

using dnnl::memory;

enum class ConvOp { kConv, kTranspose, kFused, kFusedPool, kFusedSplit };

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
  // A plain (NCHW) image (up to 4 channels) into 16 output channels: oneDNN's jit kernel reads
  // NCHW directly when it writes the blocked nChw16c layout, which for 16 channels is NHWC byte
  // for byte, so neither the input nor the output is reordered (an image model's first conv,
  // MobileNetV3's: 0.058 ms against 0.102 for the reorder and the NHWC kernel, 3 -> 16 at
  // 224x224, 2 threads). With 24 to 64 channels the reorder of the blocked output back to NHWC
  // costs more than it saves.
  // Set by make_pd where that kernel exists.
  bool nchw_in = false;
  // Winograd for unstrided 3x3 convs where it pays (cost/winograd_rule.h: enough output
  // channels and pixels; up to 2x faster than the direct NHWC kernel on VGG's and ResNet's 3x3
  // layers even with the reorders into and out of the blocked layout it needs), relative error
  // ~3e-6 per layer. Set by conv_spec where eligible; make_pd clears it where oneDNN has no
  // implementation.
  bool winograd = false;
  // Winograd with an activation its implementation takes no post-op for (SiLU, GELU, ...):
  // the activation runs as eltwise primitives over the kernel's own blocked buffer after the
  // conv, before the reorder out (set by make_pd).
  bool act_after = false;
  // A 1-D or 3-D conv or transposed conv runs the direct algorithm on a blocked layout of
  // oneDNN's choosing, reordered into and out of as for Winograd, where oneDNN has a kernel for
  // it and on channels-last only an im2col GEMM (set by make_pd). (Convs run channels-last at
  // every rank: NWC, NHWC, NDHWC, where oneDNN has its direct kernels; on the plain NCDHW
  // layout it ran R3D-18's 3x3x3 convs as an im2col GEMM, 1.37x ONNX Runtime's time.)
  bool blocked = false;
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
  // blocked one of Winograd: the full-size reorder back to NHWC is never made), written in
  // pool_out_layout.
  bool pool = false;
  PoolSpec pool_spec;
  Layout pool_out_layout = Layout::kNHWC;
  // FusedConvSplit: the output channels in parts, one output each. The conv writes all of them
  // into an NHWC buffer of the kernel's own (in the run's scratch), and each part is copied out
  // of it pixel by pixel, while that buffer is still in cache.
  std::vector<int64_t> split;
};

Dims tail(const Dims& d, size_t from) {
  return Dims(d.begin() + static_cast<int64_t>(from), d.end());
}

// A graph shape (input, weight or output) as the primitive sees it: with the height of 1 of a
// lifted 1-D conv (ConvSpec::lift).
Dims prim(const ConvSpec& s, Dims d) {
  if (s.lift) d.insert(s.lift_h ? d.end() : d.begin() + 2, 1);
  return d;
}

// ConvTranspose geometry, as the reference kernel and the ONNX spec define it: the output size
// from the pads, or the pads from output_shape (or auto_pad SAME, which asks for in * stride
// outputs), the odd unit at the end for SAME_UPPER and at the beginning otherwise.
// Returns false where oneDNN cannot express the result (negative leading pads).
bool transpose_geometry(const Node& node, const Dims& in, const Dims& kernel, ConvSpec& s) {
  const size_t r = in.size();
  s.strides = ref::spatial_attr(node, "strides", r, 1, true);
  const Dims dil = ref::spatial_attr(node, "dilations", r, 1, true);
  const Dims out_pad = ref::spatial_attr(node, "output_padding", r, 0, false);
  const ref::AutoPad ap = ref::read_auto_pad(node);
  const bool same = ap == ref::AutoPad::kSameUpper || ap == ref::AutoPad::kSameLower;
  Dims out_shape;
  if (node.has_attr("output_shape")) {
    out_shape = node.attr_ints("output_shape");
    if (out_shape.size() == r + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != r) return false;
  }
  Dims pads;
  if (out_shape.empty() && ap == ref::AutoPad::kNotSet) {
    pads = ref::spatial_attr(node, "pads", 2 * r, 0, false);
  }
  Dims out(r);
  s.dilations.clear();
  s.pad_l.assign(r, 0);
  s.pad_r.assign(r, 0);
  for (size_t j = 0; j < r; ++j) {
    if (out_pad[j] < 0 || out_pad[j] >= s.strides[j] || kernel[j] > ref::kMaxGeometryValue ||
        in[j] > ref::kMaxGeometryValue) {
      return false;
    }
    const int64_t full = s.strides[j] * (in[j] - 1) + out_pad[j] + (kernel[j] - 1) * dil[j] + 1;
    int64_t begin = 0, end = 0;
    if (!out_shape.empty() || same) {
      out[j] = out_shape.empty() ? in[j] * s.strides[j] : out_shape[j];
      if (out[j] < 1 || out[j] > ref::kMaxGeometryValue) return false;
      const int64_t total = full - out[j];
      if (ap == ref::AutoPad::kSameUpper) {
        begin = ref::floor_div(total, 2);
        end = total - begin;
      } else {
        end = ref::floor_div(total, 2);
        begin = total - end;
      }
    } else {
      begin = pads[j];
      end = pads[r + j];
      if (begin < 0 || end < 0) return false;
      out[j] = full - begin - end;
      if (out[j] < 1) return false;
    }
    if (begin < 0) return false;
    s.dilations.push_back(dil[j] - 1);
    s.pad_l[j] = begin;
    s.pad_r[j] = end - out_pad[j];
  }
  s.y_shape.insert(s.y_shape.end(), out.begin(), out.end());
  return true;
}

// The input as the primitive reads it: all of X, or the pixels a strided 1x1 conv touches
// (then its strides are 1). Strides of the view are in elements of X's storage; oneDNN
// refuses views whose rows would overlap by its measure (odd sizes), so those run strided.
memory::desc input_view(const ConvSpec& s) {
  if (!s.subsample) return f32_desc(prim(s, s.x_shape), s.in_layout);
  const int64_t c = s.x_shape[1], h = s.x_shape[2], w = s.x_shape[3];
  const int64_t sh = s.strides[0], sw = s.strides[1];
  const Dims dims = {s.x_shape[0], c, s.y_shape[2], s.y_shape[3]};
  const Dims strides = s.in_layout == Layout::kNHWC ? Dims{h * w * c, 1, sh * w * c, sw * c}
                                                    : Dims{c * h * w, h * w, sh * w, sw};
  return memory::desc(to_dims(dims), memory::data_type::f32, to_dims(strides));
}

// NNFUSE_WINOGRAD=0 keeps every conv on the direct algorithm (bit-for-bit closer to the
// reference kernel); =force runs oneDNN's Winograd wherever the geometry allows it, paying or
// not (bench/winograd_rule.py measures the rule with it); =own runs the project's own
// (cpu/cpu_winograd.h) wherever it can; =rule takes the rule's answer without measuring; unset
// or 1: measured where the answer depends on the machine. Read at each kernel build, so a test
// can set it for its own kernels.
enum class WinogradMode { kOff, kRule, kMeasure, kForce, kOwn };
WinogradMode winograd_mode() {
  const char* v = std::getenv("NNFUSE_WINOGRAD");
  const std::string mode = v ? v : "";
  if (mode == "0") return WinogradMode::kOff;
  if (mode == "force") return WinogradMode::kForce;
  if (mode == "own") return WinogradMode::kOwn;
  if (mode == "rule") return WinogradMode::kRule;
  return WinogradMode::kMeasure;
}

// Unstrided, undilated, ungrouped 3x3 convs: the geometry oneDNN's Winograd computes.
bool winograd_geometry(const ConvSpec& s) {
  if (s.transpose || s.x_shape.size() != 4 || s.group != 1 || !s.split.empty()) return false;
  if (s.w_shape[2] != 3 || s.w_shape[3] != 3) return false;
  for (size_t j = 0; j < 2; ++j) {
    if (s.strides[j] != 1 || s.dilations[j] != 0) return false;
  }
  return true;
}

// Unstrided 3x3 convs where Winograd pays (cost/winograd_rule.h).
bool winograd_eligible(const ConvSpec& s) {
  const WinogradMode mode = winograd_mode();
  if (mode == WinogradMode::kOff || !winograd_geometry(s)) return false;
  return mode == WinogradMode::kForce ||
         cost::winograd_pays(s.x_shape[1], s.y_shape[1], s.y_shape[2], s.y_shape[3]);
}

// Convs whose algorithm is measured when their kernel is built (create(): the direct one,
// oneDNN's Winograd and the project's own timed, the fastest kept): every one where Winograd
// may win on some machine (winograd_rule.h: winograd_measured, which says why), whether the
// rule, calibrated on other machines, says it pays or not. A conv with a skip convolution keeps the
// rule's answer (TimedKernel feeds no skip inputs). Not under ThreadSanitizer: OpenMP's runtime is
// not built for it, and the Winograd kernel built for the measuring transforms its weights in
// OpenMP's threads, which it then reports as racing with the caller that allocated the buffers (the
// rule alone decides there).
bool winograd_measured_here(const ConvSpec& s) {
#if defined(__SANITIZE_THREAD__)
  (void)s;
  return false;
#else
  return winograd_mode() == WinogradMode::kMeasure && !s.skip && winograd_geometry(s) &&
         cost::winograd_measured(s.x_shape[1], s.y_shape[1], s.y_shape[2], s.y_shape[3]);
#endif
}

// Where the project's own Winograd kernel (cpu/cpu_winograd.h) computes the conv: the Winograd
// geometry, channels-last in and out (a residual too), no split or skip convolution, and an
// activation it applies. A FusedConvPool's pool runs on its output.
bool own_winograd_fits(const ConvSpec& s) {
  if (!winograd_geometry(s) || s.lift || s.skip || s.subsample) return false;
  if (s.in_layout != Layout::kNHWC || s.out_layout != Layout::kNHWC) return false;
  if (s.sum && s.sum_layout != Layout::kNHWC) return false;
  for (size_t j = 0; j < 2; ++j) {
    if (s.pad_l[j] < 0 || s.pad_r[j] < 0) return false;
  }
  return cpu::winograd_declines(s.act).empty();
}

// NNFUSE_DEPTHWISE=own runs every depthwise conv the project's own kernel computes
// (own_depthwise_fits) on it, =0 none; unset, each one's kernel is measured when built (oneDNN's
// or the project's, the faster kept). Not measured under ThreadSanitizer (see
// winograd_measured_here): oneDNN's kernel runs there. Read at each kernel build.
enum class DepthwiseMode { kOff, kMeasure, kOwn };
DepthwiseMode depthwise_mode() {
  const char* v = std::getenv("NNFUSE_DEPTHWISE");
  const std::string mode = v ? v : "";
  if (mode == "0") return DepthwiseMode::kOff;
  if (mode == "own") return DepthwiseMode::kOwn;
#if defined(__SANITIZE_THREAD__)
  return DepthwiseMode::kOff;
#else
  return DepthwiseMode::kMeasure;
#endif
}

cpu::DepthwiseGeometry depthwise_geometry(const ConvSpec& s) {
  cpu::DepthwiseGeometry g;
  g.n = s.x_shape[0];
  g.c = s.x_shape[1];
  g.h = s.x_shape[2];
  g.w = s.x_shape[3];
  g.oh = s.y_shape[2];
  g.ow = s.y_shape[3];
  g.k = s.w_shape[2];
  g.stride = s.strides[0];
  g.pad_t = s.pad_l[0];
  g.pad_l = s.pad_l[1];
  return g;
}

// Where the project's own depthwise kernel (cpu/cpu_depthwise.h) computes the conv: a 2-D conv
// with one input and one output channel per group, channels-last in and out, a square kernel,
// equal strides, undilated, no residual, pool, split or skip convolution.
bool own_depthwise_fits(const ConvSpec& s) {
  if (s.transpose || s.lift || s.skip || s.subsample || s.pool || s.sum || !s.split.empty()) {
    return false;
  }
  if (s.x_shape.size() != 4 || s.group != s.x_shape[1] || s.w_shape[0] != s.group ||
      s.w_shape[1] != 1 || s.y_shape[1] != s.group) {
    return false;
  }
  if (s.in_layout != Layout::kNHWC || s.out_layout != Layout::kNHWC) return false;
  if (s.w_shape[2] != s.w_shape[3] || s.strides[0] != s.strides[1]) return false;
  if (s.dilations[0] != 0 || s.dilations[1] != 0) return false;
  return cpu::depthwise_declines(depthwise_geometry(s)).empty();
}

// Winograd's scratchpad, as oneDNN sizes it for the blocking it picks, against the work it
// saves (cost/winograd_rule.h: winograd_scratch_pays).
bool winograd_scratch_fits(const dnnl::primitive_desc& pd, const ConvSpec& s) {
  if (winograd_mode() == WinogradMode::kForce) return true;
  const double flops = 2.0 * static_cast<double>(s.x_shape[1] * s.y_shape[1]) * 9.0 *
                       static_cast<double>(s.y_shape[2] * s.y_shape[3]);
  return cost::winograd_scratch_pays(flops, static_cast<int64_t>(pd.scratchpad_desc().get_size()));
}

// The layout FusedConvPool writes: plain when every consumer reads plain bytes anyway
// (Flatten or Reshape before a classifier: no reorder then), else NHWC.
Layout pool_output_layout(const Node& node) {
  const Value* y = node.output(0);
  if (!y || y->uses().empty()) return Layout::kNHWC;
  for (const Use& u : y->uses()) {
    const std::string& op = u.node->op_type();
    if (op != "Flatten" && op != "Reshape") return Layout::kNHWC;
  }
  return Layout::kPlain;
}

// FusedConvPool's pooling part, from its pool_ attributes over the conv's output shape.
bool pool_geometry(const NodeInfo& info, ConvSpec& s) {
  if (s.x_shape.size() != 4 || info.node.num_outputs() != 1) return false;
  ref::PoolPart part = ref::pool_part(info.node, s.y_shape);
  NodeInfo pool_info{*part.node, 17, {Layout::kNHWC}, info.num_threads};
  std::optional<PoolSpec> p = pool_spec(pool_info);
  if (!p || p->alg != dnnl::algorithm::pooling_max) return false;
  s.pool = true;
  s.pool_spec = *p;
  s.pool_out_layout = pool_output_layout(info.node);
  return output_shape_is(info, p->y_shape);
}

std::optional<ConvSpec> conv_spec(const NodeInfo& info, ConvOp op, std::string* why = nullptr);

// FusedConvSplit: `split` (one positive size per output, 2 or more) cuts the computed 4-D
// output's channels into the outputs' shapes.
bool split_geometry(const NodeInfo& info, ConvSpec& s) {
  s.split = info.node.attr_ints("split", {});
  if (s.split.size() < 2 || s.y_shape.size() != 4) return false;
  int64_t total = 0;
  for (size_t k = 0; k < s.split.size(); ++k) {
    if (s.split[k] <= 0) return false;
    Dims part = s.y_shape;
    part[1] = s.split[k];
    const std::optional<Dims> out = info.output_shape(k);
    if (out && *out != part) return false;
    total += s.split[k];
  }
  return total == s.y_shape[1];
}

// The NodeInfo of a FusedConv's skip convolution (`part`, from ref::skip_part): its inputs'
// layouts and constants are the fused node's inputs 4 to 6.
NodeInfo skip_info(const NodeInfo& info, const ref::SkipPart& part) {
  std::vector<Layout> layouts;
  std::vector<const Tensor*> constants;
  for (size_t i = 0; i < part.node->num_inputs(); ++i) {
    const size_t j = ref::kSkipInput + i;
    layouts.push_back(j < info.input_layouts.size() ? info.input_layouts[j] : Layout::kPlain);
    constants.push_back(i == 0 ? nullptr : info.constant(j));
  }
  return NodeInfo{*part.node, info.opset, std::move(layouts), info.num_threads,
                  std::move(constants)};
}

// The skip convolution's geometry when it can run as a plain conv of this file writing the
// fused output's shape and layout, else nullopt (and the reason in *why).
std::optional<ConvSpec> skip_spec(const NodeInfo& info, const ConvSpec& main, std::string* why) {
  const ref::SkipPart part = ref::skip_part(info.node);
  const NodeInfo si = skip_info(info, part);
  std::string skip_why;
  std::optional<ConvSpec> k = conv_spec(si, ConvOp::kConv, &skip_why);
  if (!k) return decline(why, "the skip convolution: ", skip_why);
  if (k->y_shape != main.y_shape || k->out_layout != main.out_layout) {
    return decline(why, "the skip convolution writes ", dims_str(k->y_shape), ", not the output's ",
                   dims_str(main.y_shape));
  }
  return k;
}

// The node's geometry when this kernel can run it, else nullopt (and the reason in *why).
std::optional<ConvSpec> conv_spec(const NodeInfo& info, ConvOp op, std::string* why) {
  const Node& node = info.node;
  const bool transpose = op == ConvOp::kTranspose;
  const bool fused = op == ConvOp::kFused || op == ConvOp::kFusedPool || op == ConvOp::kFusedSplit;
  const size_t max_inputs = op == ConvOp::kFused ? 7 : op == ConvOp::kFusedPool ? 4 : 3;
  size_t outputs = 1;
  if (op == ConvOp::kFusedSplit) {
    try {
      outputs = node.attr_ints("split", {}).size();
    } catch (const Error& e) {
      return decline(why, "attributes: ", e.what());
    }
  }
  if (node.num_outputs() != outputs || outputs == 0 || node.num_inputs() < 2 ||
      node.num_inputs() > max_inputs) {
    return decline(why, node.num_inputs(), " inputs and ", node.num_outputs(), " outputs");
  }
  for (size_t i = 0; i < 2; ++i) {
    if (std::string r = not_static_f32(info, i); !r.empty()) return decline(why, r);
  }
  const Tensor* w = info.constant(1);
  if (!w || w->dtype() != DType::kFloat32 || w->layout() != Layout::kPlain) {
    return decline(why, "the weight ", input_label(info, 1), " is not a constant");
  }
  ConvSpec s;
  s.transpose = transpose;
  s.x_shape = *known_shape(info, 0);
  s.w_shape = w->shape();
  const size_t rank = s.x_shape.size();
  if (rank < 3 || rank > 5 || s.w_shape.size() != rank) {
    return decline(why, "input of rank ", rank,
                   " (runs 3-D to 5-D inputs with weights of the same rank)");
  }
  for (size_t j = 0; j < rank; ++j) {
    if (s.x_shape[j] < 1 || s.w_shape[j] < 1) return decline(why, "an empty input or weight");
  }
  s.in_layout = input_layout(info, 0);
  if (s.in_layout != Layout::kPlain && s.in_layout != Layout::kNHWC) {
    return decline(why, "input in layout ", layout_name(s.in_layout));
  }
  s.out_layout = Layout::kNHWC;
  try {
    s.group = node.attr_int("group", 1);
    const int64_t c = s.x_shape[1];
    if (s.group < 1 || c % s.group != 0) {
      return decline(why, "group ", s.group, " does not divide ", c, " channels");
    }
    int64_t m = 0;
    if (transpose) {
      if (s.w_shape[0] != c || s.w_shape[1] > ref::kMaxGeometryValue) {
        return decline(why, "weight ", dims_str(s.w_shape), " does not match ", c, " channels");
      }
      m = s.w_shape[1] * s.group;
    } else {
      m = s.w_shape[0];
      if (s.w_shape[1] * s.group != c || m % s.group != 0) {
        return decline(why, "weight ", dims_str(s.w_shape), " does not match ", c, " channels in ",
                       s.group, " groups");
      }
    }
    if (info.has_input(2)) {
      const Tensor* b = info.constant(2);
      if (!b || b->dtype() != DType::kFloat32 || b->shape() != Dims{m}) {
        return decline(why, "the bias ", input_label(info, 2), " is not a float32 constant of [", m,
                       "]");
      }
      s.bias = true;
    }
    const Dims kernel = tail(s.w_shape, 2);
    if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel) {
      return decline(why, "kernel_shape differs from the weight's ", dims_str(kernel));
    }
    s.y_shape = {s.x_shape[0], m};
    if (transpose) {
      if (!transpose_geometry(node, tail(s.x_shape, 2), kernel, s)) {
        return decline(why, "output_shape, pads or output_padding oneDNN cannot express");
      }
    } else {
      ref::WindowGeometry g = ref::window_geometry(node, tail(s.x_shape, 2), kernel, false);
      s.y_shape.insert(s.y_shape.end(), g.out.begin(), g.out.end());
      s.strides = g.strides;
      for (int64_t d : g.dilations) s.dilations.push_back(d - 1);
      s.pad_l = g.pad_begin;
      s.pad_r = g.pad_end;
    }
    if (rank == 3) {
      s.lift = true;
      s.strides.insert(s.strides.begin(), 1);
      s.dilations.insert(s.dilations.begin(), 0);
      s.pad_l.insert(s.pad_l.begin(), 0);
      s.pad_r.insert(s.pad_r.begin(), 0);
    }
  } catch (const Error& e) {
    return decline(why, "attributes: ", e.what());  // the reference kernel reports them
  }
  if (op == ConvOp::kFusedPool) {
    if (!pool_geometry(info, s)) return decline(why, "its pooling part is not a oneDNN max pool");
  } else if (op == ConvOp::kFusedSplit) {
    if (!split_geometry(info, s)) {
      return decline(why, "the split does not cut the 4-D output's channels into its outputs");
    }
  } else if (!output_shape_is(info, s.y_shape)) {
    return decline(why, "output shape differs from the computed ", dims_str(s.y_shape));
  }
  if (fused) {
    std::optional<ref::Activation> act = fused_activation(node);
    if (!act) return decline(why, "an activation oneDNN's post-ops do not compute exactly");
    s.act = *act;
    if (info.has_input(3)) {
      if (std::string r = not_static_f32(info, 3); !r.empty()) return decline(why, r);
      if (*known_shape(info, 3) != s.y_shape) {
        return decline(why, "the residual ", input_label(info, 3), " is not of the output's shape ",
                       dims_str(s.y_shape));
      }
      s.sum = true;
      s.sum_layout = input_layout(info, 3);
      if (s.sum_layout != s.out_layout && s.sum_layout != Layout::kPlain) {
        return decline(why, "the residual arrives in layout ", layout_name(s.sum_layout));
      }
      if (s.pool && s.x_shape.size() != 4) return decline(why, "a pooled residual of rank ", rank);
    }
    if (ref::has_skip_conv(node)) {
      if (s.sum) return decline(why, "both a residual Sum and a skip convolution");
      if (!skip_spec(info, s, why)) return std::nullopt;
      s.sum = true;
      s.sum_layout = s.out_layout;
      s.skip = true;
    }
  }
  if (!transpose && rank == 4 && s.w_shape[2] == 1 && s.w_shape[3] == 1) {
    bool unpadded = true, strided = false;
    for (size_t j = 0; j < 2; ++j) {
      unpadded = unpadded && s.pad_l[j] == 0 && s.pad_r[j] == 0;
      strided = strided || s.strides[j] > 1;
    }
    s.subsample = unpadded && strided;
    try {
      input_view(s);
    } catch (const dnnl::error&) {
      s.subsample = false;
    }
  }
  s.winograd = winograd_eligible(s);  // never with a split (winograd_geometry)
  return s;
}

// Weight dims as oneDNN names them (grouped: G, O/G, I/G, spatial...) and the format of the
// ONNX weight tensor under those dims: Conv's [M, C/G, k...] is goihw; ConvTranspose's
// [C, M/G, k...] is giohw.
memory::desc user_weights_desc(const ConvSpec& s, bool any) {
  const int64_t m = s.y_shape[1], c = s.x_shape[1], g = s.group;
  const Dims k = tail(prim(s, s.w_shape), 2);
  Dims dims = g == 1 ? Dims{m, c} : Dims{g, m / g, c / g};
  dims.insert(dims.end(), k.begin(), k.end());
  Tag tag = plain_tag(dims.size());
  if (s.transpose) {
    const bool volume = k.size() == 3;
    tag = g == 1 ? (volume ? Tag::iodhw : Tag::iohw) : (volume ? Tag::giodhw : Tag::giohw);
  }
  return f32_desc(dims, any ? Tag::any : tag);
}

// The activation format the primitive runs on, unless blocked: channels-last (NHWC, NDHWC; a
// 1-D conv's NWC as NHWC of height 1).
Tag act_tag(const ConvSpec& s) { return channels_last_tag(prim(s, s.x_shape).size()); }

dnnl::primitive_desc make_pd(ConvSpec& s) {
  Dims src_dims = prim(s, s.x_shape), strides = s.strides;
  const Dims y_dims = prim(s, s.y_shape);
  if (s.subsample) {
    src_dims = {s.x_shape[0], s.x_shape[1], s.y_shape[2], s.y_shape[3]};
    strides = {1, 1};
  }
  const memory::desc src = f32_desc(src_dims, act_tag(s));
  const memory::desc dst = f32_desc(y_dims, act_tag(s));
  const memory::desc wei = user_weights_desc(s, /*any=*/true);
  const memory::desc bias = s.bias ? f32_desc({s.y_shape[1]}, Tag::a) : memory::desc();
  const auto st = to_dims(strides), dil = to_dims(s.dilations);
  const auto pl = to_dims(s.pad_l), pr = to_dims(s.pad_r);
  const auto prop = dnnl::prop_kind::forward_inference;
  dnnl::post_ops ops;
  if (s.sum) ops.append_sum(1.0f);
  append_activation(s.act, ops);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  attr.set_post_ops(ops);
  s.nchw_in = false;
  if (!s.transpose && !s.winograd && !s.subsample && !s.pool && s.split.empty() &&
      s.x_shape.size() == 4 && s.in_layout == Layout::kPlain && s.x_shape[1] <= 4 &&
      s.y_shape[1] == 16 && s.group == 1 && s.x_shape[2] * s.x_shape[3] > 1) {
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct,
                                      f32_desc(src_dims, Tag::nchw), wei, bias,
                                      f32_desc(s.y_shape, Tag::nChw16c), st, dil, pl, pr);
    try {
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      if (std::string(pd.impl_info_str()).rfind("ref", 0) != 0) {
        s.nchw_in = true;
        return pd;
      }
    } catch (const dnnl::error&) {
    }
  }
  s.blocked = false;
  if (s.transpose) {
    dnnl::deconvolution_forward::desc d(prop, dnnl::algorithm::deconvolution_direct, src, wei, bias,
                                        dst, st, dil, pl, pr);
    dnnl::deconvolution_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
    if (s.x_shape.size() == 4 || runs_direct_kernel(pd)) return pd;
    // 1-D and 3-D: oneDNN's blocked layouts where it has a kernel for them and none for
    // channels-last.
    dnnl::deconvolution_forward::desc any(prop, dnnl::algorithm::deconvolution_direct,
                                          f32_desc(src_dims, Tag::any), wei, bias,
                                          f32_desc(y_dims, Tag::any), st, dil, pl, pr);
    if (auto blocked =
            direct_pd<dnnl::deconvolution_forward::primitive_desc>(any, user_scratchpad_attr())) {
      s.blocked = true;
      return *blocked;
    }
    return pd;
  }
  if (s.winograd) {
    // Winograd runs on a blocked layout of its choosing; the kernel reorders around it.
    const memory::desc any_src = f32_desc(src_dims, Tag::any);
    const memory::desc any_dst = f32_desc(y_dims, Tag::any);
    dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_winograd, any_src, wei,
                                      bias, any_dst, st, dil, pl, pr);
    try {
      dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
      if (winograd_scratch_fits(pd, s)) return pd;
    } catch (const dnnl::error&) {
    }
    if (s.act.kind != ref::ActivationKind::kNone) {
      // The activation after the conv instead of as its post-op.
      dnnl::post_ops sum_only;
      if (s.sum) sum_only.append_sum(1.0f);
      dnnl::primitive_attr no_act = user_scratchpad_attr();
      no_act.set_post_ops(sum_only);
      try {
        dnnl::convolution_forward::primitive_desc pd(d, no_act, engine());
        if (winograd_scratch_fits(pd, s)) {
          s.act_after = true;
          return pd;
        }
      } catch (const dnnl::error&) {
      }
    }
    // No implementation on this CPU (it needs AVX-512), or one whose scratchpad spills.
    s.winograd = false;
  }
  dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, src, wei, bias, dst,
                                    st, dil, pl, pr);
  dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
  if (s.x_shape.size() == 4 || runs_direct_kernel(pd)) return pd;
  if (s.lift && !s.lift_h) {
    ConvSpec h = s;
    h.lift_h = true;
    for (Dims* v : {&h.strides, &h.dilations, &h.pad_l, &h.pad_r}) {
      std::reverse(v->begin(), v->end());
    }
    dnnl::primitive_desc hpd = make_pd(h);
    if (runs_direct_kernel(hpd)) {
      s = h;
      return hpd;
    }
  }
  // 1-D and 3-D: a blocked layout where oneDNN has a direct kernel only for that (a volume's
  // one-channel first conv).
  dnnl::convolution_forward::desc any(prop, dnnl::algorithm::convolution_direct,
                                      f32_desc(src_dims, Tag::any), wei, bias,
                                      f32_desc(y_dims, Tag::any), st, dil, pl, pr);
  if (auto blocked = direct_pd<dnnl::convolution_forward::primitive_desc>(any, attr)) {
    s.blocked = true;
    return *blocked;
  }
  return pd;
}

// An NHWC output of shape y (logical NCHW) stored as rows `pitch` floats apart: a part of a
// Concat in place.
memory::desc rows_desc(const Dims& y, int64_t pitch) {
  return memory::desc(to_dims(y), memory::data_type::f32,
                      to_dims(Dims{y[2] * y[3] * pitch, 1, y[3] * pitch, pitch}));
}

// FusedConvPool's pool from the conv's output `conv` into `y`: directly, or into `pooled` and
// reordered into `y` by `reorder` where `pooled` is set.
void run_pool(const dnnl::primitive& pool, const memory& conv, const memory& pooled,
              const dnnl::primitive& reorder, const memory& y) {
  if (pooled) {
    execute(pool, {{DNNL_ARG_SRC, conv}, {DNNL_ARG_DST, pooled}});
    execute(reorder, {{DNNL_ARG_FROM, pooled}, {DNNL_ARG_TO, y}});
  } else {
    execute(pool, {{DNNL_ARG_SRC, conv}, {DNNL_ARG_DST, y}});
  }
}

// The buffers a conv kernel takes from the run's scratch (KernelIO::scratch), each at the next
// 64-byte offset after the first `reserved` bytes, or from a buffer of the kernel's own when a
// run brings no scratch (a timing run).
class ScratchParts {
 public:
  explicit ScratchParts(size_t reserved = 0) : bytes_(align_up(reserved, 64)) {}

  memory add(const memory::desc& d) {
    memory m(d, engine(), DNNL_MEMORY_NONE);
    parts_.emplace_back(m, bytes_);
    bytes_ += align_up(d.get_size(), 64);
    return m;
  }
  size_t bytes() const { return bytes_; }

  // Points the buffers at the run's scratch, or at the kernel's own where it gives none, and
  // returns where they start (null when there are none).
  std::byte* bind(std::byte* scratch) {
    if (bytes_ == 0) return nullptr;
    scratch = scratch_or_own(scratch, bytes_, own_);
    for (auto& [m, offset] : parts_) m.set_data_handle(scratch + offset);
    return scratch;
  }
  // Frees the kernel's own buffer (a later run without scratch allocates it again).
  void release_own() { own_.reset(); }

 private:
  size_t bytes_ = 0;
  std::vector<std::pair<memory, size_t>> parts_;
  std::shared_ptr<std::byte[]> own_;
};

class ConvKernel : public Kernel {
 public:
  ConvKernel(const NodeInfo& info, ConvSpec spec) : what_(info.node.describe()), s_(spec) {
    rows_pitch_.assign(s_.split.empty() ? 1 : s_.split.size(), 0);
    ThreadScope threads(info.num_threads);
    guarded(what_, [&] {
      dnnl::primitive_desc pd = make_pd(s_);
      prim_ = dnnl::primitive(pd);
      weights_ =
          prepack(*info.constant(1), user_weights_desc(s_, false), pd.weights_desc(0), packed_);
      args_[DNNL_ARG_WEIGHTS] = weights_;
      if (s_.bias) {
        args_[DNNL_ARG_BIAS] = prepack(*info.constant(2), f32_desc({s_.y_shape[1]}, Tag::a),
                                       pd.weights_desc(1), packed_);
      }
      if (s_.pool) {
        init_pooled(pd);
        make_act_after(pd);
        return;
      }
      if (s_.winograd || s_.blocked) {
        if (s_.skip) make_skip(info);
        // Blocked buffers of our own, with reorders from X and Sum and into Y.
        bind_src(pd, /*reorder=*/true);
        bind_own_dst(pd);
        make_act_after(pd);
        user_dst_ =
            memory(f32_desc(prim(s_, s_.y_shape), s_.out_layout), engine(), DNNL_MEMORY_NONE);
        from_dst_ = make_reorder(dst_, user_dst_);
        return;
      }
      if (s_.skip) make_skip(info);
      dst_ = s_.split.empty() ? memory(pd.dst_desc(0), engine(), DNNL_MEMORY_NONE)
                              : scratch_memory(pd.dst_desc(0));
      args_[DNNL_ARG_DST] = dst_;
      // A plain input the primitive reads channels-last, or a subsampled one: reorder into a
      // buffer of our own. A plain input of one pixel ([N, C, 1, 1]: a squeeze-and-excitation's
      // pooled vector) is stored as its channels-last form already, and is read as it is.
      const bool plain_in = s_.in_layout == Layout::kPlain;
      const bool one_pixel = plain_in && checked_numel(s_.x_shape) == s_.x_shape[0] * s_.x_shape[1];
      bind_src(pd, (plain_in && !one_pixel && !s_.nchw_in) || s_.subsample);
      if (s_.sum && s_.sum_layout != s_.out_layout) bind_sum();
    });
  }

  // Whether it runs Winograd (make_pd falls back to the direct algorithm where oneDNN has no
  // Winograd implementation or its scratchpad does not pay).
  bool runs_winograd() const { return s_.winograd; }
  std::string algorithm() const override { return s_.winograd ? "oneDNN Winograd" : ""; }
  // Frees the scratch buffer a run without the caller's scratch allocated (a timing run); a
  // later run without one allocates it again.
  void release_own_scratch() { scratch_.release_own(); }

  // The weights and biases are prepacked.
  bool reads_input(size_t i) const override {
    return i != 1 && i != 2 && i != ref::kSkipInput + 1 && i != ref::kSkipInput + 2;
  }
  // The skip convolution runs before the rest, so both use the scratch from its start.
  size_t scratch_bytes() const override {
    return std::max(scratch_.bytes(), skip_ ? skip_->scratch_bytes() : size_t{0});
  }

  // Concat in place: a channels-last 4-D output (a split's part) stored at the Concat's pitch,
  // where the kernel copies or reorders its result anyway: the split's copy, and the reorder
  // out of Winograd's blocked buffer or the pooled one, write the rows where they belong. Not
  // the direct conv, whose oneDNN kernels write dense outputs only: its result copied to the
  // rows from the scratch cost GoogLeNet's as much as the Concat's copy of it did. Not with a
  // residual either (its sum post-op reads the output).
  bool write_output_rows(size_t k, int64_t pitch) override {
    const Dims& y = s_.pool ? s_.pool_spec.y_shape : s_.y_shape;
    const Layout layout = s_.pool ? s_.pool_out_layout : s_.out_layout;
    if (layout != Layout::kNHWC || y.size() != 4 || s_.transpose || s_.lift || s_.nchw_in ||
        k >= rows_pitch_.size() || rows_pitch_[k] != 0) {
      return false;
    }
    if (pitch < (s_.split.empty() ? y[1] : s_.split[k])) return false;
    if (s_.split.empty()) {
      if (s_.sum || skip_ || !(s_.pool || s_.winograd || s_.blocked)) return false;
      guarded(what_, [&] {
        const memory::desc rows = rows_desc(y, pitch);
        // A pool that wrote Y itself (dense) pools into the scratch instead.
        if (s_.pool && !pooled_) pooled_ = scratch_memory(user_dst_.get_desc());
        user_dst_ = memory(rows, engine(), DNNL_MEMORY_NONE);
        from_dst_ = make_reorder(s_.pool ? pooled_ : dst_, user_dst_);
      });
    }
    rows_pitch_[k] = pitch;
    return true;
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    for (size_t k = 0; k < rows_pitch_.size(); ++k) {
      NNFUSE_CHECK(rows_pitch_[k] == 0 || io.outputs[k].defined(), what_, ": output ", k,
                   " is a part of a Concat in place but has no planned storage");
    }
    if (!s_.split.empty()) {
      run_split(io, x);
      return;
    }
    Tensor& y = s_.pool ? io.output(0, DType::kFloat32, s_.pool_spec.y_shape, s_.pool_out_layout)
                        : io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    std::lock_guard<std::mutex> lock(mu_);
    if (skip_) run_skip(io, x, y);
    bind_scratch(io.scratch);
    if (s_.pool) {
      run_pooled(io, x);
      return;
    }
    if (s_.winograd || s_.blocked) {
      run_reordered(io, x, y);
      return;
    }
    if (s_.sum && !skip_) put_sum(io.in(3), x, y);
    guarded(what_, [&] {
      bind_x(x);
      dst_.set_data_handle(y.raw());
      execute(prim_, args_);
    });
  }

 private:
  // FusedConvSplit: the conv into the scratch buffer dst_ ([N, H, W, C] of all the parts), then
  // each pixel's channels of part k copied into output k (at its pitch for a part of a Concat in
  // place), the threads over the pixels.
  void run_split(KernelIO& io, const Tensor& x) {
    std::vector<float*> outs;
    std::vector<int64_t> pitch;
    for (size_t k = 0; k < s_.split.size(); ++k) {
      Dims shape = s_.y_shape;
      shape[1] = s_.split[k];
      outs.push_back(io.output(k, DType::kFloat32, shape, s_.out_layout).data<float>());
      pitch.push_back(rows_pitch_[k] != 0 ? rows_pitch_[k] : s_.split[k]);
    }
    std::lock_guard<std::mutex> lock(mu_);
    bind_scratch(io.scratch);
    guarded(what_, [&] {
      bind_x(x);
      execute(prim_, args_);
    });
    const float* all = static_cast<const float*>(dst_.get_data_handle());
    const int64_t c = s_.y_shape[1], pixels = s_.y_shape[0] * s_.y_shape[2] * s_.y_shape[3];
    cpu::parallel_range(pixels, std::max<int64_t>(1, cpu::kParallelGrain / c),
                        [&](int64_t lo, int64_t hi) {
                          for (int64_t p = lo; p < hi; ++p) {
                            const float* from = all + p * c;
                            for (size_t k = 0; k < outs.size(); ++k) {
                              std::memcpy(outs[k] + p * pitch[k], from,
                                          static_cast<size_t>(s_.split[k]) * sizeof(float));
                              from += s_.split[k];
                            }
                          }
                        });
  }

  // Points the primitive's src at X, or reorders X into the kernel's own buffer (bind_src).
  void bind_x(const Tensor& x) {
    if (user_src_) {
      user_src_.set_data_handle(handle(x));
      execute(to_nhwc_, {{DNNL_ARG_FROM, user_src_}, {DNNL_ARG_TO, src_}});
    } else {
      src_.set_data_handle(handle(x));
    }
  }

  // The primitive's src: X itself, or (`reorder`) a buffer of our own X is reordered into.
  void bind_src(const dnnl::primitive_desc& pd, bool reorder) {
    if (reorder) {
      user_src_ = memory(input_view(s_), engine(), DNNL_MEMORY_NONE);
      src_ = scratch_memory(pd.src_desc(0));
      to_nhwc_ = make_reorder(user_src_, src_);
    } else {
      src_ = memory(pd.src_desc(0), engine(), DNNL_MEMORY_NONE);
    }
    args_[DNNL_ARG_SRC] = src_;
  }

  // The activation's eltwise primitives, in place over the conv's own dst (act_after).
  void make_act_after(const dnnl::primitive_desc& pd) {
    if (!s_.act_after) return;
    dnnl::post_ops ops;
    append_activation(s_.act, ops);
    for (int i = 0; i < ops.len(); ++i) {
      float scale = 1.0f, alpha = 0.0f, beta = 0.0f;
      dnnl::algorithm alg;
      ops.get_params_eltwise(i, scale, alg, alpha, beta);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, pd.dst_desc(0), alpha,
                                    beta);
      act_after_.push_back(dnnl::eltwise_forward(
          dnnl::eltwise_forward::primitive_desc(d, user_scratchpad_attr(), engine())));
    }
  }

  void run_act_after() {
    for (const dnnl::primitive& p : act_after_) {
      execute(p, {{DNNL_ARG_SRC, dst_}, {DNNL_ARG_DST, dst_}});
    }
  }

  // The primitive's dst as a buffer of our own, with Sum (if any) reordered into it.
  void bind_own_dst(const dnnl::primitive_desc& pd) {
    dst_ = scratch_memory(pd.dst_desc(0));
    args_[DNNL_ARG_DST] = dst_;
    if (s_.sum) bind_sum();
  }

  void bind_sum() {
    user_sum_ = memory(f32_desc(prim(s_, s_.y_shape), s_.sum_layout), engine(), DNNL_MEMORY_NONE);
    sum_to_dst_ = make_reorder(user_sum_, dst_);
  }

  // FusedConvPool: X (reordered when the conv wants another layout) -> conv into a buffer of
  // our own (Sum reordered into it first) -> MaxPool from that buffer into Y.
  void init_pooled(const dnnl::primitive_desc& pd) {
    bind_src(pd, s_.winograd || s_.in_layout == Layout::kPlain || s_.subsample);
    bind_own_dst(pd);
    // oneDNN's fast pooling kernels keep the source's format: pool in the conv's format, then
    // reorder the (4x smaller) result into Y's layout.
    const PoolSpec& p = s_.pool_spec;
    const memory::desc user_dst = f32_desc(p.y_shape, s_.pool_out_layout);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg, pd.dst_desc(0),
                                     f32_desc(p.y_shape, Tag::any), to_dims(p.strides),
                                     to_dims(p.kernel), to_dims(p.dilations), to_dims(p.pad_l),
                                     to_dims(p.pad_r));
    dnnl::pooling_v2_forward::primitive_desc ppd(d, user_scratchpad_attr(), engine());
    pool_ = dnnl::pooling_v2_forward(ppd);
    user_dst_ = memory(user_dst, engine(), DNNL_MEMORY_NONE);
    if (ppd.dst_desc() != user_dst) {
      pooled_ = scratch_memory(ppd.dst_desc());
      from_dst_ = make_reorder(pooled_, user_dst_);
    }
  }

  void run_pooled(KernelIO& io, const Tensor& x) {
    if (s_.sum) check_input(io.in(3), s_.y_shape, s_.sum_layout, what_, 3);
    Tensor& y = io.outputs[0];
    guarded(what_, [&] {
      bind_x(x);
      if (s_.sum) {
        user_sum_.set_data_handle(handle(io.in(3)));
        execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
      }
      execute(prim_, args_);
      run_act_after();
      user_dst_.set_data_handle(y.raw());
      run_pool(pool_, dst_, pooled_, from_dst_, user_dst_);
    });
  }

  // Winograd and the N-d blocked convs: X -> blocked, (Sum -> blocked dst), conv, blocked dst
  // -> Y. Y may share Sum's storage: Sum is read before Y is written. The skip convolution's
  // Sum is Y.
  void run_reordered(KernelIO& io, const Tensor& x, Tensor& y) {
    const Tensor* sum = skip_ ? &y : s_.sum ? &io.in(3) : nullptr;
    if (sum && !skip_) check_input(*sum, s_.y_shape, s_.sum_layout, what_, 3);
    guarded(what_, [&] {
      user_src_.set_data_handle(handle(x));
      execute(to_nhwc_, {{DNNL_ARG_FROM, user_src_}, {DNNL_ARG_TO, src_}});
      if (sum) {
        user_sum_.set_data_handle(handle(*sum));
        execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
      }
      execute(prim_, args_);
      run_act_after();
      user_dst_.set_data_handle(y.raw());
      execute(from_dst_, {{DNNL_ARG_FROM, dst_}, {DNNL_ARG_TO, user_dst_}});
    });
  }

  // The skip convolution, a kernel of its own whose weights are prepacked like these.
  void make_skip(const NodeInfo& info) {
    const ref::SkipPart part = ref::skip_part(info.node);
    const NodeInfo si = skip_info(info, part);
    std::optional<ConvSpec> k = conv_spec(si, ConvOp::kConv);
    NNFUSE_CHECK(k, what_, ": the skip convolution is not accepted by the oneDNN kernel");
    skip_ = std::make_unique<ConvKernel>(si, *k);
  }

  // The skip convolution of X2 (input 4) into Y, for the sum post-op to add to.
  void run_skip(KernelIO& io, const Tensor& x, Tensor& y) {
    NNFUSE_CHECK(io.has_input(ref::kSkipInput), what_, ": the skip convolution's input is missing");
    const Tensor& x2 = io.in(ref::kSkipInput);
    NNFUSE_CHECK(y.raw() != x.raw() && y.raw() != x2.raw(), what_,
                 ": the output may not share an input's storage");
    KernelIO part;
    part.inputs = {&x2};
    part.outputs.push_back(Tensor::borrow(DType::kFloat32, s_.y_shape, y.raw()));
    part.outputs[0].set_layout(s_.out_layout);
    part.scratch = io.scratch;
    skip_->run(part);
  }

  // Leaves the residual in y for the sum post-op: a copy, a reorder from plain, or nothing
  // when y already is Sum's storage (in place).
  void put_sum(const Tensor& sum, const Tensor& x, Tensor& y) {
    check_input(sum, s_.y_shape, s_.sum_layout, what_, 3);
    NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
    if (y.raw() == sum.raw()) {
      NNFUSE_CHECK(!sum_to_dst_, what_, ": the output shares Sum's storage in another layout");
      return;
    }
    if (sum_to_dst_) {
      guarded(what_, [&] {
        user_sum_.set_data_handle(handle(sum));
        dst_.set_data_handle(y.raw());
        execute(sum_to_dst_, {{DNNL_ARG_FROM, user_sum_}, {DNNL_ARG_TO, dst_}});
      });
      return;
    }
    const auto* from = static_cast<const std::byte*>(sum.raw());
    auto* to = static_cast<std::byte*>(y.raw());
    cpu::parallel_range(static_cast<int64_t>(y.nbytes()), 4 * cpu::kParallelGrain,
                        [&](int64_t b, int64_t e) { std::memcpy(to + b, from + b, e - b); });
  }

  memory scratch_memory(const memory::desc& d) { return scratch_.add(d); }
  void bind_scratch(std::byte* scratch) { scratch_.bind(scratch); }

  std::string what_;
  ConvSpec s_;
  std::unique_ptr<ConvKernel> skip_;  // the skip convolution (ConvSpec::skip)
  ScratchParts scratch_;
  OwnedBuffers packed_;  // under the prepacked weights and bias
  dnnl::primitive prim_, to_nhwc_, sum_to_dst_, from_dst_, pool_;
  std::vector<dnnl::primitive> act_after_;
  memory src_, dst_, weights_, user_src_, user_sum_, user_dst_, pooled_;
  // Per output: the pitch of its rows as a part of a Concat in place (write_output_rows), or 0.
  std::vector<int64_t> rows_pitch_;
  std::unordered_map<int, memory> args_;
  std::mutex mu_;  // the memory objects are rebound on every run
};

// The same conv on the project's own Winograd F(4x4, 3x3) kernel (own_winograd_fits): NHWC in,
// NHWC out (at a Concat's pitch where it is a part of one), the bias, residual and activation
// applied as the tiles are written. FusedConvPool's conv writes an NHWC buffer in the run's
// scratch, which oneDNN's pooling reads (in cache) into Y, through a reorder where Y wants
// another layout or is a part of a Concat.
class OwnWinogradKernel : public Kernel {
 public:
  OwnWinogradKernel(const NodeInfo& info, const ConvSpec& s)
      : what_(info.node.describe()),
        s_(s),
        conv_(geometry(s), info.constant(1)->data<float>(),
              s.bias ? info.constant(2)->data<float>() : nullptr, s.act, info.num_threads),
        scratch_(conv_.scratch_bytes()) {
    if (s_.pool) guarded(what_, [&] { init_pool(); });
  }

  bool reads_input(size_t i) const override { return i != 1 && i != 2; }
  size_t scratch_bytes() const override { return scratch_.bytes(); }
  void release_own_scratch() { scratch_.release_own(); }
  std::string algorithm() const override { return "Winograd F(4x4, 3x3)"; }

  // Concat in place: the output tiles (or the pooled output, reordered) are written at any
  // pitch. Not with a residual, which is read at the output's own.
  bool write_output_rows(size_t k, int64_t pitch) override {
    const Dims& y = s_.pool ? s_.pool_spec.y_shape : s_.y_shape;
    const Layout layout = s_.pool ? s_.pool_out_layout : s_.out_layout;
    if (k != 0 || pitch_ != 0 || s_.sum || layout != Layout::kNHWC || pitch < y[1]) return false;
    if (s_.pool) {
      guarded(what_, [&] {
        const memory::desc rows = rows_desc(y, pitch);
        if (!pooled_) pooled_ = scratch_.add(pool_dst_desc_);
        user_dst_ = memory(rows, engine(), DNNL_MEMORY_NONE);
        from_pooled_ = make_reorder(pooled_, user_dst_);
      });
    }
    pitch_ = pitch;
    return true;
  }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    NNFUSE_CHECK(pitch_ == 0 || io.outputs[0].defined(), what_,
                 ": output 0 is a part of a Concat in place but has no planned storage");
    Tensor& y = s_.pool ? io.output(0, DType::kFloat32, s_.pool_spec.y_shape, s_.pool_out_layout)
                        : io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
    const float* sum = nullptr;
    if (s_.sum) {
      const Tensor& t = io.in(3);
      check_input(t, s_.y_shape, s_.sum_layout, what_, 3);
      sum = t.data<float>();
      NNFUSE_CHECK(!s_.pool || t.raw() != y.raw(), what_,
                   ": the pooled output may not share Sum's storage");
    }
    std::lock_guard<std::mutex> lock(mu_);  // guards the memory objects and the own scratch
    std::byte* scratch = scratch_.bind(io.scratch);
    if (!s_.pool) {
      conv_.run(x.data<float>(), y.data<float>(), pitch_ != 0 ? pitch_ : s_.y_shape[1], sum,
                scratch);
      return;
    }
    conv_.run(x.data<float>(), static_cast<float*>(conv_out_.get_data_handle()), s_.y_shape[1], sum,
              scratch);
    guarded(what_, [&] {
      user_dst_.set_data_handle(y.raw());
      run_pool(pool_, conv_out_, pooled_, from_pooled_, user_dst_);
    });
  }

 private:
  static cpu::WinogradGeometry geometry(const ConvSpec& s) {
    cpu::WinogradGeometry g;
    g.n = s.x_shape[0];
    g.cin = s.x_shape[1];
    g.h = s.x_shape[2];
    g.w = s.x_shape[3];
    g.cout = s.y_shape[1];
    g.oh = s.y_shape[2];
    g.ow = s.y_shape[3];
    g.pad_t = s.pad_l[0];
    g.pad_l = s.pad_l[1];
    return g;
  }

  // The pool over the conv's NHWC output, in oneDNN's format for it; pooled into a scratch
  // buffer and reordered where Y's layout differs.
  void init_pool() {
    const PoolSpec& p = s_.pool_spec;
    conv_out_ = scratch_.add(f32_desc(s_.y_shape, Layout::kNHWC));
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg,
                                     conv_out_.get_desc(), f32_desc(p.y_shape, Tag::any),
                                     to_dims(p.strides), to_dims(p.kernel), to_dims(p.dilations),
                                     to_dims(p.pad_l), to_dims(p.pad_r));
    dnnl::pooling_v2_forward::primitive_desc ppd(d, user_scratchpad_attr(), engine());
    pool_ = dnnl::pooling_v2_forward(ppd);
    pool_dst_desc_ = ppd.dst_desc();
    user_dst_ = memory(f32_desc(p.y_shape, s_.pool_out_layout), engine(), DNNL_MEMORY_NONE);
    if (pool_dst_desc_ != user_dst_.get_desc()) {
      pooled_ = scratch_.add(pool_dst_desc_);
      from_pooled_ = make_reorder(pooled_, user_dst_);
    }
  }

  std::string what_;
  ConvSpec s_;
  cpu::WinogradConv conv_;
  // The Winograd kernel's scratch first, then the pool's buffers.
  ScratchParts scratch_;
  int64_t pitch_ = 0;  // the output's pitch as a part of a Concat in place, or 0
  dnnl::primitive pool_, from_pooled_;
  memory conv_out_, pooled_, user_dst_;
  memory::desc pool_dst_desc_;
  std::mutex mu_;
};

// The same conv on the project's own depthwise kernel (own_depthwise_fits): NHWC in and out,
// the bias and activation applied as the outputs are written.
class OwnDepthwiseKernel : public Kernel {
 public:
  OwnDepthwiseKernel(const NodeInfo& info, const ConvSpec& s)
      : what_(info.node.describe()),
        s_(s),
        conv_(depthwise_geometry(s), info.constant(1)->data<float>(),
              s.bias ? info.constant(2)->data<float>() : nullptr, s.act, info.num_threads) {}

  bool reads_input(size_t i) const override { return i != 1 && i != 2; }
  std::string algorithm() const override { return "depthwise (own)"; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    check_input(x, s_.x_shape, s_.in_layout, what_, 0);
    Tensor& y = io.output(0, DType::kFloat32, s_.y_shape, s_.out_layout);
    NNFUSE_CHECK(y.raw() != x.raw(), what_, ": the output may not share X's storage");
    conv_.run(x.data<float>(), y.data<float>());
  }

 private:
  std::string what_;
  ConvSpec s_;
  cpu::DepthwiseConv conv_;
};

template <ConvOp kOp>
std::string declines(const NodeInfo& info) {
  std::string why;
  std::optional<ConvSpec> s = conv_spec(info, kOp, &why);
  if (!s) return why;
  try {
    ThreadScope threads(info.num_threads);
    make_pd(*s);  // some combinations (e.g. large negative padding) have no implementation
    if (s->skip) {
      std::optional<ConvSpec> k = skip_spec(info, *s, &why);
      if (!k) return why;
      make_pd(*k);
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("oneDNN has no implementation for it (") + e.what() + ")";
  }
}

template <ConvOp kOp>
bool accepts(const NodeInfo& info) {
  return declines<kOp>(info).empty();
}

// Channels-last (ConvSpec::out_layout) at every rank a conv runs.
Layout output_layout(const NodeInfo& info, size_t /*k*/) {
  std::optional<Dims> x = known_shape(info, 0);
  return x && channels_last_rank(x->size()) ? Layout::kNHWC : Layout::kPlain;
}

Layout conv_pool_output_layout(const NodeInfo& info, size_t /*k*/) {
  return pool_output_layout(info.node);
}

// Timing runs of one candidate kernel for a conv, on inputs of the spec's shapes and layouts.
class TimedKernel {
 public:
  TimedKernel(Kernel& k, const NodeInfo& info, const ConvSpec& s)
      : k_(k), x_(DType::kFloat32, s.x_shape) {
    x_.set_layout(s.in_layout);
    std::fill_n(x_.data<float>(), x_.numel(), 0.5f);
    io_.inputs = {&x_, info.constant(1), info.has_input(2) ? info.constant(2) : nullptr};
    if (s.sum) {
      sum_ = Tensor(DType::kFloat32, s.y_shape);
      sum_.set_layout(s.sum_layout);
      std::fill_n(sum_.data<float>(), sum_.numel(), 0.25f);
      io_.inputs.push_back(&sum_);
    }
    io_.outputs.resize(1);
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
  Tensor x_, sum_;
  KernelIO io_;
  double best_ = std::numeric_limits<double>::infinity();
};

// The conv algorithms measured_kernel chooses from.
enum class ConvAlgorithm { kDirect, kWinograd, kOwnWinograd, kOwnDepthwise };

// Rounds of timing runs measured_kernel makes, each candidate once per round in turn, so a
// burst of other work on the machine slows every candidate alike.
constexpr int kTimingRounds = 5;

// A depthwise conv whose kernel is measured when built (the project's against oneDNN's).
bool depthwise_measured_here(const ConvSpec& s) {
  return depthwise_mode() == DepthwiseMode::kMeasure && own_depthwise_fits(s);
}

// For a conv winograd_measured_here or depthwise_measured_here: the direct algorithm and the
// others that can run it (oneDNN's Winograd, the project's Winograd, the project's depthwise
// kernel) built and timed on this machine, the fastest kept. oneDNN's Winograd only for a clear
// win, under 0.9 of the direct time: its scratchpad, in cache when timed alone, competes with
// the network's other tensors when it runs in one. The project's Winograd under 0.95: its
// buffers are sized for each thread's L2 cache, and with every cache evicted before each run its
// time relative to the direct kernel's rose by 0.02-0.13 (AMD EPYC, Zen 5: 0.43-0.76 warm,
// 0.52-0.79 evicted, 14x14 to 56x56 maps). The project's depthwise kernel under 0.95 too (it
// reads and writes what oneDNN's does, with no buffer of its own): on MobileNetV3's unstrided
// layers it took 0.59-0.74 of oneDNN's time warm; evicted, 0.62-0.66 on 14x14 and 7x7 maps but
// 1.06-1.21 on 28x28 and 56x56 ones of few channels; inside the network, 0.73-0.96. The choice
// is remembered per geometry for the process, so a network's repeated layers measure once.
std::unique_ptr<Kernel> measured_kernel(const NodeInfo& info, ConvSpec s) {
  static std::mutex mu;
  static std::map<std::string, ConvAlgorithm> chosen;
  const std::string key =
      dims_str(s.x_shape) + dims_str(s.w_shape) + dims_str(s.y_shape) + dims_str(s.strides) +
      dims_str(s.pad_l) + dims_str(s.pad_r) + std::to_string(s.group) + layout_name(s.in_layout) +
      (s.pool ? "pool" : "") + (s.sum ? "sum" : "") + std::to_string(static_cast<int>(s.act.kind)) +
      std::to_string(info.num_threads);
  std::lock_guard<std::mutex> lock(mu);
  auto it = chosen.find(key);
  s.winograd = false;
  ConvSpec w = s;
  w.winograd = true;
  if (it != chosen.end()) {
    switch (it->second) {
      case ConvAlgorithm::kOwnWinograd:
        return std::make_unique<OwnWinogradKernel>(info, s);
      case ConvAlgorithm::kOwnDepthwise:
        return std::make_unique<OwnDepthwiseKernel>(info, s);
      case ConvAlgorithm::kWinograd:
        return std::make_unique<ConvKernel>(info, w);
      case ConvAlgorithm::kDirect:
        break;
    }
    return std::make_unique<ConvKernel>(info, s);
  }
  auto direct = std::make_unique<ConvKernel>(info, s);
  std::unique_ptr<ConvKernel> winograd;
  std::unique_ptr<OwnWinogradKernel> own;
  if (winograd_measured_here(s)) {
    winograd = std::make_unique<ConvKernel>(info, w);
    if (!winograd->runs_winograd()) winograd.reset();
    if (own_winograd_fits(s)) own = std::make_unique<OwnWinogradKernel>(info, s);
  }
  std::unique_ptr<OwnDepthwiseKernel> depthwise;
  if (depthwise_measured_here(s)) depthwise = std::make_unique<OwnDepthwiseKernel>(info, s);
  ThreadScope threads(info.num_threads);
  std::vector<std::unique_ptr<TimedKernel>> timed;
  timed.push_back(std::make_unique<TimedKernel>(*direct, info, s));
  auto candidate = [&](Kernel* k, const ConvSpec& spec) -> TimedKernel* {
    if (!k) return nullptr;
    timed.push_back(std::make_unique<TimedKernel>(*k, info, spec));
    return timed.back().get();
  };
  TimedKernel* t_winograd = candidate(winograd.get(), w);
  TimedKernel* t_own = candidate(own.get(), s);
  TimedKernel* t_depthwise = candidate(depthwise.get(), s);
  for (int r = 0; r < kTimingRounds; ++r) {
    for (auto& t : timed) t->run();
  }
  const double td = timed[0]->best();
  ConvAlgorithm pick = ConvAlgorithm::kDirect;
  double best = td;
  if (t_winograd && t_winograd->best() < 0.9 * td) {
    pick = ConvAlgorithm::kWinograd;
    best = t_winograd->best();
  }
  if (t_own && t_own->best() < 0.95 * td && t_own->best() < best) {
    pick = ConvAlgorithm::kOwnWinograd;
  }
  if (t_depthwise && t_depthwise->best() < 0.95 * td) pick = ConvAlgorithm::kOwnDepthwise;
  chosen[key] = pick;
  // The kept kernel's timing scratch is freed: the plan gives its runs the shared scratch.
  switch (pick) {
    case ConvAlgorithm::kOwnWinograd:
      own->release_own_scratch();
      return own;
    case ConvAlgorithm::kOwnDepthwise:
      return depthwise;
    case ConvAlgorithm::kWinograd:
      winograd->release_own_scratch();
      return winograd;
    case ConvAlgorithm::kDirect:
      break;
  }
  direct->release_own_scratch();
  return direct;
}

template <ConvOp kOp>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  std::optional<ConvSpec> s = conv_spec(info, kOp);
  if (!s) fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by the oneDNN kernel");
  if (winograd_mode() == WinogradMode::kOwn && own_winograd_fits(*s)) {
    return std::make_unique<OwnWinogradKernel>(info, *s);
  }
  if (depthwise_mode() == DepthwiseMode::kOwn && own_depthwise_fits(*s)) {
    return std::make_unique<OwnDepthwiseKernel>(info, *s);
  }
  if (winograd_measured_here(*s) || depthwise_measured_here(*s)) return measured_kernel(info, *s);
  return std::make_unique<ConvKernel>(info, *s);
}

// FusedConv's output may take the residual's storage (the sum post-op then reads it in
// place) when Sum arrives in the output's layout and is not also X.
int fused_in_place(const NodeInfo& info, size_t k) {
  if (k != 0 || !info.has_input(3)) return -1;
  for (size_t i = 0; i < 3; ++i) {
    if (info.input(i) == info.input(3)) return -1;
  }
  std::optional<ConvSpec> s = conv_spec(info, ConvOp::kFused);
  return s && s->sum && s->sum_layout == s->out_layout ? 3 : -1;
}

template <ConvOp kOp>
KernelFactory factory(const char* name, Layout (*layout)(const NodeInfo&, size_t),
                      int (*in_place)(const NodeInfo&, size_t)) {
  return {name, accepts<kOp>, layout, create<kOp>, in_place, declines<kOp>};
}

}  // namespace

KernelFactory fused_conv_pool_factory() {
  return factory<ConvOp::kFusedPool>("onednn.fused_conv_pool", conv_pool_output_layout, nullptr);
}

KernelFactory conv_factory() {
  return factory<ConvOp::kConv>("onednn.conv", output_layout, nullptr);
}

KernelFactory conv_transpose_factory() {
  return factory<ConvOp::kTranspose>("onednn.conv_transpose", output_layout, nullptr);
}

KernelFactory fused_conv_split_factory() {
  return factory<ConvOp::kFusedSplit>("onednn.fused_conv_split", output_layout, nullptr);
}

KernelFactory fused_conv_factory() {
  return factory<ConvOp::kFused>("onednn.fused_conv", output_layout, fused_in_place);
}

}  // namespace nnfuse::onednn
