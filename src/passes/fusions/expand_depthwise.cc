// ExpandDepthwiseFusionPass: an inverted residual's 1x1 expansion, or a network's stem
// convolution, and the depthwise convolution that alone reads it,
//   FusedConv(FusedConv(X, W1, B1), W2, B2)   (C -> E, then depthwise k x k over E)
// become ExpandDepthwise(X, W1, B1, W2, B2) (ai.nnfuse, kernels/ref/expand_depthwise.h): the
// expanded tensor (E = 4 to 6 times C channels at the input's resolution: MobileNetV2's,
// MobileNetV3's, EfficientNet's, MnasNet's blocks; or the stem's 32 channels at half the image's
// resolution, before MobileNetV2's, EfficientNet's and MnasNet's first depthwise conv) is
// computed a few rows ahead of the depthwise convolution and read back from the cache, instead
// of being written to memory whole and read back by a second kernel.
//
// Where it pays: the decision is made per block, on the size of the expanded tensor and the
// expansion's input channels. Where the tensor is small (the late 14x14 and 7x7 blocks), it
// stays in the cache between the two convolutions anyway, and oneDNN's separate kernels are as
// fast or faster than the fused one; where the expansion reads many channels, its product
// dominates and oneDNN's GEMM is the faster. The match is then declined with that reason, so
// fusion_result.json names the decision for every block.

#include <cstdlib>

#include "cost/cost.h"
#include "ops/conv_blocks.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

// Expanded tensors from this size on are fused. Measured per block with `nnfuse profile` (the
// fused kernel against the two it replaces, runs alternated) on a 2-core Zen 4 whose memory is
// shared, quiet at times and busy at others: MobileNetV2's 112x112x96 block (4.6 MiB) took 0.58
// to 0.61 of the time, its 56x56x144 ones (1.7 MiB) 0.49 to 0.85; its 28x28x192 ones (0.6 MiB)
// 0.87 to 1.05, 14x14 ones (0.3 to 0.4 MiB) 1.0 to 1.08 when quiet and 0.77 to 0.94 when busy,
// 7x7 ones (0.2 MiB) 1.03 to 1.04. MobileNetV3-small with all its blocks (0.9 MiB and less)
// fused ran 1.00 of the unfused time end to end (bench/compare_switches.py).
constexpr int64_t kMinExpandedBytes = int64_t{1} << 20;
// Expansions of more inputs (channels times kernel taps: 27 for a 3x3 stem over RGB) are
// products where oneDNN's GEMM, blocked for the cache along the inputs, beats the fused
// kernel's, and the traffic saved no longer pays for it: EfficientNetV2-S at 384 (15 blocks of
// 128 and 160 inputs, 1.1 to 2.2 MiB expanded) ran 1.03 and 1.04x the unfused graph's time with
// them fused (bench/compare_switches.py, 7 x 5, twice).
constexpr int64_t kMaxExpansionInputs = 64;

// NNFUSE_EXPAND_DEPTHWISE=force fuses every block whatever its size (to measure where it pays,
// and in tests on small shapes).
bool forced() {
  const char* v = std::getenv("NNFUSE_EXPAND_DEPTHWISE");
  return v && std::string(v) == "force";
}

// A 2-D convolution's output read by a depthwise one over all its channels: the rule's matches
// (any other chain of two convolutions is not one, so it is neither counted nor declined).
bool expansion_then_depthwise(const pattern::Match& m) {
  const Tensor* w1 = pattern::constant_value(m.value("w1"));
  const Tensor* w2 = pattern::constant_value(m.value("w2"));
  if (!w1 || !w2 || w1->rank() != 4 || w2->rank() != 4) return false;
  const int64_t e = w1->dim(0);
  return w2->dim(0) == e && w2->dim(1) == 1 && m.node("depthwise")->attr_int("group", 1) == e;
}

// "" when the expansion is an ungrouped, undilated convolution with explicit pads (a 1x1
// expansion, a stem), else why not.
std::string expansion_reason(const Node& ex) {
  if (std::string why = ops::expand_depthwise::expansion_attrs_reason(ex); !why.empty()) return why;
  return conv_part_reason(ex, "the expansion");
}

// "" when fusing pays for an expanded tensor of this size (or NNFUSE_EXPAND_DEPTHWISE=force),
// else why not.
std::string expansion_pays(const Value& expanded, int64_t inputs) {
  if (!expanded.shape().fully_known() || expanded.shape().dims.size() != 4) {
    return "the expanded tensor has no static 4-D shape";
  }
  if (forced()) return "";
  const int64_t bytes = cost::value_bytes(expanded);
  if (bytes < kMinExpandedBytes) {
    return "does not pay: the expanded tensor (" + std::to_string(bytes / 1024) +
           " KiB) stays in the cache between the two convolutions (fused from " +
           std::to_string(kMinExpandedBytes / 1024) + " KiB)";
  }
  if (inputs > kMaxExpansionInputs) {
    return "does not pay: the expansion reads " + std::to_string(inputs) +
           " inputs a pixel (channels times taps), so its product, not the expanded tensor's "
           "traffic, takes the time, and oneDNN's is the faster (fused up to " +
           std::to_string(kMaxExpansionInputs) + ")";
  }
  return "";
}

// What the expansion multiplies per output pixel: its input channels times its kernel's taps.
int64_t inputs_per_pixel(const Tensor& w1) { return w1.dim(1) * w1.dim(2) * w1.dim(3); }

Rule expand_depthwise() {
  using namespace pattern;
  auto conv = [](Pat in, const std::string& w, const std::string& name) {
    return any_of({op_in(kFusedDomain, "FusedConv", {in, constant(w)}, false).named(name),
                   op("Conv", {in, constant(w)}, false).named(name)});
  };
  return {.name = "ExpandDepthwiseFusionPass",
          .description =
              "Fuses a 1x1 expansion conv (or a stem conv) and the depthwise conv after it into "
              "one kernel that keeps the expanded tensor in the cache, where that tensor is large",
          .ops = {"Conv", "Conv"},
          .patterns = {{"", conv(conv(any("x"), "w1", "expand"), "w2", "depthwise")}},
          .guards = {guard::float32({"x", "w1", "w2"})},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* ex = m.node("expand");
            const Node* dw = m.node("depthwise");
            for (std::string why :
                 {expansion_reason(*ex), conv_part_reason(*dw, "the depthwise convolution"),
                  ops::expand_depthwise::fast_depthwise_reason(
                      *dw, pattern::constant_value(m["w2"])->shape()),
                  expansion_pays(*ex->output(0),
                                 inputs_per_pixel(*pattern::constant_value(m["w1"])))}) {
              if (!why.empty()) return why;
            }
            return m.fuse(ops::ExpandDepthwise{m["x"], m["w1"], optional_input(ex, 2), m["w2"],
                                               optional_input(dw, 2), ops::ConvPart::of(*ex),
                                               ops::ConvPart::of(*dw)}
                              .spec());
          },
          .applies = expansion_then_depthwise};
}

}  // namespace

std::unique_ptr<Pass> make_expand_depthwise_pass() { return make_rule_pass(expand_depthwise()); }

}  // namespace nnfuse
