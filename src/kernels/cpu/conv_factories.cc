// Which kernels may run a convolution node, and which of them the plan measures: the kernel
// factories of Conv, ConvTranspose, FusedConv, FusedConvPool and FusedConvSplit. In each op's
// table (registry order: the project's own kernels among the preferred CPU ones, then oneDNN's):
//
//   Conv, FusedConv:  cpu.winograd, cpu.depthwise, onednn.winograd, onednn.conv or
//                     onednn.fused_conv, then the batch loop over them and the reference kernel
//   FusedConvPool:    cpu.winograd, onednn.winograd, onednn.fused_conv_pool
//   ConvTranspose:    onednn.conv_transpose;  FusedConvSplit: onednn.fused_conv_split
//
// onednn.winograd is oneDNN's Winograd algorithm (onednn_conv.cc), cpu.winograd the project's
// own (cpu_winograd_conv.cc), cpu.depthwise its depthwise kernel (cpu_depthwise_conv.cc); the
// others run oneDNN's direct algorithm. Where the fastest of them depends on the machine they
// are measured candidates (KernelFactory::measured): the plan times them on the node's shapes
// and keeps the fastest, each under its margin of the direct conv's time. Elsewhere the first
// that accepts wins: oneDNN's Winograd where the rule says it pays (cost/winograd_rule.h), the
// direct algorithm otherwise; the own kernels only as measured candidates, or where an
// environment switch asks for them:
//
// NNFUSE_WINOGRAD=0 keeps every conv on the direct algorithm (bit-for-bit closer to the
// reference kernel); =force runs oneDNN's Winograd wherever the geometry allows it, paying or
// not (bench/winograd_rule.py measures the rule with it); =own runs the project's own wherever
// it can (oneDNN's by the rule elsewhere); =rule takes the rule's answer without measuring;
// unset or 1: measured where the answer depends on the machine (winograd_measured).
// NNFUSE_DEPTHWISE=own runs every depthwise conv the project's kernel computes on it, =0 none;
// unset, each is measured. Both are read whenever a kernel is chosen, so a test can set them for
// its own plans. Nothing is measured under ThreadSanitizer: OpenMP's runtime is not built for
// it, and the Winograd kernel built for the measuring transforms its weights in OpenMP's
// threads, which it then reports as racing with the caller that allocated the buffers; oneDNN's
// kernels run there, Winograd by the rule.
#include <cstdlib>
#include <optional>
#include <string>

#include "cost/winograd_rule.h"
#include "kernels/cpu/cpu_conv.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {

