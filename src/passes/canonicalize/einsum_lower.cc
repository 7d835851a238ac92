// Einsum lowering: a float32 Einsum of one or two operands is the ReduceSum, Transpose, Reshape
// and MatMul nodes it stands for. Lowered, it runs on the fast MatMul kernels, and the fusion
// passes after this one see ordinary MatMuls (attention scores, projections). With the letters
// of a two-operand equation classed as batch (in A, B and the output), contracted (in A and B
// only), free (in one operand and the output) and summed (in one operand only):
//
//   einsum(A, B) == transpose(reshape(matmul(reshape(transpose(sum_a(A))),
//                                            reshape(transpose(sum_b(B))))))
//
// with A laid out as [batch..., A free..., contracted...] and B as [batch..., contracted...,
// B free...], each group of free or contracted dims merged into one (MatMul's M, K and N). One
// operand: a ReduceSum of the letters the output lacks, then a Transpose to the output's order.
// A step that would change nothing is left out. What this does not take stays an Einsum, on the
// reference kernel: diagonals (a letter twice in one term), broadcasting between the operands,
// shapes not static, other types, more than two operands, empty operands.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ops/onnx_ops.h"
#include "passes/canonicalize/canonicalize.h"
#include "pattern/rewriter.h"
#include "shape/shape_inference.h"

namespace nnfuse {

namespace {

// A term's axes as labels: letters as their character codes, the ellipsis's dims as
// kEllipsis + k for the k-th dim of the widest ellipsis, right-aligned (as the reference
// kernel numbers them).
using Labels = std::vector<int>;
constexpr int kEllipsis = 256;

// Batched MatMul operands keep their batch dims apart (the attention passes look for 4-D
// products) while the product has at most this rank, which the oneDNN kernel takes.
constexpr size_t kMaxMatMulRank = 6;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
  std::map<int, int64_t> size;  // every label's extent
};

// A term's letters and the place of its ellipsis among them (npos: none); nullopt when the
// term is malformed (another character, two ellipses).
struct Term {
  std::string letters;
  size_t ellipsis = std::string::npos;
};

std::optional<Term> parse_term(const std::string& t) {
  Term r;
  for (size_t p = 0; p < t.size();) {
    if (t.compare(p, 3, "...") == 0) {
      if (r.ellipsis != std::string::npos) return std::nullopt;
      r.ellipsis = r.letters.size();
      p += 3;
    } else if (std::isalpha(static_cast<unsigned char>(t[p]))) {
      r.letters += t[p++];
    } else {
      return std::nullopt;
    }
  }
  return r;
}

// The term's labels for an operand of rank `rank`, its ellipsis standing for the last
// `rank - letters` of the widest ellipsis's `widest` dims.
Labels term_labels(const Term& t, size_t rank, size_t widest) {
  Labels ls;
  const size_t ell = t.ellipsis == std::string::npos ? 0 : rank - t.letters.size();
  for (size_t i = 0; i <= t.letters.size(); ++i) {
    if (i == t.ellipsis) {
      for (size_t k = 0; k < ell; ++k) ls.push_back(kEllipsis + static_cast<int>(widest - ell + k));
    }
    if (i < t.letters.size()) ls.push_back(static_cast<unsigned char>(t.letters[i]));
  }
  return ls;
}

// Parses `eq` for operands of static shapes `shapes`; "" when it did, else why not.
std::string parse_equation(const std::string& eq_attr, const std::vector<Dims>& shapes,
                           Equation& e) {
  std::string eq;
  for (char ch : eq_attr) {
    if (!std::isspace(static_cast<unsigned char>(ch))) eq += ch;
  }
  if (eq.empty()) return "the equation is empty";
  const size_t arrow = eq.find("->");
  std::vector<std::string> texts(1);
  for (char ch : eq.substr(0, arrow)) {
    if (ch == ',') {
      texts.emplace_back();
    } else {
      texts.back() += ch;
    }
  }
  if (texts.size() != shapes.size()) return "the equation's terms do not match the operands";
  std::vector<Term> terms;
  size_t widest = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::optional<Term> t = parse_term(texts[i]);
    if (!t) return "a malformed term '" + texts[i] + "'";
    const size_t rank = shapes[i].size(), named = t->letters.size();
    if (t->ellipsis == std::string::npos ? rank != named : rank < named) {
      return "operand " + std::to_string(i) + " of rank " + std::to_string(rank) +
             " does not match the term '" + texts[i] + "'";
    }
    if (t->ellipsis != std::string::npos) widest = std::max(widest, rank - named);
    terms.push_back(*t);
  }
  std::map<int, int> count;  // letters: the number of terms with each
  for (size_t i = 0; i < terms.size(); ++i) {
    Labels ls = term_labels(terms[i], shapes[i].size(), widest);
    std::set<int> seen;
    for (size_t d = 0; d < ls.size(); ++d) {
      if (!seen.insert(ls[d]).second) return "a letter repeats within one term (a diagonal)";
      // Equal extents only: a 1 against n broadcasts, which MatMul's operands here do not.
      auto [it, added] = e.size.emplace(ls[d], shapes[i][d]);
      if (!added && it->second != shapes[i][d]) return "a label's extents differ between operands";
      if (ls[d] < kEllipsis) ++count[ls[d]];
    }
    e.inputs.push_back(std::move(ls));
  }
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis's dims, then the letters of one term, in character order.
    for (size_t k = 0; k < widest; ++k) e.output.push_back(kEllipsis + static_cast<int>(k));
    for (const auto& [l, c] : count) {
      if (c == 1) e.output.push_back(l);
    }
    return "";
  }
  const std::string rhs = eq.substr(arrow + 2);
  std::optional<Term> out = parse_term(rhs);
  if (!out) return "a malformed output term '" + rhs + "'";
  e.output = term_labels(*out, out->letters.size() + widest, widest);
  std::set<int> seen;
  for (int l : e.output) {
    if (!e.size.count(l)) return "an output letter is in no operand";
    if (!seen.insert(l).second) return "a letter repeats in the output";
  }
  return "";
}

