// LSTM, GRU and RNN (forward, reverse or bidirectional; layout 0; LSTM and GRU with the default
// activations, RNN with Tanh, Relu or Sigmoid per direction) on oneDNN matmuls. Per direction,
// the input projection of every step at once, X [T*N, I] W^T [I, G*H] plus the biases that sit
// outside the gates' products, is one GEMM into a buffer of gate pre-activations; then per step
// the recurrent product of the state and the gates, with cpu_math.h's vectorized sigmoid and
// tanh (ONNX's gate orders: LSTM i, o, f, c; GRU z, r, h; RNN its one gate i):
//   LSTM: the product H R^T [H, 4H] accumulated onto the step's rows (a sum post-op);
//         c = f c + i c', h = o tanh(c).
//   GRU, linear_before_reset 1: H R^T [H, 3H] into a buffer of its own;
//         z, r = sigmoid(x + h-part), n = tanh(x_h + r (H Rh^T + Rbh)), H = (1 - z) n + z H.
//   GRU, linear_before_reset 0: H [Rz Rr]^T accumulated onto the z and r columns, then
//         (r H) Rh^T onto the h columns (two GEMMs a step), n = tanh of those.
//   RNN:  the product H R^T [H, H] accumulated onto the step's rows; H = f(those), f the
//         direction's activation (Tanh by default; one name serves both directions).
// In a batch of up to 8 rows, the recurrences of the (direction, batch row) pairs run as tasks
// of whole sequences spread over the threads, each task a direction's share of the rows: each
// step's recurrent product is then a few rows, on cpu_rows.h's product over R packed in panels
// (a oneDNN call a step cost more than the product, and its threads met at every step). One
// direction of fewer rows than threads (a unidirectional layer at batch 1) would leave threads
// idle that way: where its step's product is large enough, the threads split its hidden units
// instead (team mode), each reading only its units' rows of R, and meet once a step.
// Declined (the reference kernel runs it): peepholes, clip, input_forget, other activations
// (activation_alpha or activation_beta given), layout 1, sequence_lens other than the full
// length, weights known only at run time.
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {

namespace {

using dnnl::memory;

enum class Cell { kGru, kLstm, kRnn };

// Batches of up to this many rows run as tasks of whole sequences with row-panel products.
constexpr int64_t kMaxRowBatch = 8;
// Team mode (RecurrentKernel::team_members) splits the hidden units in multiples of this many, for
// one direction whose step's product has at least kMinTeamProduct multiply-adds. Measured on a
// 2-core Zen 4, batch 1, against one thread: LSTM of hidden 256 0.54x the time, GRU of 192
// 0.78x; LSTM of hidden 96 (37K multiply-adds a step) 1.6x, its step too short for the
// threads' meeting.
constexpr int64_t kTeamUnits = 16;
constexpr int64_t kMinTeamProduct = 65536;

enum class Act { kTanh, kRelu, kSigmoid };  // an RNN's activation

struct RecSpec {
  Cell cell = Cell::kLstm;
  int64_t gates = 4, t = 0, n = 0, i = 0, h = 0, dirs = 1;
  bool reverse = false;  // one direction, run backwards
  bool bias = false, init_h = false, init_c = false;
  bool linear_before_reset = false;       // GRU
  bool want[3] = {false, false, false};   // Y, Y_h, Y_c
  Act act[2] = {Act::kTanh, Act::kTanh};  // RNN, per direction
};

bool lower_equal(std::string a, const char* b) {
  for (char& ch : a) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return a == b;
}

// Why the kernel declines the node, "" when it runs it (with *s filled).
std::string rec_declines(const NodeInfo& info, Cell cell, RecSpec* s) {
  const Node& n = info.node;
  s->cell = cell;
  s->gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  for (size_t k = 0; k < 3; ++k) {
    if (!static_f32_input(info, k)) return "input " + std::to_string(k) + " is not static float32";
  }
  if (!info.constant(1) || !info.constant(2)) return "W or R is not a constant";
  if (n.num_inputs() > 3 && info.has_input(3) && !info.constant(3)) return "B is not a constant";
  if (n.num_inputs() > 7 && info.has_input(7)) return "peepholes (P)";
  if (n.has_attr("clip")) return "clip";
  if (n.attr_int("input_forget", 0) != 0) return "input_forget";
  if (n.attr_int("layout", 0) != 0) return "layout 1";
  if (n.has_attr("activation_alpha") || n.has_attr("activation_beta")) return "activation_alpha";
  const Attribute* a = n.find_attr("activations");
  const std::vector<std::string> acts = a ? a->strings : std::vector<std::string>{};
  const size_t per_dir = cell == Cell::kLstm ? 3 : 2;  // RNN's are read below
  for (size_t k = 0; cell != Cell::kRnn && k < acts.size(); ++k) {
    if (!lower_equal(acts[k], k % per_dir == 0 ? "sigmoid" : "tanh")) {
      return "activation " + acts[k] + " (only the defaults)";
    }
  }
  const Dims x = *known_shape(info, 0), w = *known_shape(info, 1);
  if (x.size() != 3 || w.size() != 3) return "X or W is not 3-D";
  const std::string dir = n.attr_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return "direction " + dir;
  s->dirs = dir == "bidirectional" ? 2 : 1;
  s->reverse = dir == "reverse";
  if (cell == Cell::kRnn && !acts.empty()) {
    const size_t dirs = static_cast<size_t>(s->dirs);
    if (acts.size() != 1 && acts.size() != dirs) {
      return "activations lists " + std::to_string(acts.size()) + " functions for " +
             std::to_string(dirs) + " direction(s)";
    }
    for (size_t d = 0; d < dirs; ++d) {
      const std::string& name = acts[acts.size() == 1 ? 0 : d];
      if (lower_equal(name, "tanh")) {
        s->act[d] = Act::kTanh;
      } else if (lower_equal(name, "relu")) {
        s->act[d] = Act::kRelu;
      } else if (lower_equal(name, "sigmoid")) {
        s->act[d] = Act::kSigmoid;
      } else {
        return "activation " + name + " (only Tanh, Relu or Sigmoid)";
      }
    }
  }
  s->t = x[0];
  s->n = x[1];
  s->i = x[2];
  s->h = w[1] / s->gates;
  if (w[0] != s->dirs || w[1] != s->gates * s->h || w[2] != s->i || s->h == 0) {
    return "W is " + dims_str(w) + " for X " + dims_str(x);
  }
  // oneDNN's matmul stops the process (a division by zero) on an empty product.
  if (s->t == 0 || s->n == 0 || s->i == 0) return "an empty sequence, batch or input";
  if (*known_shape(info, 2) != Dims{s->dirs, s->gates * s->h, s->h}) return "R's shape";
  s->bias = n.num_inputs() > 3 && info.has_input(3);
  if (s->bias && info.constant(3)->shape() != Dims{s->dirs, 2 * s->gates * s->h}) {
    return "B's shape";
  }
  if (n.num_inputs() > 4 && info.has_input(4)) {
    const Tensor* lens = info.constant(4);
    if (!lens) return "sequence_lens known only at run time";
    for (int64_t k = 0; k < lens->numel(); ++k) {
      if (lens->int_at(k) != s->t) return "sequence_lens shorter than the sequence";
    }
  }
  const Dims state = {s->dirs, s->n, s->h};
  for (size_t k : {size_t{5}, size_t{6}}) {
    if (n.num_inputs() <= k || !info.has_input(k)) continue;
    if (info.input_dtype(k) != DType::kFloat32 || known_shape(info, k) != state) {
      return "initial state " + std::to_string(k) + " is not float32 " + dims_str(state);
    }
    (k == 5 ? s->init_h : s->init_c) = true;
  }
  s->linear_before_reset = cell == Cell::kGru && n.attr_int("linear_before_reset", 0) != 0;
  for (size_t k = 0; k < 3; ++k) s->want[k] = k < n.num_outputs() && n.output(k);
  return "";
}

template <Cell kCell>
std::string declines(const NodeInfo& info) {
  RecSpec s;
  return rec_declines(info, kCell, &s);
}

// One LSTM step for n units of one row: g holds the pre-activations [i, o, f, c'], gs apart
// (the hidden size); c is updated in place, h written.
NNFUSE_TARGET_CLONES void lstm_cell(const float* g, int64_t gs, float* c, float* h, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float in_g = cpu::sigmoid_f(g[j]), out_g = cpu::sigmoid_f(g[gs + j]);
    const float forget = cpu::sigmoid_f(g[2 * gs + j]), cell = cpu::tanh_f(g[3 * gs + j]);
    c[j] = forget * c[j] + in_g * cell;
    h[j] = out_g * cpu::tanh_f(c[j]);
  }
}

// One GRU step (linear_before_reset 1) for n units of one row: g the input part [z, r, h]
// (biases in), rec the recurrent product H R^T, both gs apart (the hidden size), rbh Rh's bias;
// h = the new state from the previous one, hp (h may be hp).
NNFUSE_TARGET_CLONES void gru_cell_lbr(const float* g, const float* rec, int64_t gs,
                                       const float* rbh, const float* hp, float* h, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float z = cpu::sigmoid_f(g[j] + rec[j]), r = cpu::sigmoid_f(g[gs + j] + rec[gs + j]);
    const float cand = cpu::tanh_f(g[2 * gs + j] + r * (rec[2 * gs + j] + rbh[j]));
    h[j] = (1.0f - z) * cand + z * hp[j];
  }
}