namespace {

// The margins of the measured selection: the share of oneDNN's direct conv's best time (each
// candidate timed alone, 5 rounds in turn) that a candidate must beat to be kept.
//
// oneDNN's Winograd, only for a clear win: its scratchpad, in cache when timed alone, competes
// with the network's other tensors when it runs in one.
constexpr double kOneDnnWinogradMargin = 0.9;
// The project's Winograd: its buffers are sized for each thread's L2 cache, and with every cache
// evicted before each run its time relative to the direct kernel's rose by 0.02-0.13 (AMD EPYC,
// Zen 5: 0.43-0.76 warm, 0.52-0.79 evicted, 14x14 to 56x56 maps).
constexpr double kOwnWinogradMargin = 0.95;
// The project's depthwise kernel (it reads and writes what oneDNN's does, with no buffer of its
// own): on MobileNetV3's unstrided layers it took 0.59-0.74 of oneDNN's time warm; evicted,
// 0.62-0.66 on 14x14 and 7x7 maps but 1.06-1.21 on 28x28 and 56x56 ones of few channels; inside
// the network, 0.73-0.96.
constexpr double kOwnDepthwiseMargin = 0.95;

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

// Convs whose algorithm is measured: every one where Winograd may win on some machine
// (cost/winograd_rule.h: winograd_measured, which says why), whether the rule, calibrated on
// other machines, says it pays or not. Not a conv with a skip convolution, which keeps the
// rule's answer (the timing runs feed no skip inputs).
bool winograd_measured_here(const ConvSpec& s) {
#if defined(__SANITIZE_THREAD__)
  (void)s;
  return false;
#else
  return winograd_mode() == WinogradMode::kMeasure && !s.skip && winograd_geometry(s) &&
         cost::winograd_measured(s.x_shape[1], s.y_shape[1], s.y_shape[2], s.y_shape[3]);
#endif
}

// A depthwise conv measured between oneDNN's kernel and the project's.
bool depthwise_measured_here(const ConvSpec& s) {
  return depthwise_mode() == DepthwiseMode::kMeasure && own_depthwise_declines(s).empty();
}

// oneDNN's Winograd for a conv nothing measures: where the rule says it pays, or wherever
// NNFUSE_WINOGRAD=force asks.
ConvSpec::Winograd winograd_by_rule(const ConvSpec& s) {
  const WinogradMode mode = winograd_mode();
  if (mode == WinogradMode::kOff || !winograd_geometry(s)) return ConvSpec::Winograd::kNo;
  if (mode == WinogradMode::kForce) return ConvSpec::Winograd::kForced;
  return cost::winograd_pays(s.x_shape[1], s.y_shape[1], s.y_shape[2], s.y_shape[3])
             ? ConvSpec::Winograd::kWhereScratchPays
             : ConvSpec::Winograd::kNo;
}

// oneDNN's Winograd for the onednn.winograd kernel: by the rule, and also where it is measured.
ConvSpec::Winograd winograd_asked(const ConvSpec& s) {
  // The quantize round trip is a post-op with an argument, which oneDNN's Winograd, whose
  // activation may run after the conv as eltwise primitives, does not take.
  if (s.act.kind == ref::ActivationKind::kQuantize) return ConvSpec::Winograd::kNo;
  const ConvSpec::Winograd rule = winograd_by_rule(s);
  if (rule == ConvSpec::Winograd::kNo && winograd_measured_here(s)) {
    return ConvSpec::Winograd::kWhereScratchPays;
  }
  return rule;
}

// The skip convolution's spec (its Winograd by the rule), or nullopt and why not.
std::optional<ConvSpec> skip_conv(const NodeInfo& info, const ConvSpec& s, std::string* why) {
  std::optional<ConvSpec> k = skip_spec(info, s, why);
  if (k) k->winograd = winograd_by_rule(*k);
  return k;
}

// Why oneDNN cannot run `s` (and its skip convolution), "" when it can; `winograd`: only where
// it runs Winograd.
std::string onednn_declines(const NodeInfo& info, ConvSpec s, bool winograd) {
  try {
    ThreadScope threads(info.num_threads);
    // Some combinations (e.g. large negative padding) have no implementation.
    if (winograd && !make_pd(s).winograd) {
      return "oneDNN has no Winograd implementation for it here, or one whose scratchpad does not "
             "pay (cost/winograd_rule.h)";
    }
    if (!winograd) make_pd(s);
    if (s.skip) {
      std::string why;
      std::optional<ConvSpec> k = skip_conv(info, s, &why);
      if (!k) return why;
      make_pd(*k);
    }
    return "";
  } catch (const std::exception& e) {
    return std::string("oneDNN has no implementation for it (") + e.what() + ")";
  }
}

// oneDNN's kernel for `s` (its skip convolution's too).
std::unique_ptr<Kernel> onednn_create(const NodeInfo& info, const ConvSpec& s) {
  ThreadScope threads(info.num_threads);
  if (!s.skip) return make_conv_kernel(info, s);
  std::optional<ConvSpec> k = skip_conv(info, s, nullptr);
  NNFUSE_CHECK(k, info.node.describe(), ": the skip convolution is not accepted by oneDNN");
  return make_skip_conv_kernel(info, s, *k);
}

ConvSpec spec_or_fail(const NodeInfo& info, ConvOp op, const char* kernel) {
  std::optional<ConvSpec> s = conv_spec(info, op);
  if (!s) fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by ", kernel);
  return *s;
}

// oneDNN's direct algorithm (onednn.conv, onednn.fused_conv...): the baseline of the measured
// selection.
template <ConvOp kOp>
std::string direct_declines(const NodeInfo& info) {
  std::string why;
  std::optional<ConvSpec> s = conv_spec(info, kOp, &why);
  return s ? onednn_declines(info, *s, false) : why;
}

template <ConvOp kOp>
bool direct_measured(const NodeInfo& info) {
  std::optional<ConvSpec> s = conv_spec(info, kOp);
  return s && (winograd_measured_here(*s) || depthwise_measured_here(*s));
}

template <ConvOp kOp>
std::unique_ptr<Kernel> direct_create(const NodeInfo& info) {
  return onednn_create(info, spec_or_fail(info, kOp, "oneDNN's direct conv"));
}

// oneDNN's Winograd (onednn.winograd).
template <ConvOp kOp>
std::string winograd_declines(const NodeInfo& info, ConvSpec* spec = nullptr) {
  std::string why;
  std::optional<ConvSpec> s = conv_spec(info, kOp, &why);
  if (!s) return why;
  if (winograd_mode() == WinogradMode::kOff) return "NNFUSE_WINOGRAD=0";
  if (!winograd_geometry(*s)) return "not an unstrided, undilated, ungrouped 2-D 3x3 conv";
  if (s->act.kind == ref::ActivationKind::kQuantize) {
    return "its quantize round trip is a post-op Winograd does not take";
  }
  s->winograd = winograd_asked(*s);
  if (s->winograd == ConvSpec::Winograd::kNo) {
    return "Winograd does not pay for it (cost/winograd_rule.h)";
  }
  if (spec) *spec = *s;
  return onednn_declines(info, *s, true);
}

template <ConvOp kOp>
std::string winograd_reason(const NodeInfo& info) {
  return winograd_declines<kOp>(info);
}

template <ConvOp kOp>
bool winograd_measured(const NodeInfo& info) {
  std::optional<ConvSpec> s = conv_spec(info, kOp);
  return s && winograd_measured_here(*s);
}

template <ConvOp kOp>
std::unique_ptr<Kernel> winograd_create(const NodeInfo& info) {
  ConvSpec s;
  if (std::string why = winograd_declines<kOp>(info, &s); !why.empty()) {
    fail(ErrorKind::kInternal, info.node.describe(), ": not accepted by oneDNN's Winograd: ", why);
  }
  return onednn_create(info, s);
}

// The project's Winograd (cpu.winograd): as a measured candidate, or wherever it computes the
// conv with NNFUSE_WINOGRAD=own.
template <ConvOp kOp>
std::string own_winograd_reason(const NodeInfo& info) {
  std::string why;
  std::optional<ConvSpec> s = conv_spec(info, kOp, &why);
  if (!s) return why;
  if (std::string r = own_winograd_declines(*s); !r.empty()) return r;
  if (winograd_mode() == WinogradMode::kOwn || winograd_measured_here(*s)) return "";
  return "runs only where measured faster than oneDNN's kernels (cost/winograd_rule.h: "
         "winograd_measured), or with NNFUSE_WINOGRAD=own";
}

template <ConvOp kOp>
std::unique_ptr<Kernel> own_winograd_create(const NodeInfo& info) {
  return make_own_winograd_kernel(info, spec_or_fail(info, kOp, "the own Winograd kernel"));
}

// The project's depthwise kernel (cpu.depthwise): as a measured candidate, or wherever it
// computes the conv with NNFUSE_DEPTHWISE=own.
template <ConvOp kOp>
std::string own_depthwise_reason(const NodeInfo& info) {
  std::string why;
  std::optional<ConvSpec> s = conv_spec(info, kOp, &why);
  if (!s) return why;
  if (std::string r = own_depthwise_declines(*s); !r.empty()) return r;
  if (depthwise_mode() == DepthwiseMode::kOff) {
    return "NNFUSE_DEPTHWISE=0 (or a ThreadSanitizer build)";
  }
  return "";
}

bool own_depthwise_measured(const NodeInfo&) { return depthwise_mode() == DepthwiseMode::kMeasure; }

template <ConvOp kOp>
std::unique_ptr<Kernel> own_depthwise_create(const NodeInfo& info) {
  return make_own_depthwise_kernel(info, spec_or_fail(info, kOp, "the own depthwise kernel"));
}

// Channels-last (ConvSpec::out_layout) at every rank a conv runs.
Layout output_layout(const NodeInfo& info, size_t /*k*/) {
  std::optional<Dims> x = known_shape(info, 0);
  return x && channels_last_rank(x->size()) ? Layout::kNHWC : Layout::kPlain;
}

Layout conv_pool_output_layout(const NodeInfo& info, size_t /*k*/) {
  return pool_output_layout(info.node);
}

template <ConvOp kOp>
Layout (*layout_of())(const NodeInfo&, size_t) {
  return kOp == ConvOp::kFusedPool ? conv_pool_output_layout : output_layout;
}

// FusedConv's output may take the residual's storage (the sum post-op, or the own Winograd
// kernel's output transform, then reads it in place) when Sum arrives in the output's layout
// and is not also X.
int fused_in_place(const NodeInfo& info, size_t k) {
  if (k != 0 || !info.has_input(3)) return -1;
  for (size_t i = 0; i < 3; ++i) {
    if (info.input(i) == info.input(3)) return -1;
  }
  std::optional<ConvSpec> s = conv_spec(info, ConvOp::kFused);
  return s && s->sum && s->sum_layout == s->out_layout ? 3 : -1;
}

template <ConvOp kOp>
int (*in_place_of())(const NodeInfo&, size_t) {
  return kOp == ConvOp::kFused ? fused_in_place : nullptr;
}

template <ConvOp kOp>
KernelFactory direct_factory(const char* name) {
  return {.name = name,
          .accepts = accepts_unless_declined<direct_declines<kOp>>,
          .output_layout = layout_of<kOp>(),
          .create = direct_create<kOp>,
          .in_place_input = in_place_of<kOp>(),
          .declines = direct_declines<kOp>,
          .measured = kOp == ConvOp::kTranspose || kOp == ConvOp::kFusedSplit
                          ? nullptr
                          : direct_measured<kOp>};
}

template <ConvOp kOp>
KernelFactory winograd_factory() {
  return {.name = "onednn.winograd",
          .accepts = accepts_unless_declined<winograd_reason<kOp>>,
          .output_layout = layout_of<kOp>(),
          .create = winograd_create<kOp>,
          .in_place_input = in_place_of<kOp>(),
          .declines = winograd_reason<kOp>,
          .measured = winograd_measured<kOp>,
          .measured_margin = kOneDnnWinogradMargin};
}

template <ConvOp kOp>
KernelFactory own_winograd_factory() {
  return {.name = "cpu.winograd",
          .accepts = accepts_unless_declined<own_winograd_reason<kOp>>,
          .output_layout = layout_of<kOp>(),
          .create = own_winograd_create<kOp>,
          .in_place_input = in_place_of<kOp>(),
          .declines = own_winograd_reason<kOp>,
          .measured = winograd_measured<kOp>,
          .measured_margin = kOwnWinogradMargin};
}

template <ConvOp kOp>
KernelFactory own_depthwise_factory() {
  return {.name = "cpu.depthwise",
          .accepts = accepts_unless_declined<own_depthwise_reason<kOp>>,
          .output_layout = layout_of<kOp>(),
          .create = own_depthwise_create<kOp>,
          .declines = own_depthwise_reason<kOp>,
          .measured = own_depthwise_measured,
          .measured_margin = kOwnDepthwiseMargin};
}

}  // namespace

