// Reference kernels for the recurrent ops: RNN, GRU and LSTM (default domain, opsets 7-14).
//
// Inputs: X, W, R, B?, sequence_lens?, initial_h?, and for LSTM initial_c?, P?. Outputs: Y?,
// Y_h?, and for LSTM Y_c?; any may be omitted. With layout 0 (the only layout before opset 14)
// X is [seq, batch, input], Y [seq, num_directions, batch, hidden] and initial_h, initial_c,
// Y_h, Y_c are [num_directions, batch, hidden]; with layout 1 X is [batch, seq, input], Y
// [batch, seq, num_directions, hidden] and the states [batch, num_directions, hidden].
// W is [num_directions, G*hidden, input], R [num_directions, G*hidden, hidden] and B
// [num_directions, 2*G*hidden] (Wb then Rb, zero when absent), with G gates stacked in the
// order RNN [i], GRU [z r h], LSTM [i o f c]; P (LSTM) is [num_directions, 3*hidden] in the
// order [i o f], zero when absent. hidden_size, when absent, is read from R.
//
// One step from state H (and cell C) on input x, with f, g, h the direction's activations:
//   RNN:  H' = f(x W^T + H R^T + Wb + Rb)                                  (default f = Tanh)
//   GRU:  z = f(x Wz^T + H Rz^T + Wbz + Rbz)      r = f(x Wr^T + H Rr^T + Wbr + Rbr)
//         linear_before_reset 0: n = g(x Wh^T + (r . H) Rh^T + Rbh + Wbh)
//         linear_before_reset 1: n = g(x Wh^T + r . (H Rh^T + Rbh) + Wbh)
//         H' = (1 - z) . n + z . H                          (default f = Sigmoid, g = Tanh)
//   LSTM: i = f(x Wi^T + H Ri^T + Pi . C + Wbi + Rbi)
//         o_, f_ likewise with Wo, Ro, Po / Wf, Rf, Pf; input_forget 1 sets f_ = 1 - i
//         c = g(x Wc^T + H Rc^T + Wbc + Rbc)
//         C' = f_ . C + i . c          o = f(x Wo^T + H Ro^T + Po . C' + Wbo + Rbo)
//         H' = o . h(C')                           (default f = Sigmoid, g = Tanh, h = Tanh)
// clip, when present, bounds every gate's pre-activation (each argument of f and g above) to
// [-clip, clip]; h(C') is not clipped (as ONNX Runtime does).
//
// The forward direction runs t = 0 .. len-1 of each batch row, the reverse one len-1 .. 0,
// where len is that row's sequence_lens entry (seq when absent). Y holds each step's H' at its
// time t, and zeros for t >= len; Y_h and Y_c hold the state after the last step run (the
// initial state for a row of length 0). For bidirectional, direction 0 is forward and 1 reverse.
//
// activations lists the functions per direction (f; f, g; f, g, h), forward's then reverse's
// (a bidirectional node may give one direction's list, used for both). Each of Sigmoid, Tanh,
// Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
// (case-insensitive) that takes an alpha (or beta) consumes the next value of activation_alpha
// (activation_beta) in order, or its ONNX default when the list is used up. Arithmetic is in
// double for float32 and float64.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

enum class Cell { kRnn, kGru, kLstm };

int64_t num_gates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
size_t num_activations(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }

// ---- activations ----

enum class ActFn {
  kSigmoid,
  kTanh,
  kRelu,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus
};

struct ActInfo {
  const char* name;
  ActFn fn;
  bool has_alpha, has_beta;
  double alpha, beta;  // the ONNX defaults
};

