// Pads folded into the op that reads them:
//   PadConvFusionPass: Conv(Pad(x, p)) == Conv(x) with p added to the Conv's pads, when the Pad
//                      is constant-mode with value 0, pads only spatial dims, and adds no
//                      negative padding.
//   PadPoolFusionPass: AveragePool(Pad(x, p)) == AveragePool(x) with p added to its pads and
//                      count_include_pad = 1 (the padded zeros count in the divisor), for a zero
//                      Pad; MaxPool(Pad(x, p)) == MaxPool(x) with p added to its pads for a
//                      Pad of -inf (MaxPool's pads never win a max). Both need ceil_mode 0: a
//                      ceil-mode window past the padded input would be clipped differently.
#include <cmath>
#include <limits>

#include "ops/onnx_ops.h"
#include "passes/fusions/fusions.h"
#include "passes/fusions/rule.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

// The Pad's spatial pads as an ONNX pads attribute (begins then ends) for an op with `sp`
// spatial dims, after checking the Pad pads only those, by a constant value for which `value_ok`
// holds, and never crops; "" in *why when it folds.
std::vector<int64_t> spatial_pads(const Node& pn, const Value* pads, bool (*value_ok)(double),
                                  const char* value_name, std::string* why) {
  *why = "";
  if (pn.attr_string("mode", "constant") != "constant") {
    *why = "the Pad is not constant-mode";
    return {};
  }
  double value = 0.0;
  if (pn.num_inputs() > 2 && pn.input(2)) {
    const Tensor* v = pattern::constant_value(pn.input(2));
    if (!v || v->numel() != 1) {
      *why = "the Pad value is not a constant scalar";
      return {};
    }
    value = v->double_at(0);
  }
  if (!value_ok(value)) {
    *why = std::string("the Pad value is not ") + value_name;
    return {};
  }
  if (pn.num_inputs() > 3 && pn.input(3)) {
    *why = "the Pad has an axes input";
    return {};
  }
  std::vector<int64_t> p = pattern::constant_value(pads)->to_int64_vector();
  const size_t r = p.size() / 2;
  if (r < 3) {
    *why = "the Pad is not over a batch, channel and spatial dims";
    return {};
  }
  for (size_t i = 0; i < 2; ++i) {
    if (p[i] != 0 || p[r + i] != 0) {
      *why = "the Pad pads the batch or channel dim";
      return {};
    }
  }
  const size_t sp = r - 2;
  std::vector<int64_t> out(2 * sp);
  for (size_t i = 0; i < sp; ++i) {
    if (p[2 + i] < 0 || p[r + 2 + i] < 0) {
      *why = "the Pad crops (negative pads)";
      return {};
    }
    out[i] = p[2 + i];
    out[sp + i] = p[r + 2 + i];
  }
  return out;
}

// The node's pads attribute plus `extra` into *pads; "" when it fits.
std::string add_pads(const Node& n, const std::vector<int64_t>& extra, std::optional<Dims>* pads) {
  const size_t sp = extra.size() / 2;
  std::vector<int64_t> cp = n.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (cp.size() != 2 * sp) return "the " + n.op_type() + "'s pads do not match the Pad's rank";
  for (size_t i = 0; i < cp.size(); ++i) cp[i] += extra[i];
  *pads = std::move(cp);
  return "";
}

bool is_zero(double v) { return v == 0.0; }
bool is_minus_inf(double v) { return std::isinf(v) && v < 0; }

Rule pad_conv() {
  using namespace pattern;
  Pat pad = op("Pad", {any("x"), constant("pads")}, false).named("pad");
  return {.name = "PadConvFusionPass",
          .description = "Folds a zero Pad into the following Conv's pads",
          .ops = {"Pad", "Conv"},
          .patterns = {{"", op("Conv", {pad, constant("w")}, false).named("conv")}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* cn = m.node("conv");
            std::string why;
            std::vector<int64_t> p = spatial_pads(*m.node("pad"), m["pads"], is_zero, "0", &why);
            if (!why.empty()) return why;
            if (cn->attr_string("auto_pad", "NOTSET") != "NOTSET") return "the Conv uses auto_pad";
            ops::Conv conv{m["x"], m["w"], optional_input(cn, 2), ops::ConvAttrs::of(*cn)};
            if (why = add_pads(*cn, p, &conv.conv.pads); !why.empty()) return why;
            return m.fuse(conv.spec());
          }};
}

// "" when the pool takes the Pad's pads as its own (no auto_pad or ceil_mode, uncounted pads of
// its own, the sum narrower than the window; ONNX pools take no wider pads), with `attrs` its
// attributes so padded.
std::string pool_takes_pads(const Node& pn, bool is_avg, const std::vector<int64_t>& p,
                            ops::PoolAttrs* attrs) {
  if (pn.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return "the " + pn.op_type() + " uses auto_pad";
  if (pn.attr_int("ceil_mode", 0) != 0) return "the " + pn.op_type() + " uses ceil_mode";
  if (pn.num_outputs() > 1 && pn.output(1)) return "the MaxPool's indices are used";
  if (is_avg && pn.attr_int("count_include_pad", 0) == 0) {
    for (int64_t v : pn.attr_ints("pads", {})) {
      if (v != 0) return "the AveragePool has pads of its own that it does not count";
    }
  }
  *attrs = ops::PoolAttrs::of(pn);
  if (std::string why = add_pads(pn, p, &attrs->pads); !why.empty()) return why;
  const std::vector<int64_t> k = pn.attr_ints("kernel_shape", {});
  const size_t sp = p.size() / 2;
  const std::vector<int64_t> d = pn.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  if (k.size() != sp || d.size() != sp) {
    return "the " + pn.op_type() + "'s kernel_shape does not match the Pad's rank";
  }
  const std::vector<int64_t>& np = *attrs->pads;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t span = (k[i] - 1) * d[i] + 1;
    if (np[i] >= span || np[sp + i] >= span)
      return "the pads would not be narrower than the window";
  }
  if (is_avg) attrs->count_include_pad = 1;
  return "";
}

Rule pad_pool() {
  using namespace pattern;
  Pat pad = op("Pad", {any("x"), constant("pads")}, false).named("pad");
  return {.name = "PadPoolFusionPass",
          .description =
              "Folds a zero Pad into the following AveragePool's pads (counting "
              "them), a -inf Pad into a MaxPool's",
          .ops = {"Pad", "AveragePool"},
          .patterns = {{"avg", op("AveragePool", {pad}, false).named("pool")},
                       {"max", op("MaxPool", {pad}, false).named("pool")}},
          .rewrite = [](const RuleMatch& m) -> std::string {
            const Node* pn = m.node("pool");
            const bool is_avg = m.variant == "avg";
            std::string why;
            const std::vector<int64_t> p =
                spatial_pads(*m.node("pad"), m["pads"], is_avg ? is_zero : is_minus_inf,
                             is_avg ? "0" : "-inf", &why);
            if (!why.empty()) return why;
            ops::Pool pool{pn->op(), m["x"], {}};
            if (why = pool_takes_pads(*pn, is_avg, p, &pool.pool); !why.empty()) return why;
            return m.fuse(pool.spec());
          }};
}

}  // namespace

std::unique_ptr<Pass> make_pad_conv_pass() { return make_rule_pass(pad_conv()); }
std::unique_ptr<Pass> make_pad_pool_pass() { return make_rule_pass(pad_pool()); }

}  // namespace nnfuse