KernelFactory conv_factory() { return direct_factory<ConvOp::kConv>("onednn.conv"); }
KernelFactory conv_transpose_factory() {
  return direct_factory<ConvOp::kTranspose>("onednn.conv_transpose");
}
KernelFactory fused_conv_factory() { return direct_factory<ConvOp::kFused>("onednn.fused_conv"); }
KernelFactory fused_conv_pool_factory() {
  return direct_factory<ConvOp::kFusedPool>("onednn.fused_conv_pool");
}
KernelFactory fused_conv_split_factory() {
  return direct_factory<ConvOp::kFusedSplit>("onednn.fused_conv_split");
}
KernelFactory conv_winograd_factory() { return winograd_factory<ConvOp::kConv>(); }
KernelFactory fused_conv_winograd_factory() { return winograd_factory<ConvOp::kFused>(); }
KernelFactory fused_conv_pool_winograd_factory() { return winograd_factory<ConvOp::kFusedPool>(); }

}  // namespace nnfuse::onednn

namespace nnfuse::cpu {

void append_conv_kernels(FactoryTable& t) {
  using onednn::ConvOp;
  t.emplace_back("Conv", onednn::own_winograd_factory<ConvOp::kConv>());
  t.emplace_back("Conv", onednn::own_depthwise_factory<ConvOp::kConv>());
  t.emplace_back("FusedConv", onednn::own_winograd_factory<ConvOp::kFused>());
  t.emplace_back("FusedConv", onednn::own_depthwise_factory<ConvOp::kFused>());
  t.emplace_back("FusedConvPool", onednn::own_winograd_factory<ConvOp::kFusedPool>());
}

}  // namespace nnfuse::cpu