constexpr ActInfo kActs[] = {
    {"sigmoid", ActFn::kSigmoid, false, false, 0, 0},
    {"tanh", ActFn::kTanh, false, false, 0, 0},
    {"relu", ActFn::kRelu, false, false, 0, 0},
    {"affine", ActFn::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", ActFn::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", ActFn::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", ActFn::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", ActFn::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", ActFn::kElu, true, false, 1.0, 0},
    {"softsign", ActFn::kSoftsign, false, false, 0, 0},
    {"softplus", ActFn::kSoftplus, false, false, 0, 0},
};

struct Activation {
  ActFn fn = ActFn::kSigmoid;
  double alpha = 0, beta = 0;

  double operator()(double x) const {
    switch (fn) {
      case ActFn::kSigmoid:
        return 1.0 / (1.0 + std::exp(-x));
      case ActFn::kTanh:
        return std::tanh(x);
      case ActFn::kRelu:
        return std::max(x, 0.0);
      case ActFn::kAffine:
        return alpha * x + beta;
      case ActFn::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case ActFn::kThresholdedRelu:
        return x >= alpha ? x : 0.0;
      case ActFn::kScaledTanh:
        return alpha * std::tanh(beta * x);
      case ActFn::kHardSigmoid:
        return std::min(std::max(alpha * x + beta, 0.0), 1.0);
      case ActFn::kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case ActFn::kSoftsign:
        return x / (1.0 + std::abs(x));
      case ActFn::kSoftplus:  // log(1 + e^x) without overflow for large x
        return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    return x;
  }
};

// "forward" 1, "reverse" 1, "bidirectional" 2, anything else 0.
int64_t direction_count(const std::string& d) {
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  return 0;
}

// The node's activations, num_activations(cell) per direction (forward's first), or "" and
// a reason in *why.
std::vector<Activation> parse_activations(const Node& node, Cell cell, int64_t nd,
                                          std::string* why) {
  const size_t per_dir = num_activations(cell);
  std::vector<std::string> names;
  if (const Attribute* a = node.find_attr("activations")) {
    if (a->kind != Attribute::Kind::kStrings) {
      *why = "attribute activations must be a list of strings";
      return {};
    }
    names = a->strings;
  } else if (cell == Cell::kRnn) {
    names = {"Tanh"};
  } else if (cell == Cell::kGru) {
    names = {"Sigmoid", "Tanh"};
  } else {
    names = {"Sigmoid", "Tanh", "Tanh"};
  }
  if (names.size() == per_dir && nd == 2) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(nd)) {
    *why = "activations lists " + std::to_string(names.size()) + " functions, not " +
           std::to_string(per_dir * static_cast<size_t>(nd)) + " (" + std::to_string(per_dir) +
           " per direction)";
    return {};
  }
  std::vector<float> alphas, betas;
  for (auto [key, list] : {std::pair{"activation_alpha", &alphas}, {"activation_beta", &betas}}) {
    if (const Attribute* a = node.find_attr(key)) {
      if (a->kind != Attribute::Kind::kFloats) {
        *why = std::string("attribute ") + key + " must be a list of floats";
        return {};
      }
      *list = a->floats;
    }
  }
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> acts;
  for (const std::string& name : names) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActInfo* info = nullptr;
    for (const ActInfo& k : kActs) {
      if (lower == k.name) info = &k;
    }
    if (!info) {
      *why = "activation '" + name + "' is not supported";
      return {};
    }
    Activation act{info->fn, info->alpha, info->beta};
    if (info->has_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->has_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    acts.push_back(act);
  }
  return acts;
}

// ---- support ----

std::string rnn_support(const Node& node, Cell cell) {
  const std::string dir = node.attr_string("direction", "forward");
  const int64_t nd = direction_count(dir);
  if (nd == 0) return "direction '" + dir + "' is not supported";
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return "layout " + std::to_string(layout) + " is not supported";
  std::string why;
  parse_activations(node, cell, nd, &why);
  if (!why.empty()) return why;
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat64};
  why = ref::require_input_types(node, floats, 0, 4);
  if (why.empty()) why = ref::require_input_types(node, {DType::kInt32, DType::kInt64}, 4, 1);
  if (why.empty()) why = ref::require_input_types(node, floats, 5);
  return why;
}

std::string rnn_support_rnn(const Node& n, int64_t) { return rnn_support(n, Cell::kRnn); }
std::string rnn_support_gru(const Node& n, int64_t) { return rnn_support(n, Cell::kGru); }
std::string rnn_support_lstm(const Node& n, int64_t) { return rnn_support(n, Cell::kLstm); }

// ---- shapes ----

struct RnnShape {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, nd = 1, layout = 0;
  bool reverse_only = false;  // direction "reverse"

  // Offsets of X[t, b, 0], Y[t, d, b, 0] and state[d, b, 0] in the node's layout.
  int64_t x_at(int64_t t, int64_t b) const {
    return (layout == 0 ? t * batch + b : b * seq + t) * input;
  }
  int64_t y_at(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * nd + d) * batch + b : (b * seq + t) * nd + d) * hidden;
  }
  int64_t state_at(int64_t d, int64_t b) const {
    return (layout == 0 ? d * batch + b : b * nd + d) * hidden;
  }
  Dims y_shape() const {
    return layout == 0 ? Dims{seq, nd, batch, hidden} : Dims{batch, seq, nd, hidden};
  }
  Dims state_shape() const {
    return layout == 0 ? Dims{nd, batch, hidden} : Dims{batch, nd, hidden};
  }
};

