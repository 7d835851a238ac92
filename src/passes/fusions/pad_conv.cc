// PadConvFusionPass: Conv(Pad(x, p)) == Conv(x) with p added to the Conv's pads, when the Pad
// is constant-mode with value 0, pads only spatial dims, and adds no negative padding.
#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

using pattern::Match;
using pattern::Pat;

class PadConvFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"PadConvFusionPass", "Folds a zero Pad into the following Conv's pads",
                            true, true};
    return i;
  }
  void run(Graph& g, PassContext& ctx) override {
    using namespace pattern;
    Pat pad = op("Pad", {any("x"), constant("pads")}, false).named("pad");
    Pat conv = op("Conv", {pad, constant("w")}, false).named("conv");
    const std::string pass = info().name;
    rewrite_all(g, ctx, pass, {{"", conv}}, [&](const std::string&, const Match& m) -> std::string {
      Node* pn = m.node("pad");
      Node* cn = m.node("conv");
      if (pn->attr_string("mode", "constant") != "constant")
        return std::string("the Pad is not constant-mode");
      if (pn->num_inputs() > 2 && pn->input(2)) {
        const Tensor* v = constant_value(pn->input(2));
        if (!v || v->numel() != 1 || v->double_at(0) != 0.0)
          return std::string("the Pad value is not 0");
      }
      if (pn->num_inputs() > 3 && pn->input(3)) return std::string("the Pad has an axes input");
      if (cn->attr_string("auto_pad", "NOTSET") != "NOTSET")
        return std::string("the Conv uses auto_pad");
      std::vector<int64_t> p = constant_value(m.value("pads"))->to_int64_vector();
      size_t r = p.size() / 2;
      if (r < 3) return std::string("the Pad is not over a batch, channel and spatial dims");
      size_t sp = r - 2;
      for (size_t i = 0; i < 2; ++i) {
        if (p[i] != 0 || p[r + i] != 0) return std::string("the Pad pads the batch or channel dim");
      }
      std::vector<int64_t> cp = cn->attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
      if (cp.size() != 2 * sp) return std::string("the Conv's pads do not match the Pad's rank");
      for (size_t i = 0; i < sp; ++i) {
        if (p[2 + i] < 0 || p[r + 2 + i] < 0) return std::string("the Pad crops (negative pads)");
        cp[i] += p[2 + i];
        cp[sp + i] += p[r + 2 + i];
      }
      std::map<std::string, Attribute> attrs = cn->attrs();
      Attribute a;
      a.kind = Attribute::Kind::kInts;
      a.ints = cp;
      attrs["pads"] = a;
      std::vector<Value*> ins = {m.value("x"), m.value("w")};
      if (cn->num_inputs() > 2 && cn->input(2)) ins.push_back(cn->input(2));
      return apply_fusion(g, ctx, pass, m.nodes(), "Conv", "", ins, {cn->output(0)}, attrs);
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_pad_conv_pass() { return std::make_unique<PadConvFusion>(); }

}  // namespace nnfuse
