// If, Loop and Scan (control_flow.h): the nodes' semantics over a BodyRunner, and the
// reference runner, node by node on the reference kernels.
#include "kernels/ref/control_flow.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

const Graph& subgraph(const Node& n, const std::string& attr) {
  const Attribute* a = n.find_attr(attr);
  if (!a || a->kind != Attribute::Kind::kGraph || !a->g) {
    fail(ErrorKind::kInvalidModel, n.describe(), " has no subgraph '", attr, "'");
  }
  return *a->g;
}

// Why a node of `body` (or of its own subgraphs) cannot run, "" when all can.
std::string body_unsupported(const Graph& body, const std::string& attr) {
  for (const Node* n : body.nodes()) {
    std::string why = ref_unsupported_reason(*n, body.opset(n->domain()));
    if (!why.empty()) return "subgraph '" + attr + "': " + n->describe() + ": " + why;
  }
  return "";
}

}  // namespace

std::string control_flow_support(const Node& node, int64_t) {
  for (const auto& [name, a] : node.attrs()) {
    if (a.kind != Attribute::Kind::kGraph) continue;
    if (!a.g) return "subgraph '" + name + "' is missing";
    std::string why = body_unsupported(*a.g, name);
    if (!why.empty()) return why;
  }
  return "";
}

void check_body_inputs(const Graph& body, const std::vector<const Tensor*>& inputs,
                       const Node& owner) {
  if (inputs.size() != body.inputs().size()) {
    fail(ErrorKind::kInvalidModel, owner.describe(), ": its subgraph takes ",
         body.inputs().size() - body.num_captures, " inputs, ", inputs.size() - body.num_captures,
         " given");
  }
}

std::vector<Tensor> run_body_on_reference(const Graph& body,
                                          const std::vector<const Tensor*>& inputs,
                                          const Node& owner) {
  check_body_inputs(body, inputs, owner);
  std::map<const Value*, Tensor> vals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]) vals[body.inputs()[i]] = *inputs[i];
  }
  auto get = [&](const Value* v) -> const Tensor* {
    if (!v) return nullptr;
    auto it = vals.find(v);
    if (it != vals.end()) return &it->second;
    if (v->is_constant()) return &v->constant();
    fail(ErrorKind::kRuntime, owner.describe(), ": subgraph value '", v->name(),
         "' has no value (an optional input not given?)");
  };
  for (const Node* n : body.nodes()) {
    KernelContext ctx{*n, body.opset(n->domain()), {}, std::vector<Tensor>(n->num_outputs())};
    for (const Value* v : n->inputs()) ctx.inputs.push_back(get(v));
    find_ref_kernel(n->op_type())->run(ctx);
    for (size_t k = 0; k < n->num_outputs(); ++k) {
      if (n->output(k)) vals[n->output(k)] = std::move(ctx.outputs[k]);
    }
  }
  std::vector<Tensor> out;
  for (const Value* v : body.outputs()) out.push_back(*get(v));
  return out;
}

namespace {

// The captured values: the node's inputs from `first` on.
void append_captures(const KernelContext& ctx, size_t first, std::vector<const Tensor*>& ins) {
  for (size_t i = first; i < ctx.num_inputs(); ++i) ins.push_back(ctx.inputs[i]);
}

bool truth(const Tensor& t, const Node& n, const char* what) {
  if (t.numel() != 1) {
    fail(ErrorKind::kRuntime, n.describe(), ": ", what, " must hold one element, it has shape ",
         dims_str(t.shape()));
  }
  if (t.dtype() == DType::kBool) return *t.data<bool>();
  bool r = false;
  ref::dispatch(t.dtype(), n.describe() + " condition",
                [&](auto z) { r = t.data<decltype(z)>()[0] != decltype(z){}; });
  return r;
}

// Element `index` of `t` along `axis` (that axis removed), and the reverse: `part` written as
// element `index` of `whole` along `axis`.
Tensor slice_at(const Tensor& t, int64_t axis, int64_t index) {
  Dims d = t.shape();
  const int64_t n = d[static_cast<size_t>(axis)];
  d.erase(d.begin() + axis);
  Tensor r(t.dtype(), d);
  const size_t es = dtype_size(t.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= t.dim(k);
  for (int64_t k = axis + 1; k < t.rank(); ++k) inner *= t.dim(k);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(r.raw());
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * row,
                src + (static_cast<size_t>(o * n + index)) * row, row);
  }
  return r;
}