// Validates every input's shape and dtype against X, W and R; throws naming the node.
RnnShape rnn_shape(const KernelContext& ctx, Cell cell) {
  const std::string what = ctx.node.describe();
  const Tensor& x = ctx.in(0);
  const Tensor& w = ctx.in(1);
  const Tensor& r = ctx.in(2);
  RnnShape s;
  const std::string dir = ctx.node.attr_string("direction", "forward");
  s.nd = direction_count(dir);
  NNFUSE_CHECK(s.nd != 0, what, ": direction '", dir, "' is not one of forward, reverse, ",
               "bidirectional");
  s.reverse_only = dir == "reverse";
  s.layout = ctx.node.attr_int("layout", 0);
  NNFUSE_CHECK(s.layout == 0 || s.layout == 1, what, ": layout ", s.layout, " is not 0 or 1");
  NNFUSE_CHECK(x.rank() == 3, what, ": X must be ",
               s.layout == 0 ? "[seq_length, batch_size, input_size]"
                             : "[batch_size, seq_length, input_size]",
               ", got ", dims_str(x.shape()));
  s.seq = x.dim(s.layout == 0 ? 0 : 1);
  s.batch = x.dim(s.layout == 0 ? 1 : 0);
  s.input = x.dim(2);
  NNFUSE_CHECK(r.rank() == 3, what, ": R must be [num_directions, ", num_gates(cell),
               "*hidden_size, hidden_size], got ", dims_str(r.shape()));
  s.hidden = ctx.node.attr_int("hidden_size", r.dim(2));
  NNFUSE_CHECK(s.hidden > 0, what, ": hidden_size ", s.hidden, " must be positive");
  const int64_t gh = num_gates(cell) * s.hidden;
  NNFUSE_CHECK(w.shape() == (Dims{s.nd, gh, s.input}), what, ": W is ", dims_str(w.shape()),
               ", not [num_directions, ", num_gates(cell),
               "*hidden_size, input_size] = ", dims_str(Dims{s.nd, gh, s.input}));
  NNFUSE_CHECK(r.shape() == (Dims{s.nd, gh, s.hidden}), what, ": R is ", dims_str(r.shape()),
               ", not [num_directions, ", num_gates(cell),
               "*hidden_size, hidden_size] = ", dims_str(Dims{s.nd, gh, s.hidden}));
  auto check_float = [&](size_t i, const char* name, const Dims& want, const char* form) {
    if (!ctx.has_input(i)) return;
    const Tensor& t = ctx.in(i);
    NNFUSE_CHECK(t.dtype() == x.dtype(), what, ": ", name, " is ", dtype_name(t.dtype()),
                 " but X is ", dtype_name(x.dtype()));
    NNFUSE_CHECK(t.shape() == want, what, ": ", name, " is ", dims_str(t.shape()), ", not ", form,
                 " = ", dims_str(want));
  };
  check_float(1, "W", w.shape(), "its shape");
  check_float(2, "R", r.shape(), "its shape");
  check_float(3, "B", Dims{s.nd, 2 * gh},
              cell == Cell::kRnn   ? "[num_directions, 2*hidden_size]"
              : cell == Cell::kGru ? "[num_directions, 6*hidden_size]"
                                   : "[num_directions, 8*hidden_size]");
  const char* state_form = s.layout == 0 ? "[num_directions, batch_size, hidden_size]"
                                         : "[batch_size, num_directions, hidden_size]";
  check_float(5, "initial_h", s.state_shape(), state_form);
  if (cell == Cell::kLstm) {
    check_float(6, "initial_c", s.state_shape(), state_form);
    check_float(7, "P", Dims{s.nd, 3 * s.hidden}, "[num_directions, 3*hidden_size]");
  } else {
    NNFUSE_CHECK(ctx.num_inputs() <= 6, what, ": has ", ctx.num_inputs(),
                 " inputs, more than the 6 it takes");
  }
  if (ctx.has_input(4)) {
    const Tensor& lens = ctx.in(4);
    NNFUSE_CHECK(lens.dtype() == DType::kInt32 || lens.dtype() == DType::kInt64, what,
                 ": sequence_lens must be int32 (or int64), got ", dtype_name(lens.dtype()));
    NNFUSE_CHECK(lens.shape() == Dims{s.batch}, what, ": sequence_lens is ", dims_str(lens.shape()),
                 ", not [batch_size] = [", s.batch, "]");
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t len = lens.int_at(b);
      NNFUSE_CHECK(len >= 0 && len <= s.seq, what, ": sequence_lens[", b, "] = ", len,
                   " is outside [0, seq_length = ", s.seq, "]");
    }
  }
  return s;
}