// GRU (linear_before_reset 0), first half: rh = sigmoid(g_r) . h.
NNFUSE_TARGET_CLONES void gru_reset(const float* g, const float* h, float* rh, int64_t n) {
  for (int64_t j = 0; j < n; ++j) rh[j] = cpu::sigmoid_f(g[n + j]) * h[j];
}

// Second half: g's h columns hold the whole pre-activation now.
NNFUSE_TARGET_CLONES void gru_update(const float* g, float* h, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float z = cpu::sigmoid_f(g[j]), cand = cpu::tanh_f(g[2 * n + j]);
    h[j] = (1.0f - z) * cand + z * h[j];
  }
}

// One RNN step over a whole batch (n = batch * hidden values): h = f(g), g the pre-activations.
NNFUSE_TARGET_CLONES void rnn_cell(const float* g, float* h, int64_t n, Act act) {
  switch (act) {
    case Act::kTanh:
      for (int64_t j = 0; j < n; ++j) h[j] = cpu::tanh_f(g[j]);
      return;
    case Act::kRelu:
      for (int64_t j = 0; j < n; ++j) h[j] = std::max(g[j], 0.0f);
      return;
    case Act::kSigmoid:
      for (int64_t j = 0; j < n; ++j) h[j] = cpu::sigmoid_f(g[j]);
      return;
  }
}