// Stacks `parts` (equal shapes) along a new axis `axis`, in order.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, const Node& n, size_t k) {
  Dims d = parts.at(0).shape();
  for (const Tensor& p : parts) {
    if (p.shape() != d || p.dtype() != parts[0].dtype()) {
      fail(ErrorKind::kRuntime, n.describe(), ": scan output ", k,
           " changes shape or type between iterations (", dims_str(d), " then ",
           dims_str(p.shape()), ")");
    }
  }
  const int64_t count = static_cast<int64_t>(parts.size());
  int64_t outer = 1, inner = 1;
  for (int64_t j = 0; j < axis; ++j) outer *= d[static_cast<size_t>(j)];
  for (size_t j = static_cast<size_t>(axis); j < d.size(); ++j) inner *= d[j];
  Dims out = d;
  out.insert(out.begin() + axis, count);
  Tensor r(parts[0].dtype(), out);
  const size_t row = static_cast<size_t>(inner) * dtype_size(r.dtype());
  auto* dst = static_cast<std::byte*>(r.raw());
  for (int64_t i = 0; i < count; ++i) {
    const auto* src = static_cast<const std::byte*>(parts[static_cast<size_t>(i)].raw());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + static_cast<size_t>(o * count + i) * row,
                  src + static_cast<size_t>(o) * row, row);
    }
  }
  return r;
}

void run_if(KernelContext& ctx, const BodyRunner& run_body) {
  const Node& n = ctx.node;
  const bool c = truth(ctx.in(0), n, "the condition");
  const Graph& body = subgraph(n, c ? "then_branch" : "else_branch");
  std::vector<const Tensor*> ins;
  append_captures(ctx, 1, ins);
  std::vector<Tensor> out = run_body(body, ins, n);
  if (out.size() != n.num_outputs()) {
    fail(ErrorKind::kInvalidModel, n.describe(), ": the ", c ? "then" : "else", " branch gives ",
         out.size(), " outputs, the node has ", n.num_outputs());
  }
  for (size_t k = 0; k < out.size(); ++k) ctx.outputs[k] = std::move(out[k]);
}

void run_loop(KernelContext& ctx, const BodyRunner& run_body) {
  const Node& n = ctx.node;
  const Graph& body = subgraph(n, "body");
  const size_t formal = ctx.num_inputs() - body.num_captures;
  if (formal < 2) fail(ErrorKind::kInvalidModel, n.describe(), ": Loop needs M and cond inputs");
  const size_t carried = formal - 2;
  const size_t scans = n.num_outputs() - carried;
  if (body.outputs().size() != 1 + carried + scans) {
    fail(ErrorKind::kInvalidModel, n.describe(), ": its body gives ", body.outputs().size(),
         " outputs; 1 + ", carried, " loop-carried + ", scans, " scan outputs expected");
  }
  const bool has_max = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (!has_max && !has_cond) {
    fail(ErrorKind::kUnsupported, n.describe(),
         ": a Loop with neither a trip count nor a condition never ends");
  }
  int64_t max_trips = 0;
  if (has_max) {
    const Tensor& m = ctx.in(0);
    if (m.numel() != 1 || m.dtype() != DType::kInt64) {
      fail(ErrorKind::kRuntime, n.describe(), ": M must be one int64");
    }
    max_trips = m.data<int64_t>()[0];
  }
  bool cond = has_cond ? truth(ctx.in(1), n, "cond") : true;
  std::vector<Tensor> state;
  for (size_t k = 0; k < carried; ++k) state.push_back(ctx.in(2 + k));
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; (!has_max || i < max_trips) && cond; ++i) {
    Tensor iter = Tensor::scalar<int64_t>(i);
    Tensor cond_in = Tensor::scalar<bool>(cond);
    std::vector<const Tensor*> ins{&iter, &cond_in};
    for (const Tensor& s : state) ins.push_back(&s);
    append_captures(ctx, formal, ins);
    std::vector<Tensor> out = run_body(body, ins, n);
    if (has_cond) cond = truth(out[0], n, "the body's condition output");
    for (size_t k = 0; k < carried; ++k) state[k] = std::move(out[1 + k]);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[1 + carried + k]));
  }
  for (size_t k = 0; k < carried; ++k) ctx.outputs[k] = std::move(state[k]);
  for (size_t k = 0; k < scans; ++k) {
    if (!scanned[k].empty()) {
      ctx.outputs[carried + k] = stack(scanned[k], 0, n, k);
      continue;
    }
    // No iteration ran: an empty stack of the element type and shape the body declares.
    const Value* v = body.outputs()[1 + carried + k];
    Dims d{0};
    if (v->shape().fully_known()) {
      for (int64_t x : v->shape().static_dims()) d.push_back(x);
    }
    ctx.outputs[carried + k] =
        Tensor(v->dtype() == DType::kUndefined ? DType::kFloat32 : v->dtype(), d);
  }
}