bool contains(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

Dims dims_of(const Labels& ls, const std::map<int, int64_t>& size) {
  Dims d;
  for (int l : ls) d.push_back(size.at(l));
  return d;
}

int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t x : d) p *= x;
  return p;
}

// Where each label of `to` stands in `from`.
std::vector<int64_t> permutation(const Labels& from, const Labels& to) {
  std::vector<int64_t> perm;
  for (int l : to) {
    perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
  }
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// `ls` without the labels `keep` lacks.
Labels kept(const Labels& ls, const Labels& keep) {
  Labels r;
  for (int l : ls) {
    if (contains(keep, l)) r.push_back(l);
  }
  return r;
}

// Adds the nodes that stand for one Einsum, named after it; each writes a fresh value or,
// the last one, the Einsum's own output (so its readers and graph-output status stay).
class Emitter {
 public:
  Emitter(Graph& g, const std::string& stem) : g_(g), stem_(stem) {}

  // The node of `spec` (a typed builder's) into `target` or, when null, a fresh float32 value
  // of shape `dims`.
  Value* add(const ops::NodeSpec& spec, const std::string& suffix, const Dims& dims,
             Value* target) {
    Value* y = target;
    if (!y) {
      y = g_.add_value(g_.unique_value_name(stem_ + "/" + suffix + "_output"), DType::kFloat32,
                       Shape::of(dims));
    }
    std::vector<Value*> inputs = spec.inputs;
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();
    Node* n = g_.add_node(std::string(op_name(spec.op)), g_.unique_node_name(stem_ + "/" + suffix),
                          inputs, {y});
    for (const auto& [k, a] : spec.attrs) n->set_attr(k, a);
    // A step on a constant operand (a weight transposed or reshaped) is done once, here.
    shape::fold_constant(g_, n);
    return y;
  }

  Value* constant(const std::string& suffix, const Dims& d) {
    return pattern::add_constant(g_, stem_ + "/" + suffix, shape_tensor(d));
  }

  Value* reduce_sum(Value* x, const std::vector<int64_t>& axes, const Dims& dims,
                    const std::string& suffix, Value* target) {
    // The axes are an input from opset 13, an attribute before.
    int64_t opset = g_.opset("");
    if (opset == 0) opset = g_.opset("ai.onnx");
    ops::Reduce r{Op::kReduceSum, x, nullptr, std::nullopt, 0};
    if (opset >= 13) {
      r.axes = constant(suffix + "_axes", axes);
    } else {
      r.axes_attr = axes;
    }
    return add(r.spec(), suffix, dims, target);
  }

  Value* transpose(Value* x, const std::vector<int64_t>& perm, const Dims& dims,
                   const std::string& suffix, Value* target) {
    return add(ops::Transpose{x, perm}.spec(), suffix, dims, target);
  }

  Value* reshape(Value* x, const Dims& dims, const std::string& suffix, Value* target) {
    return add(ops::Reshape{x, constant(suffix + "_shape", dims)}.spec(), suffix, dims, target);
  }

 private:
  Graph& g_;
  std::string stem_;
};

// Brings operand `x` (labels `ls`) to the labels `order` (summing away those it lacks) and
// then to the shape `shape`; each step only where it changes something.
Value* prepare(Emitter& em, Value* x, const Labels& ls, const Labels& order, const Dims& shape,
               const std::map<int, int64_t>& size, const std::string& which) {
  const Labels k = kept(ls, order);
  if (k.size() != ls.size()) {
    std::vector<int64_t> axes;
    for (size_t d = 0; d < ls.size(); ++d) {
      if (!contains(order, ls[d])) axes.push_back(static_cast<int64_t>(d));
    }
    x = em.reduce_sum(x, axes, dims_of(k, size), "reduce_sum_" + which, nullptr);
  }
  const std::vector<int64_t> perm = permutation(k, order);
  const Dims ordered = dims_of(order, size);
  if (!is_identity(perm)) x = em.transpose(x, perm, ordered, "transpose_" + which, nullptr);
  if (ordered != shape) x = em.reshape(x, shape, "reshape_" + which, nullptr);
  return x;
}

// How many of the two operands need a Transpose to reach `a_order` and `b_order`.
int transposes(const Equation& e, const Labels& a_order, const Labels& b_order) {
  return !is_identity(permutation(kept(e.inputs[0], a_order), a_order)) +
         !is_identity(permutation(kept(e.inputs[1], b_order), b_order));
}

Labels concat(std::initializer_list<const Labels*> parts) {
  Labels r;
  for (const Labels* p : parts) r.insert(r.end(), p->begin(), p->end());
  return r;
}

void lower_two(Emitter& em, const Equation& e, Value* a, Value* b, Value* out) {
  const Labels &la = e.inputs[0], &lb = e.inputs[1], &lo = e.output;
  // Batch and free letters in the output's order, so that the product's dims need no Transpose
  // where the output keeps the groups in MatMul's order.
  Labels batch, a_free, b_free, contracted;
  for (int l : lo) {
    const bool in_a = contains(la, l), in_b = contains(lb, l);
    (in_a && in_b ? batch : in_a ? a_free : b_free).push_back(l);
  }
  // Contracted letters in A's order, or B's when that spares a Transpose.
  Labels contracted_b;
  for (int l : la) {
    if (contains(lb, l) && !contains(lo, l)) contracted.push_back(l);
  }
  for (int l : lb) {
    if (contains(la, l) && !contains(lo, l)) contracted_b.push_back(l);
  }
  if (transposes(e, concat({&batch, &a_free, &contracted_b}),
                 concat({&batch, &contracted_b, &b_free})) <
      transposes(e, concat({&batch, &a_free, &contracted}),
                 concat({&batch, &contracted, &b_free}))) {
    contracted = contracted_b;
  }
  const Labels a_order = concat({&batch, &a_free, &contracted});
  const Labels b_order = concat({&batch, &contracted, &b_free});
  const int64_t m = product(dims_of(a_free, e.size)), k = product(dims_of(contracted, e.size)),
                n = product(dims_of(b_free, e.size));
  Dims a_shape, b_shape, mm_shape;
  if (batch.empty()) {
    // [A free..., K] x [K, N]: MatMul broadcasts the 2-D B over A's leading dims, so those stay
    // apart (a Linear layer's form, which the dense-layer passes take).
    const Dims lead = a_free.empty() ? Dims{1} : dims_of(a_free, e.size);
    a_shape = lead;
    a_shape.push_back(k);
    b_shape = {k, n};
    mm_shape = lead;
    mm_shape.push_back(n);
  } else {
    Dims lead = dims_of(batch, e.size);
    if (lead.size() + 2 > kMaxMatMulRank) lead = {product(lead)};
    a_shape = b_shape = mm_shape = lead;
    a_shape.insert(a_shape.end(), {m, k});
    b_shape.insert(b_shape.end(), {k, n});
    mm_shape.insert(mm_shape.end(), {m, n});
  }
  Value* x = prepare(em, a, la, a_order, a_shape, e.size, "a");
  Value* y = prepare(em, b, lb, b_order, b_shape, e.size, "b");
  // The product's dims apart again, then in the output's order.
  const Labels tail = concat({&batch, &a_free, &b_free});
  const Dims tail_shape = dims_of(tail, e.size);
  const std::vector<int64_t> perm = permutation(tail, lo);
  const bool reshape = mm_shape != tail_shape, transpose = !is_identity(perm);
  Value* z = em.add(ops::NodeSpec{Op::kMatMul, {x, y}, {}}, "matmul", mm_shape,
                    reshape || transpose ? nullptr : out);
  if (reshape) z = em.reshape(z, tail_shape, "reshape", transpose ? nullptr : out);
  if (transpose) em.transpose(z, perm, dims_of(lo, e.size), "transpose", out);
}

void lower_one(Emitter& em, const Equation& e, Value* a, Value* out) {
  const Labels& la = e.inputs[0];
  const Labels k = kept(la, e.output);
  const std::vector<int64_t> perm = permutation(k, e.output);
  const bool reduce = k.size() != la.size(), transpose = !is_identity(perm);
  if (!reduce && !transpose) {
    em.add(ops::NodeSpec{Op::kIdentity, {a}, {}}, "identity", dims_of(e.output, e.size), out);
    return;
  }
  Value* x = a;
  if (reduce) {
    std::vector<int64_t> axes;
    for (size_t d = 0; d < la.size(); ++d) {
      if (!contains(e.output, la[d])) axes.push_back(static_cast<int64_t>(d));
    }
    x = em.reduce_sum(x, axes, dims_of(k, e.size), "reduce_sum", transpose ? nullptr : out);
  }
  if (transpose) em.transpose(x, perm, dims_of(e.output, e.size), "transpose", out);
}

// Lowers the Einsum `n`; "" when it did, else why it stays.
std::string lower(Graph& g, Node* n) {
  if (n->num_inputs() < 1 || n->num_inputs() > 2) return "not one or two operands";
  if (n->num_outputs() != 1 || !n->output(0)) return "not one output";
  const Attribute* eq = n->find_attr("equation");
  if (!eq || eq->kind != Attribute::Kind::kString) return "no equation";
  std::vector<Dims> shapes;
  for (Value* v : n->inputs()) {
    if (!v || v->dtype() != DType::kFloat32) return "an operand is not float32";
    std::optional<Dims> d = static_shape(v);
    if (!d) return "an operand's shape is not static";
    // Reshape reads a 0 in its shape as "copy this dim", so empty operands stay as they are.
    if (std::find(d->begin(), d->end(), 0) != d->end()) return "an empty operand";
    shapes.push_back(*d);
  }
  Value* out = n->output(0);
  if (out->dtype() != DType::kFloat32 && out->dtype() != DType::kUndefined) {
    return "the output is not float32";
  }
  Equation e;
  if (std::string why = parse_equation(eq->s, shapes, e); !why.empty()) return why;
  const Dims out_dims = dims_of(e.output, e.size);
  const Shape& known = out->shape();
  if (known.has_rank) {
    if (known.dims.size() != out_dims.size()) {
      return "the output's rank differs from the equation's";
    }
    for (size_t i = 0; i < out_dims.size(); ++i) {
      if (known.dims[i].known() && known.dims[i].value != out_dims[i]) {
        return "the output's shape differs from the equation's";
      }
    }
  }
  out->set_dtype(DType::kFloat32);
  out->set_shape(Shape::of(out_dims));
  const std::string stem = n->name().empty() ? "einsum" : n->name();
  const std::vector<Value*> ins = n->inputs();
  g.remove_node(n);
  Emitter em(g, stem);
  if (ins.size() == 1) {
    lower_one(em, e, ins[0], out);
  } else {
    lower_two(em, e, ins[0], ins[1], out);
  }
  return "";
}

class EinsumLowering : public Pass {
 public:
  const PassInfo& info() const override {
    static const PassInfo i{"EinsumLoweringPass",
                            "Lowers float32 Einsums of one or two operands to MatMul, Transpose, "
                            "Reshape and ReduceSum",
                            false, true};
    return i;
  }
  void run(Graph& g, PassContext&) const override {
    bool changed = false;
    for (Node* n : g.nodes()) {
      if (!g.contains(n)) continue;
      if (!n->is(Op::kEinsum)) {
        // ONNX's Einsum inference gives a rank at most: once an Einsum is lowered its output has
        // static dims, and the nodes after it (the Reshapes to heads and back, the next Einsum's
        // operands) are inferred again from them.
        if (changed) shape::infer_node(g, n);
        continue;
      }
      // A declined Einsum runs on the reference kernel, which the planner reports with its
      // reason; nothing more to record here.
      if (lower(g, n).empty()) changed = true;
    }
    if (!changed) return;
    // The last new node writes the Einsum's output, which may have readers placed before it;
    // and weights folded into transposed copies may have left their originals unread.
    g.remove_dead_values();
    g.ensure_sorted();
  }
};

}  // namespace

std::unique_ptr<Pass> make_einsum_lowering_pass() { return std::make_unique<EinsumLowering>(); }

}  // namespace nnfuse