// [rows, cols] rows `stride` floats apart.
memory::desc strided(int64_t rows, int64_t cols, int64_t stride) {
  return memory::desc({rows, cols}, memory::data_type::f32, memory::dims{stride, 1});
}

class RecurrentKernel : public Kernel {
 public:
  RecurrentKernel(const NodeInfo& info, Cell cell) : what_(info.node.describe()) {
    rec_declines(info, cell, &s_);
    rows_ = s_.n <= kMaxRowBatch;
    ThreadScope threads(info.num_threads);
    const int64_t h = s_.h, g = s_.gates * h;
    // GRU with linear_before_reset 0 splits R into its z, r rows and its h rows.
    const bool split = cell == Cell::kGru && !s_.linear_before_reset;
    const int64_t team = team_members(split, std::max(1, info.num_threads));
    guarded(what_, [&] {
      dnnl::primitive_attr plain = user_scratchpad_attr();
      dnnl::primitive_attr acc = user_scratchpad_attr();
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      acc.set_post_ops(sum);
      const memory::desc bias = f32_desc({1, g}, Tag::ab);
      dnnl::matmul::primitive_desc in_pd(
          dnnl::matmul::desc(f32_desc({s_.t * s_.n, s_.i}, Tag::ab), f32_desc({s_.i, g}, Tag::any),
                             bias, f32_desc({s_.t * s_.n, g}, Tag::ab)),
          plain, engine());
      in_ = dnnl::matmul(in_pd);
      // The recurrent products: [N, H] x [H, cols], into rows of `dst_stride` floats.
      auto rec = [&](int64_t cols, bool accumulate) {
        return dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(f32_desc({s_.n, h}, Tag::ab), f32_desc({h, cols}, Tag::any),
                               strided(s_.n, cols, accumulate ? g : cols)),
            accumulate ? acc : plain, engine());
      };
      // Small batches never run them (row_step).
      dnnl::matmul::primitive_desc rec_pd, hh_pd;
      if (!rows_) {
        rec_pd = rec(split ? 2 * h : g, cell != Cell::kGru || split);
        rec_ = dnnl::matmul(rec_pd);
        if (split) {
          hh_pd = rec(h, true);
          hh_ = dnnl::matmul(hh_pd);
        }
      }
      const Tensor& w = *info.constant(1);
      const Tensor& r = *info.constant(2);
      auto pack = [&](const float* p, int64_t rows, int64_t cols,
                      const dnnl::matmul::primitive_desc& pd) {
        // A [rows, cols] block of W or R is the [cols, rows] operand stored transposed (ba).
        return prepack(Tensor::borrow(DType::kFloat32, {rows, cols}, const_cast<float*>(p)),
                       f32_desc({cols, rows}, Tag::ba), pd.weights_desc(), owned_);
      };
      for (int64_t d = 0; d < s_.dirs; ++d) {
        const float* rd = r.data<float>() + d * g * h;
        w_.push_back(pack(w.data<float>() + d * g * s_.i, g, s_.i, in_pd));
        if (team > 0) {
          plan_team(rd, team);
        } else if (rows_) {
          r_rows_.push_back(cpu::pack_row_panels(rd, split ? 2 * h : g, h));
          if (split) rh_rows_.push_back(cpu::pack_row_panels(rd + 2 * h * h, h, h));
        } else {
          r_.push_back(pack(rd, split ? 2 * h : g, h, rec_pd));
          if (split) rh_w_.push_back(pack(rd + 2 * h * h, h, h, hh_pd));
        }
        std::vector<float> b(static_cast<size_t>(g), 0.0f), rbh(static_cast<size_t>(h), 0.0f);
        if (s_.bias) {
          const float* pb = info.constant(3)->data<float>() + d * 2 * g;
          for (int64_t k = 0; k < g; ++k) {
            // Rh's bias stays inside the reset product when linear_before_reset is 1.
            const bool inside = s_.linear_before_reset && k >= 2 * h;
            b[static_cast<size_t>(k)] = pb[k] + (inside ? 0.0f : pb[g + k]);
            if (inside) rbh[static_cast<size_t>(k - 2 * h)] = pb[g + k];
          }
        }
        bias_.push_back(memory(bias, engine()));
        std::memcpy(bias_.back().get_data_handle(), b.data(), b.size() * sizeof(float));
        rbh_.push_back(std::move(rbh));
      }
    });
    // Per direction: its gate rows, state and GRU work row.
    gates_.resize(static_cast<size_t>(s_.dirs * s_.t * s_.n * g));
    h_.resize(static_cast<size_t>(s_.dirs * s_.n * h));
    c_.resize(h_.size());
    work_stride_ = cell == Cell::kGru ? s_.n * (split ? h : g) : 0;
    work_.resize(static_cast<size_t>(s_.dirs * work_stride_));
  }

  // W, R and B are prepacked.
  bool reads_input(size_t i) const override { return i != 1 && i != 2 && i != 3; }

  void run(KernelIO& io) override {
    const int64_t t = s_.t, n = s_.n, h = s_.h, g = s_.gates * h, dirs = s_.dirs;
    check_input(io.in(0), {t, n, s_.i}, Layout::kPlain, what_, 0);
    Tensor* y = s_.want[0] ? &io.output(0, DType::kFloat32, {t, dirs, n, h}) : nullptr;
    Tensor* yh = s_.want[1] ? &io.output(1, DType::kFloat32, {dirs, n, h}) : nullptr;
    Tensor* yc = s_.cell == Cell::kLstm && s_.want[2] ? &io.output(2, DType::kFloat32, {dirs, n, h})
                                                      : nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    // The input projections of every step, each direction's into its own gate rows.
    for (int64_t d = 0; d < dirs; ++d) {
      guarded(what_, [&] {
        memory src(f32_desc({t * n, s_.i}, Tag::ab), engine(), handle(io.in(0)));
        memory dst(f32_desc({t * n, g}, Tag::ab), engine(), gates_.data() + d * t * n * g);
        execute(in_, {{DNNL_ARG_SRC, src},
                      {DNNL_ARG_WEIGHTS, w_[static_cast<size_t>(d)]},
                      {DNNL_ARG_BIAS, bias_[static_cast<size_t>(d)]},
                      {DNNL_ARG_DST, dst}});
      });
    }
    const int64_t state = n * h, work_row = n > 0 ? work_stride_ / n : 0;
    // The recurrence of direction d over batch rows [b0, b1). On the row-panel path it throws
    // nothing: no oneDNN call.
    auto recur = [&](int64_t d, int64_t b0, int64_t b1) {
      const size_t di = static_cast<size_t>(d);
      const int64_t rows = b1 - b0, part = rows * h;
      float* hd = h_.data() + d * state + b0 * h;
      float* cd = c_.data() + d * state + b0 * h;
      float* wd = work_.data() + d * work_stride_ + b0 * work_row;
      initial_state(io, s_.init_h, 5, d * state + b0 * h, part, hd);
      initial_state(io, s_.init_c, 6, d * state + b0 * h, part, cd);
      const bool backwards = s_.reverse || d == 1;
      for (int64_t step = 0; step < t; ++step) {
        const int64_t ts = backwards ? t - 1 - step : step;
        float* gt = gates_.data() + ((d * t + ts) * n + b0) * g;
        if (rows_) {
          row_step(gt, di, hd, cd, wd, rows);
        } else {
          guarded(what_, [&] { this->step(gt, di, hd, cd, wd); });
        }
        if (y) {
          std::memcpy(y->data<float>() + ((ts * dirs + d) * n + b0) * h, hd, part * sizeof(float));
        }
      }
      if (yh) std::memcpy(yh->data<float>() + d * state + b0 * h, hd, part * sizeof(float));
      if (yc) std::memcpy(yc->data<float>() + d * state + b0 * h, cd, part * sizeof(float));
    };
    if (!rows_) {
      for (int64_t d = 0; d < dirs; ++d) recur(d, 0, n);
      return;
    }
    if (!team_.empty()) {
      run_team(io, y, yh, yc);
      return;
    }
    // The recurrences of the (direction, batch row) pairs are independent: tasks of whole
    // sequences over the threads, each task a direction's rows [b0, b1) (a product reads R once
    // for its rows).
    const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    const int64_t per_dir = std::clamp<int64_t>(threads / dirs, 1, n);
    const int64_t chunk = (n + per_dir - 1) / per_dir, chunks = (n + chunk - 1) / chunk;
    const int64_t tasks = dirs * chunks;
    const int nt = static_cast<int>(std::min<int64_t>(threads, tasks));
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b0 = task % chunks * chunk;
      recur(task / chunks, b0, std::min(n, b0 + chunk));
    }
  }

 private:
  // y (+)= x R^T for `rows` rows x of h floats (h apart), R packed in row panels of `cols`
  // outputs, y rows ys apart.
  void row_product(const std::vector<float>& panels, const float* x, int64_t rows, int64_t cols,
                   bool accumulate, float* y, int64_t ys) const {
    const int64_t h = s_.h;
    cpu::rows_times_panels(x, rows, h, h, panels.data(), h * cpu::kRowPanel, cols, accumulate, y,
                           ys);
  }

  // step() for `rows` consecutive batch rows (gt, hd, cd and wd at the first), on the calling
  // thread.
  void row_step(float* gt, size_t di, float* hd, float* cd, float* wd, int64_t rows) const {
    const int64_t h = s_.h, g = s_.gates * h;
    const std::vector<float>& r = r_rows_[di];
    if (s_.cell == Cell::kRnn) {
      row_product(r, hd, rows, g, true, gt, g);
      for (int64_t q = 0; q < rows; ++q) rnn_cell(gt + q * g, hd + q * h, h, s_.act[di]);
    } else if (s_.cell == Cell::kLstm) {
      row_product(r, hd, rows, g, true, gt, g);
      for (int64_t q = 0; q < rows; ++q) lstm_cell(gt + q * g, h, cd + q * h, hd + q * h, h);
    } else if (s_.linear_before_reset) {
      row_product(r, hd, rows, g, false, wd, g);
      for (int64_t q = 0; q < rows; ++q) {
        gru_cell_lbr(gt + q * g, wd + q * g, h, rbh_[di].data(), hd + q * h, hd + q * h, h);
      }
    } else {
      row_product(r, hd, rows, 2 * h, true, gt, g);
      for (int64_t q = 0; q < rows; ++q) gru_reset(gt + q * g, hd + q * h, wd + q * h, h);
      row_product(rh_rows_[di], wd, rows, h, true, gt + 2 * h, g);
      for (int64_t q = 0; q < rows; ++q) gru_update(gt + q * g, hd + q * h, h);
    }
  }

  // One step of direction `di` on the step's gate rows `gt`: its state hd (and cd) updated;
  // wd: its GRU work rows.
  void step(float* gt, size_t di, float* hd, float* cd, float* wd) {
    const int64_t n = s_.n, h = s_.h, g = s_.gates * h;
    auto product = [&](dnnl::matmul& p, const memory& wei, float* src, float* dst,
                       const memory::desc& dst_desc) {
      memory s(f32_desc({n, h}, Tag::ab), engine(), src);
      memory o(dst_desc, engine(), dst);
      execute(p, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, o}});
    };
    if (s_.cell == Cell::kRnn) {
      // g == h: the step's rows are the [n, h] pre-activations, contiguous.
      product(rec_, r_[di], hd, gt, strided(n, g, g));
      rnn_cell(gt, hd, n * h, s_.act[di]);
    } else if (s_.cell == Cell::kLstm) {
      product(rec_, r_[di], hd, gt, strided(n, g, g));
      for (int64_t b = 0; b < n; ++b) lstm_cell(gt + b * g, h, cd + b * h, hd + b * h, h);
    } else if (s_.linear_before_reset) {
      product(rec_, r_[di], hd, wd, strided(n, g, g));
      for (int64_t b = 0; b < n; ++b) {
        gru_cell_lbr(gt + b * g, wd + b * g, h, rbh_[di].data(), hd + b * h, hd + b * h, h);
      }
    } else {
      product(rec_, r_[di], hd, gt, strided(n, 2 * h, g));
      for (int64_t b = 0; b < n; ++b) gru_reset(gt + b * g, hd + b * h, wd + b * h, h);
      product(hh_, rh_w_[di], wd, gt + 2 * h, strided(n, h, g));
      for (int64_t b = 0; b < n; ++b) gru_update(gt + b * g, hd + b * h, h);
    }
  }

  // v[0, count) = input k's values from `offset` on, where it is given, else zeros: an initial
  // state.
  static void initial_state(KernelIO& io, bool given, size_t k, int64_t offset, int64_t count,
                            float* v) {
    if (given) {
      std::memcpy(v, io.in(k).data<float>() + offset, count * sizeof(float));
    } else {
      std::fill(v, v + count, 0.0f);
    }
  }

  // Team mode: one direction of fewer rows than threads (the tasks of whole sequences would
  // leave threads idle) whose recurrent product is worth more threads than one. The hidden
  // units are split over the team, in whole vectors; member m owns units [u0, u1): its rows of R
  // for each gate, packed in panels, and its slice of the gates, state and outputs. The members
  // meet once a step, the state double-buffered (hbuf_). Not for GRU with linear_before_reset 0,
  // whose second product needs every unit's reset state within the step.
  struct Member {
    int64_t u0 = 0, u1 = 0;
    std::vector<std::vector<float>> r;  // per gate: R's rows [gate * H + u0, gate * H + u1)
  };

  // Team mode's member count for `threads` threads: 0 where it is off.
  int64_t team_members(bool split, int threads) const {
    const int64_t h = s_.h;
    const int64_t most = std::min<int64_t>(threads, h / kTeamUnits);
    // With as many rows as threads the tasks keep every thread busy without meeting every step,
    // which a busy machine makes costly (a thread held up holds up the team).
    if (!rows_ || s_.dirs != 1 || split || most < 2 || s_.n >= threads ||
        s_.gates * h * h * s_.n < kMinTeamProduct) {
      return 0;
    }
    return most;
  }

  // The members over the one direction's R (r, [gates * H, H]).
  void plan_team(const float* r, int64_t members) {
    const int64_t h = s_.h, vectors = h / kTeamUnits;
    for (int64_t m = 0; m < members; ++m) {
      Member mb;
      // Whole vectors of units, as even as they come.
      mb.u0 = vectors * m / members * kTeamUnits;
      mb.u1 = m + 1 == members ? h : vectors * (m + 1) / members * kTeamUnits;
      for (int64_t k = 0; k < s_.gates; ++k) {
        mb.r.push_back(cpu::pack_row_panels(r + (k * h + mb.u0) * h, mb.u1 - mb.u0, h));
      }
      team_.push_back(std::move(mb));
    }
    hbuf_.assign(static_cast<size_t>(2 * s_.n * h), 0.0f);
  }

  // One step of member m: the products over its units' rows of R from the state hp, then the
  // cells of its units into hn (c_ in place).
  void team_step(const Member& mb, float* gt, const float* hp, float* hn) {
    const int64_t n = s_.n, h = s_.h, g = s_.gates * h, u0 = mb.u0, w = mb.u1 - mb.u0;
    const bool gru = s_.cell == Cell::kGru;
    float* dst = gru ? work_.data() : gt;  // GRU: H R^T into its own rows
    for (int64_t k = 0; k < s_.gates; ++k) {
      cpu::rows_times_panels(hp, n, h, h, mb.r[static_cast<size_t>(k)].data(), h * cpu::kRowPanel,
                             w, !gru, dst + k * h + u0, g);
    }
    for (int64_t q = 0; q < n; ++q) {
      const float* hq = hp + q * h + u0;
      float* out = hn + q * h + u0;
      if (s_.cell == Cell::kLstm) {
        lstm_cell(gt + q * g + u0, h, c_.data() + q * h + u0, out, w);
      } else if (gru) {
        gru_cell_lbr(gt + q * g + u0, work_.data() + q * g + u0, h, rbh_[0].data() + u0, hq, out,
                     w);
      } else {
        rnn_cell(gt + q * g + u0, out, w, s_.act[0]);
      }
    }
  }

  // The one direction's recurrence in team mode.
  void run_team(KernelIO& io, Tensor* y, Tensor* yh, Tensor* yc) {
    const int64_t t = s_.t, n = s_.n, h = s_.h, g = s_.gates * h, state = n * h;
    float* hb = hbuf_.data();
    initial_state(io, s_.init_h, 5, 0, state, hb);
    initial_state(io, s_.init_c, 6, 0, state, c_.data());
    const int64_t members = static_cast<int64_t>(team_.size());
    float* py = y ? y->data<float>() : nullptr;
    const int nt =
        omp_in_parallel() ? 1 : static_cast<int>(std::min<int64_t>(members, omp_get_max_threads()));
#pragma omp parallel num_threads(nt)
    {
      const int64_t tid = omp_get_thread_num(), threads = omp_get_num_threads();
      for (int64_t step = 0; step < t; ++step) {
        const int64_t ts = s_.reverse ? t - 1 - step : step;
        const float* hp = hb + step % 2 * state;
        float* hn = hb + (step + 1) % 2 * state;
        for (int64_t m = tid; m < members; m += threads) {
          const Member& mb = team_[static_cast<size_t>(m)];
          team_step(mb, gates_.data() + ts * n * g, hp, hn);
          if (!py) continue;
          for (int64_t q = 0; q < n; ++q) {
            std::memcpy(py + (ts * n + q) * h + mb.u0, hn + q * h + mb.u0,
                        (mb.u1 - mb.u0) * sizeof(float));
          }
        }
#pragma omp barrier
      }
    }
    const float* last = hb + t % 2 * state;
    if (yh) std::memcpy(yh->data<float>(), last, state * sizeof(float));
    if (yc) std::memcpy(yc->data<float>(), c_.data(), state * sizeof(float));
  }

  std::string what_;
  RecSpec s_;
  std::vector<Member> team_;  // team mode's members (none: off)
  std::vector<float> hbuf_;   // team mode's state, [2][N * H]
  dnnl::matmul in_, rec_, hh_;
  OwnedBuffers owned_;  // under the prepacked weights
  std::vector<memory> w_, r_, rh_w_, bias_;
  std::vector<std::vector<float>> rbh_;
  std::vector<float> gates_, h_, c_, work_;
  int64_t work_stride_ = 0;
  bool rows_ = false;  // small batches: the row-panel products over r_rows_ and rh_rows_
  std::vector<std::vector<float>> r_rows_, rh_rows_;
  std::mutex mu_;
};

template <Cell kCell>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  return std::make_unique<RecurrentKernel>(info, kCell);
}

}  // namespace

KernelFactory lstm_factory() {
  return {"onednn.lstm", accepts_unless_declined<declines<Cell::kLstm>>,
          nullptr,       create<Cell::kLstm>,
          nullptr,       declines<Cell::kLstm>};
}

KernelFactory gru_factory() {
  return {"onednn.gru", accepts_unless_declined<declines<Cell::kGru>>,
          nullptr,      create<Cell::kGru>,
          nullptr,      declines<Cell::kGru>};
}

KernelFactory rnn_factory() {
  return {"onednn.rnn", accepts_unless_declined<declines<Cell::kRnn>>,
          nullptr,      create<Cell::kRnn>,
          nullptr,      declines<Cell::kRnn>};
}

}  // namespace nnfuse::onednn