int64_t axis_of(const std::vector<int64_t>& axes, size_t k, int64_t rank, const Node& n) {
  int64_t a = k < axes.size() ? axes[k] : 0;
  if (a < 0) a += rank;
  if (a < 0 || a >= rank) fail(ErrorKind::kInvalidModel, n.describe(), ": scan axis out of range");
  return a;
}

void run_scan(KernelContext& ctx, const BodyRunner& run_body) {
  const Node& n = ctx.node;
  const Graph& body = subgraph(n, "body");
  const size_t formal = ctx.num_inputs() - body.num_captures;
  const int64_t m = n.attr_int("num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) > formal) {
    fail(ErrorKind::kInvalidModel, n.describe(), ": num_scan_inputs must be 1 to ", formal);
  }
  const size_t states = formal - static_cast<size_t>(m);
  const size_t scans_out = n.num_outputs() - states;
  const auto in_axes = n.attr_ints("scan_input_axes");
  const auto in_dirs = n.attr_ints("scan_input_directions");
  const auto out_axes = n.attr_ints("scan_output_axes");
  const auto out_dirs = n.attr_ints("scan_output_directions");
  int64_t len = -1;
  std::vector<int64_t> axes;
  for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
    const Tensor& t = ctx.in(states + j);
    const int64_t a = axis_of(in_axes, j, t.rank(), n);
    axes.push_back(a);
    if (len >= 0 && t.dim(a) != len) {
      fail(ErrorKind::kRuntime, n.describe(), ": scan inputs differ in length (", len, " and ",
           t.dim(a), ")");
    }
    len = t.dim(a);
  }
  std::vector<Tensor> state;
  for (size_t k = 0; k < states; ++k) state.push_back(ctx.in(k));
  std::vector<std::vector<Tensor>> scanned(scans_out);
  for (int64_t i = 0; i < len; ++i) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
      const bool reverse = j < in_dirs.size() && in_dirs[j] == 1;
      slices.push_back(slice_at(ctx.in(states + j), axes[j], reverse ? len - 1 - i : i));
    }
    std::vector<const Tensor*> ins;
    for (const Tensor& s : state) ins.push_back(&s);
    for (const Tensor& s : slices) ins.push_back(&s);
    append_captures(ctx, formal, ins);
    std::vector<Tensor> out = run_body(body, ins, n);
    if (out.size() != states + scans_out) {
      fail(ErrorKind::kInvalidModel, n.describe(), ": its body gives ", out.size(), " outputs, ",
           states + scans_out, " expected");
    }
    for (size_t k = 0; k < states; ++k) state[k] = std::move(out[k]);
    for (size_t k = 0; k < scans_out; ++k) scanned[k].push_back(std::move(out[states + k]));
  }
  for (size_t k = 0; k < states; ++k) ctx.outputs[k] = std::move(state[k]);
  for (size_t k = 0; k < scans_out; ++k) {
    if (scanned[k].empty()) {
      fail(ErrorKind::kUnsupported, n.describe(), ": a Scan over zero elements");
    }
    if (k < out_dirs.size() && out_dirs[k] == 1) {
      std::vector<Tensor> rev(scanned[k].rbegin(), scanned[k].rend());
      scanned[k] = std::move(rev);
    }
    const int64_t rank = scanned[k][0].rank() + 1;
    ctx.outputs[states + k] = stack(scanned[k], axis_of(out_axes, k, rank, n), n, k);
  }
}

void run_on_reference(KernelContext& ctx) { run_control_flow(ctx, run_body_on_reference); }

}  // namespace

void run_control_flow(KernelContext& ctx, const BodyRunner& run) {
  if (ctx.node.is(Op::kIf)) {
    run_if(ctx, run);
  } else if (ctx.node.is(Op::kLoop)) {
    run_loop(ctx, run);
  } else if (ctx.node.is(Op::kScan)) {
    run_scan(ctx, run);
  } else {
    fail(ErrorKind::kInternal, ctx.node.describe(), " is no If, Loop or Scan");
  }
}

void append_control_flow_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"If", run_on_reference, control_flow_support});
  t.push_back({"Loop", run_on_reference, control_flow_support});
  t.push_back({"Scan", run_on_reference, control_flow_support});
}

}  // namespace nnfuse
