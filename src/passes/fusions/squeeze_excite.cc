// SqueezeExciteFusionPass: a squeeze-and-excitation block's scale,
//   act2(Conv(act1(Conv(GlobalAveragePool(X), W1, B1)), W2, B2))
// (or ReduceMean(X, axes [2, 3], keepdims) for the pool),
// becomes SqueezeExcite(X, W1, B1, W2, B2) (ai.nnfuse, kernels/ref/squeeze_excite.h): the pool
// and two products of one row per image in one kernel instead of three, the pooled and squeezed
// rows never leaving it (MobileNetV3's, EfficientNet's, RegNetY's and SE-ResNet's blocks). Each
// of those three kernels moves a few kilobytes, so what they cost is their launches: on
// MobileNetV3-small, the two products took 2.5 to 9 us each, as long as the pools.

#include <algorithm>

#include "ir/builder.h"
#include "ops/conv_blocks.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

// "" when the part (a Conv or FusedConv reading the pooled or squeezed row) is a plain 1x1
// product with constant weights and bias, else why not.
std::string plain_product(const Node& conv, const char* part) {
  const std::string who = std::string("the ") + part + " convolution";
  if (std::string why = conv_part_reason(conv, who); !why.empty()) return why;
  const Tensor* w = pattern::constant_value(conv.input(1));
  if (!w || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1) {
    return who + " is not 1x1";
  }
  if (conv.attr_int("group", 1) != 1) return who + " is grouped";
  for (int64_t v : conv.attr_ints("pads", {})) {
    if (v != 0) return who + " is padded";
  }
  return "";
}

// "" when a ReduceMean of a 4-D X is the mean over its spatial axes kept as 1s ([N, C, 1, 1],
// GlobalAveragePool's result: timm's and hand-written blocks' x.mean((2, 3), keepdim=True)).
std::string spatial_mean(const Node& mean) {
  if (mean.attr_int("keepdims", 1) == 0) return "the ReduceMean drops the pooled axes";
  std::vector<int64_t> axes = mean.attr_ints("axes", {});
  if (mean.num_inputs() > 1 && mean.input(1)) {
    const Tensor* t = pattern::constant_value(mean.input(1));
    if (!t) return "the ReduceMean's axes are not a constant";
    axes = t->to_int64_vector();
  }
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3}) return "the ReduceMean is not over the spatial axes";
  return "";
}

Rule squeeze_excite() {
  using namespace pattern;
  auto conv = [](Pat in, const std::string& w, const std::string& name) {
    return any_of({op_in(kFusedDomain, "FusedConv", {in, constant(w)}, false).named(name),
                   op("Conv", {in, constant(w)}, false).named(name)});
  };
  Pat pool = op("GlobalAveragePool", {any("x")}).named("pool").rank(4);
  Pat mean = op("ReduceMean", {any("x")}, false).named("pool").rank(4);
  auto excite = [&](Pat p) { return conv(conv(p, "w1", "squeeze"), "w2", "excite"); };
  return {.name = "SqueezeExciteFusionPass",
          .description =
              "Fuses a squeeze-and-excitation scale (GlobalAveragePool and the two "
              "1x1 convs with their activations) into one kernel",
          .ops = {"GlobalAveragePool", "Conv", "Conv"},
          .patterns = {{"", excite(pool)}, {"mean", excite(mean)}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* sq = m.node("squeeze");
            const Node* ex = m.node("excite");
            if (m["x"]->dtype() != DType::kFloat32) return "the pool is not float32";
            if (m.variant == "mean") {
              if (std::string why = spatial_mean(*m.node("pool")); !why.empty()) return why;
            }
            if (std::string why = plain_product(*sq, "squeeze"); !why.empty()) return why;
            if (std::string why = plain_product(*ex, "excite"); !why.empty()) return why;
            ops::SqueezeExcite se{m["x"], m["w1"], optional_input(sq, 2), m["w2"],
                                  optional_input(ex, 2)};
            se.squeeze = ops::ConvPart::of(*sq);
            se.excite = ops::ConvPart::of(*ex);
            return m.fuse(se.spec());
          }};
}

// The block's Mul of X by the SqueezeExcite of X, where ScaledConvFusionPass left it (no 1x1
// projection reads it, or folding the scale into one does not pay): one kernel that multiplies
// each thread's rows of X by the scale right after pooling them, instead of a separate Mul that
// reads X back, half of it from the other core's cache (MobileNetV3's and EfficientNet's late
// blocks: 14x14 and 7x7 images against 80 to 320 outputs).
Rule squeeze_excite_scale() {
  using namespace pattern;
  Pat se = op_in(kFusedDomain, "SqueezeExcite", {any("sx")}, false).named("se");
  return {.name = "SqueezeExciteScaleFusionPass",
          .description =
              "Fuses the Mul of a tensor by its squeeze-and-excitation scale into the "
              "SqueezeExcite kernel, where no projection conv took the scale",
          .ops = {"SqueezeExcite", "Mul"},
          .patterns = {{"", op("Mul", {any("x"), se}).named("mul")}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* n = m.node("se");
            if (m["x"] != m["sx"]) return "the Mul scales another tensor than the one pooled";
            if (ops::squeeze_excite::applies(*n)) return "the SqueezeExcite already applies";
            const Shape& xs = m["x"]->shape();
            if (!xs.fully_known() || m.root()->output(0)->shape().static_dims() != xs.static_dims())
              return "the Mul's output is not X's shape";
            ops::SqueezeExcite se = ops::SqueezeExcite::of(*n);
            se.apply = true;
            return m.fuse(se.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_squeeze_excite_pass() { return make_rule_pass(squeeze_excite()); }
std::unique_ptr<Pass> make_squeeze_excite_scale_pass() {
  return make_rule_pass(squeeze_excite_scale());
}

}  // namespace nnfuse
