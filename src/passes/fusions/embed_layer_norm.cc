// EmbedLayerNormFusionPass: a transformer's embedding block, the word, position and token-type
// lookups summed and normalized, becomes one kernel that gathers each row, adds and normalizes
// it while it is in cache:
//   LayerNormalization(addend + Gather(T_1, ids_1) + ... + Gather(T_n, ids_n), gamma, beta)
//     == EmbedLayerNorm(gamma, beta, addend, T_1, ids_1, ..., T_n, ids_n)
// for any tree of Adds over the Gathers (axis 0, constant tables [V, E], ids of one shape) and
// at most one constant addend (e.g. the position embeddings, already gathered by constant
// folding), with the LayerNorm over the last axis (ONNX's at opset >= 17, or the one the
// LayerNorm fusion makes in domain ai.nnfuse). The sum is the fused node's second output when
// something else reads it.
#include <algorithm>
#include <map>
#include <set>

#include "passes/fusions/fusions.h"
#include "pattern/rewriter.h"

namespace nnfuse {

namespace {

// The Add tree under the LayerNorm: its Add nodes and its leaves, left to right.
struct Tree {
  std::vector<Node*> adds;
  std::vector<Node*> gathers;  // leaves produced by Gather
  std::vector<Value*> constants;
  bool other_leaf = false;  // a leaf that is neither (not an embedding block)
};

void collect(Value* v, Tree& t) {
  Node* p = v->producer();
  if (p && is_default_domain(p->domain()) && p->op_type() == "Add" && p->num_inputs() == 2 &&
      p->input(0) && p->input(1)) {
    t.adds.push_back(p);
    collect(p->input(0), t);
    collect(p->input(1), t);
  } else if (p && is_default_domain(p->domain()) && p->op_type() == "Gather" &&
             p->num_inputs() == 2 && p->input(0) && p->input(1)) {
    t.gathers.push_back(p);
  } else if (pattern::constant_value(v)) {
    t.constants.push_back(v);
  } else {
    t.other_leaf = true;
  }
}

// True when two ids shapes are surely equal: every dim known and equal, or the same symbol.
bool same_ids_shape(const Value& a, const Value& b) {
  if (&a == &b) return true;
  const Shape& x = a.shape();
  const Shape& y = b.shape();
  if (!x.has_rank || !y.has_rank || x.dims.size() != y.dims.size()) return false;
  for (size_t i = 0; i < x.dims.size(); ++i) {
    const Dim& p = x.dims[i];
    const Dim& q = y.dims[i];
    const bool ok = (p.known() && q.known() && p.value == q.value) ||
                    (!p.known() && !q.known() && !p.param.empty() && p.param == q.param);
    if (!ok) return false;
  }
  return true;
}

// "" when a constant of shape `s` broadcasts to `out` without growing it.
std::string broadcasts_to(const Dims& s, const Shape& out) {
  if (s.size() > out.dims.size()) return "has more dims than the output " + out.str();
  for (size_t i = 0; i < s.size(); ++i) {
    const Dim& d = out.dims[out.dims.size() - s.size() + i];
    if (s[i] != 1 && !(d.known() && d.value == s[i])) {
      return "does not broadcast to the output " + out.str();
    }
  }
  return "";
}

// gamma or beta as a [E] value: itself, or a reshaped copy of a constant [1, ..., E] (added
// to the graph unless `check_only`, which returns `v` when it would do).
Value* row_param(Graph& g, Value* v, int64_t e, std::string* why, const char* what,
                 bool check_only) {
  if (const Tensor* t = pattern::constant_value(v)) {
    if (t->dtype() != DType::kFloat32 || t->numel() != e) {
      *why = std::string("the LayerNorm ") + what + " " + dims_str(t->shape()) + " is not [" +
             std::to_string(e) + "] float32";
      return nullptr;
    }
    if (t->shape() == Dims{e} || check_only) return v;
    return pattern::add_constant(g, v->name() + "_row", t->reshaped({e}));
  }
  const Shape& s = v->shape();
  if (v->dtype() != DType::kFloat32 || !(s.fully_known() && s.static_dims() == Dims{e})) {
    *why = std::string("the LayerNorm ") + what + " " + s.str() + " is not [" + std::to_string(e) +
           "] float32";
    return nullptr;
  }
  return v;
}

class EmbedLayerNormFusion : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"EmbedLayerNormFusionPass",
                            "Fuses embedding lookups (Gathers), their sum and the LayerNorm after "
                            "them into one kernel",
                            true,
                            true,
                            {"Gather", "Add", "LayerNormalization"}};
    return i;
  }

  void run(Graph& g, PassContext& ctx) override {
    std::set<std::string> declined;
    for (bool changed = true; changed;) {
      changed = false;
      for (Node* ln : g.nodes()) {
        if (!is_layer_norm(*ln) || declined.count(ln->name()) || !ln->input(0)) continue;
        Tree t;
        collect(ln->input(0), t);
        if (t.other_leaf || t.gathers.empty()) continue;  // not an embedding block
        ctx.matched(pass_);
        std::vector<Node*> nodes = t.adds;
        nodes.insert(nodes.end(), t.gathers.begin(), t.gathers.end());
        nodes.push_back(ln);
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
        std::string why = fuse(g, ctx, ln, t, nodes);
        if (why.empty()) {
          changed = true;
          break;
        }
        ctx.rejected(pass_, original_names(nodes), why);
        declined.insert(ln->name());
      }
    }
  }

 private:
  const std::string pass_ = "EmbedLayerNormFusionPass";

  std::string fuse(Graph& g, PassContext& ctx, Node* ln, const Tree& t, std::vector<Node*> nodes) {
    // The LayerNorm: last axis, default stash type, statistics outputs unused.
    Value* y = ln->output(0);
    Value* x = ln->input(0);
    if (!y || y->dtype() != DType::kFloat32) return "the LayerNorm is not float32";
    for (size_t k = 1; k < ln->num_outputs(); ++k) {
      const Value* o = ln->output(k);
      if (o && (!o->uses().empty() || o->is_graph_output())) {
        return "the LayerNorm's statistics output '" + o->name() + "' is used";
      }
    }
    if (ln->attr_int("stash_type", 1) != 1) return "the LayerNorm's stash_type is not 1";
    if (ln->num_inputs() < 2 || !ln->input(1)) return "the LayerNorm has no scale";
    // The lookups.
    std::vector<Value*> pairs;
    int64_t e = -1;
    const Value* ids0 = nullptr;
    for (Node* gather : t.gathers) {
      const Tensor* table = pattern::constant_value(gather->input(0));
      Value* ids = gather->input(1);
      if (!table) return "the table of Gather '" + gather->name() + "' is not a constant";
      if (table->rank() != 2 || table->dtype() != DType::kFloat32) {
        return "the table of Gather '" + gather->name() + "' is " + dtype_name(table->dtype()) +
               dims_str(table->shape()) + ", not a float32 matrix";
      }
      const int64_t axis = gather->attr_int("axis", 0);
      if (axis != 0 && axis != -2) {
        return "Gather '" + gather->name() + "' is along axis " + std::to_string(axis) + ", not 0";
      }
      if (!ids || (ids->dtype() != DType::kInt64 && ids->dtype() != DType::kInt32)) {
        return "the ids of Gather '" + gather->name() + "' are not int64 or int32";
      }
      if (e >= 0 && table->dim(1) != e) {
        return "the tables have different widths (" + std::to_string(e) + " and " +
               std::to_string(table->dim(1)) + ")";
      }
      e = table->dim(1);
      if (ids0 && !same_ids_shape(*ids0, *ids)) {
        return "the ids of Gather '" + gather->name() + "' " + ids->shape().str() +
               " may differ in shape from the first ids " + ids0->shape().str();
      }
      if (!ids0) ids0 = ids;
      pairs.push_back(gather->input(0));
      pairs.push_back(ids);
    }
    Shape out = ids0->shape();
    if (!out.has_rank) return "the ids' rank is unknown";
    out.dims.push_back(Dim{e, ""});
    const int64_t axis = ln->attr_int("axis", -1);
    const int64_t rank = static_cast<int64_t>(out.dims.size());
    if (axis != -1 && axis != rank - 1) {
      return "the LayerNorm is along axis " + std::to_string(axis) + ", not the last";
    }
    // The constant addend.
    Value* addend = nullptr;
    if (t.constants.size() > 1) return "the sum has more than one constant term";
    if (!t.constants.empty()) {
      addend = t.constants[0];
      const Tensor* a = pattern::constant_value(addend);
      if (a->dtype() != DType::kFloat32) return "the constant addend is not float32";
      std::string why = broadcasts_to(a->shape(), out);
      if (!why.empty()) return "the constant addend " + dims_str(a->shape()) + " " + why;
    }
    std::vector<Value*> outputs = {y};
    bool sum_escapes = x->is_graph_output();
    for (const Use& u : x->uses()) sum_escapes |= u.node != ln;
    if (sum_escapes) outputs.push_back(x);
    // Checked before any constant is added for gamma and beta.
    std::string why = pattern::check_replaceable(g, nodes, outputs);
    if (!why.empty()) return why;
    Value* beta = ln->num_inputs() > 2 ? ln->input(2) : nullptr;
    if (!row_param(g, ln->input(1), e, &why, "scale", true) ||
        (beta && !row_param(g, beta, e, &why, "bias", true))) {
      return why;
    }
    Value* gamma = row_param(g, ln->input(1), e, &why, "scale", false);
    if (beta) beta = row_param(g, beta, e, &why, "bias", false);
    std::vector<Value*> inputs = {gamma, beta, addend};
    inputs.insert(inputs.end(), pairs.begin(), pairs.end());
    std::map<std::string, Attribute> attrs;
    attrs["epsilon"] = attr_float(ln->attr_float("epsilon", 1e-5f));
    // Provenance in graph order.
    std::map<const Node*, size_t> pos;
    for (const Node* n : g.nodes()) pos.emplace(n, pos.size());
    std::sort(nodes.begin(), nodes.end(),
              [&](const Node* a, const Node* b) { return pos[a] < pos[b]; });
    return apply_fusion(g, ctx, pass_, nodes, "EmbedLayerNorm", kFusedDomain, inputs, outputs,
                        attrs);
  }
};

}  // namespace

std::unique_ptr<Pass> make_embed_layer_norm_pass() {
  return std::make_unique<EmbedLayerNormFusion>();
}

}  // namespace nnfuse
