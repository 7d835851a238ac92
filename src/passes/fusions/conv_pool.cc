// ConvMaxPoolFusionPass: MaxPool(FusedConv(x, W, B, Sum, act)) == FusedConvPool(x, W, B, Sum,
// act, pool_*) (a plain Conv too). It pays where the conv runs Winograd (an unstrided 3x3 with
// enough channels and pixels, cost/winograd_rule.h; VGG's blocks): that conv computes into a
// blocked buffer of its own,
// and the pool then reads that buffer directly, so the full-size conv output is never
// reordered back and written out, only the pooled quarter. Elsewhere the pool would read a
// buffer of the same size as before: no saving, so the match is declined.
#include "cost/winograd_rule.h"
#include "ops/conv.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"

namespace nnfuse {

namespace {

// "" when the conv computes through a buffer of its own (Winograd geometry), else why not.
std::string pool_pays(const Node& conv) {
  const Value* x = conv.input(0);
  const Tensor* w = pattern::constant_value(conv.input(1));
  if (!x->shape().fully_known() || x->shape().dims.size() != 4 || !w || w->rank() != 4) {
    return "the Conv is not 2-D with a known input shape";
  }
  auto all_one = [&](const char* attr) {
    if (!conv.has_attr(attr)) return true;
    for (int64_t v : conv.attr_ints(attr)) {
      if (v != 1) return false;
    }
    return true;
  };
  const Value* y = conv.output(0);
  if (!y || !y->shape().fully_known() || y->shape().dims.size() != 4) {
    return "the Conv's output shape is not known";
  }
  const int64_t c = x->shape().dims[1].value, m = w->dim(0);
  if (conv.attr_int("group", 1) != 1 || w->dim(2) != 3 || w->dim(3) != 3 || !all_one("strides") ||
      !all_one("dilations") ||
      !cost::winograd_pays(c, m, y->shape().dims[2].value, y->shape().dims[3].value)) {
    return "does not pay: only an unstrided 3x3 Conv with enough channels and pixels "
           "(Winograd: 32+ in, 48+ out on 28x28+, 96+ out on 14x14+) computes into a buffer "
           "of its own for the pool to read";
  }
  return "";
}

Rule conv_pool() {
  using namespace pattern;
  Pat conv = any_of({op_in(kFusedDomain, "FusedConv", {any("x"), constant("w")}, false),
                     op("Conv", {any("x"), constant("w")}, false)})
                 .named("conv");
  return {
      .name = "ConvMaxPoolFusionPass",
      .description =
          "Fuses a MaxPool into the Conv before it where the pool can read the "
          "conv's own buffer",
      .ops = {"Conv", "MaxPool"},
      .patterns = {{"", op("MaxPool", {conv}, true).named("pool")}},
      .rewrite = [](const RuleMatch& m) -> std::string {
        const Node* c = m.root()->input(0)->producer();
        const Node* p = m.root();
        if (c->input(0)->dtype() != DType::kFloat32) return "the Conv is not float32";
        if (p->num_outputs() > 1 && p->output(1)) return "the MaxPool's Indices output is used";
        if (std::string why = pool_pays(*c); !why.empty()) return why;
        return m.fuse(ops::FusedConvPool{ops::FusedConv::of(*c), ops::PoolAttrs::of(*p)}.spec());
      }};
}

}  // namespace

std::unique_ptr<Pass> make_conv_pool_pass() { return make_rule_pass(conv_pool()); }

}  // namespace nnfuse