// ---- the recurrence ----

// y[k] += sum_j m[k * cols + j] * v[j] for k < rows: a gate block of W or R times a vector.
template <typename T>
void add_matvec(const T* m, int64_t rows, int64_t cols, const double* v, double* y) {
  for (int64_t k = 0; k < rows; ++k) {
    double acc = 0;
    for (int64_t j = 0; j < cols; ++j) acc += static_cast<double>(m[k * cols + j]) * v[j];
    y[k] += acc;
  }
}

template <typename T>
void run_rnn_typed(KernelContext& ctx, Cell cell, const RnnShape& s) {
  const std::string what = ctx.node.describe();
  std::string why;
  const std::vector<Activation> acts = parse_activations(ctx.node, cell, s.nd, &why);
  NNFUSE_CHECK(why.empty(), what, ": ", why);
  const bool has_clip = ctx.node.has_attr("clip");
  const double clip = ctx.node.attr_float("clip", 0.0f);
  NNFUSE_CHECK(!has_clip || clip >= 0, what, ": clip ", clip, " is negative");
  const bool input_forget = cell == Cell::kLstm && ctx.node.attr_int("input_forget", 0) != 0;
  const bool linear_before_reset =
      cell == Cell::kGru && ctx.node.attr_int("linear_before_reset", 0) != 0;
  auto clipped = [&](double v) { return has_clip ? std::clamp(v, -clip, clip) : v; };

  const int64_t H = s.hidden, I = s.input, G = num_gates(cell);
  const Tensor& x = ctx.in(0);
  const T* px = x.data<T>();
  const T* pw = ctx.in(1).data<T>();
  const T* pr = ctx.in(2).data<T>();
  const T* pb = ctx.has_input(3) ? ctx.in(3).data<T>() : nullptr;
  const T* ph0 = ctx.has_input(5) ? ctx.in(5).data<T>() : nullptr;
  const bool lstm = cell == Cell::kLstm;
  const T* pc0 = lstm && ctx.has_input(6) ? ctx.in(6).data<T>() : nullptr;
  const T* pp = lstm && ctx.has_input(7) ? ctx.in(7).data<T>() : nullptr;

  const bool want_y = ctx.wants_output(0), want_yh = ctx.wants_output(1);
  const bool want_yc = lstm && ctx.wants_output(2);
  Tensor y, yh, yc;  // zero-initialised: Y's rows past a sequence's end stay 0
  if (want_y) y = Tensor(x.dtype(), s.y_shape());
  if (want_yh) yh = Tensor(x.dtype(), s.state_shape());
  if (want_yc) yc = Tensor(x.dtype(), s.state_shape());

  std::vector<double> h(static_cast<size_t>(H)), c(h.size()), xin(static_cast<size_t>(I));
  std::vector<double> gx(static_cast<size_t>(G * H)), gh(gx.size()), rh(h.size());
  for (int64_t d = 0; d < s.nd; ++d) {
    const bool reverse = d == 1 || s.reverse_only;
    const T* w = pw + d * G * H * I;
    const T* r = pr + d * G * H * H;
    const T* wb = pb ? pb + d * 2 * G * H : nullptr;
    const T* rb = pb ? wb + G * H : nullptr;
    const T* p = pp ? pp + d * 3 * H : nullptr;
    const Activation* act = &acts[static_cast<size_t>(d) * num_activations(cell)];
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t len = ctx.has_input(4) ? ctx.in(4).int_at(b) : s.seq;
      for (int64_t k = 0; k < H; ++k) {
        const int64_t at = s.state_at(d, b) + k;
        h[k] = ph0 ? static_cast<double>(ph0[at]) : 0.0;
        c[k] = pc0 ? static_cast<double>(pc0[at]) : 0.0;
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        for (int64_t i = 0; i < I; ++i) xin[i] = static_cast<double>(px[s.x_at(t, b) + i]);
        // gx = x W^T + Wb, gh = H R^T + Rb, every gate (GRU's h-gate gh is redone below
        // when the reset gate applies before R).
        for (int64_t k = 0; k < G * H; ++k) {
          gx[k] = wb ? static_cast<double>(wb[k]) : 0.0;
          gh[k] = rb ? static_cast<double>(rb[k]) : 0.0;
        }
        add_matvec(w, G * H, I, xin.data(), gx.data());
        add_matvec(r, G * H, H, h.data(), gh.data());
        if (cell == Cell::kRnn) {
          for (int64_t k = 0; k < H; ++k) h[k] = act[0](clipped(gx[k] + gh[k]));
        } else if (cell == Cell::kGru) {
          // Gates z, r, h at offsets 0, H, 2H.
          if (!linear_before_reset) {
            for (int64_t k = 0; k < H; ++k) {
              const double rg = act[0](clipped(gx[H + k] + gh[H + k]));
              rh[k] = rg * h[k];
            }
            for (int64_t k = 0; k < H; ++k)
              gh[2 * H + k] = rb ? static_cast<double>(rb[2 * H + k]) : 0.0;
            add_matvec(r + 2 * H * H, H, H, rh.data(), gh.data() + 2 * H);
          }
          for (int64_t k = 0; k < H; ++k) {
            const double z = act[0](clipped(gx[k] + gh[k]));
            const double rg = act[0](clipped(gx[H + k] + gh[H + k]));
            const double pre = linear_before_reset ? gx[2 * H + k] + rg * gh[2 * H + k]
                                                   : gx[2 * H + k] + gh[2 * H + k];
            const double n = act[1](clipped(pre));
            h[k] = (1.0 - z) * n + z * h[k];
          }
        } else {
          // Gates i, o, f, c at offsets 0, H, 2H, 3H; peepholes i, o, f at 0, H, 2H.
          for (int64_t k = 0; k < H; ++k) {
            const double pi = p ? static_cast<double>(p[k]) : 0.0;
            const double po = p ? static_cast<double>(p[H + k]) : 0.0;
            const double pf = p ? static_cast<double>(p[2 * H + k]) : 0.0;
            const double ig = act[0](clipped(gx[k] + gh[k] + pi * c[k]));
            const double fg = input_forget
                                  ? 1.0 - ig
                                  : act[0](clipped(gx[2 * H + k] + gh[2 * H + k] + pf * c[k]));
            const double cg = act[1](clipped(gx[3 * H + k] + gh[3 * H + k]));
            c[k] = fg * c[k] + ig * cg;
            const double og = act[0](clipped(gx[H + k] + gh[H + k] + po * c[k]));
            h[k] = og * act[2](c[k]);
          }
        }
        if (want_y) {
          T* py = y.data<T>() + s.y_at(t, d, b);
          for (int64_t k = 0; k < H; ++k) py[k] = static_cast<T>(h[k]);
        }
      }
      for (int64_t k = 0; k < H; ++k) {
        const int64_t at = s.state_at(d, b) + k;
        if (want_yh) yh.data<T>()[at] = static_cast<T>(h[k]);
        if (want_yc) yc.data<T>()[at] = static_cast<T>(c[k]);
      }
    }
  }
  if (want_y) ctx.outputs[0] = y;
  if (want_yh) ctx.outputs[1] = yh;
  if (want_yc) ctx.outputs[2] = yc;
}

void run_rnn_cell(KernelContext& ctx, Cell cell) {
  const RnnShape s = rnn_shape(ctx, cell);
  NNFUSE_CHECK(ctx.node.num_outputs() <= (cell == Cell::kLstm ? 3u : 2u), ctx.node.describe(),
               ": has ", ctx.node.num_outputs(), " outputs, more than it produces");
  ref::dispatch_float(ctx.in(0).dtype(), ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    run_rnn_typed<T>(ctx, cell, s);
  });
}

void run_rnn(KernelContext& ctx) { run_rnn_cell(ctx, Cell::kRnn); }
void run_gru(KernelContext& ctx) { run_rnn_cell(ctx, Cell::kGru); }
void run_lstm(KernelContext& ctx) { run_rnn_cell(ctx, Cell::kLstm); }

}  // namespace

void append_rnn_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"RNN", run_rnn, rnn_support_rnn});
  t.push_back({"GRU", run_gru, rnn_support_gru});
  t.push_back({"LSTM", run_lstm, rnn_support_lstm});
}

}  // namespace nnfuse
