// LSTM (forward, reverse or bidirectional; layout 0; the default activations) on oneDNN
// matmuls: per direction, the input projection of every step at once, X [T*N, I] W^T [I, 4H]
// + (Wb + Rb), one GEMM into a buffer of gate pre-activations, then per step the recurrent
// product h R^T [H, 4H] accumulated onto that step's rows (a sum post-op) and the gates:
// i, o, f = sigmoid, c' = tanh (ONNX's gate order i, o, f, c), c = f c + i c', h = o tanh(c),
// with cpu_math.h's vectorized sigmoid and tanh.
// Declined (the reference kernel runs it): peepholes, clip, input_forget, other activations,
// layout 1, sequence_lens other than the full length, weights known only at run time.
#include <cctype>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {

namespace {

using dnnl::memory;

struct LstmSpec {
  int64_t t = 0, n = 0, i = 0, h = 0, dirs = 1;
  bool reverse = false;  // one direction, run backwards
  bool bias = false, init_h = false, init_c = false;
  bool want[3] = {false, false, false};  // Y, Y_h, Y_c
};

bool lower_equal(std::string a, const char* b) {
  for (char& ch : a) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return a == b;
}

// Why the kernel declines the node, "" when it runs it (with *s filled).
std::string lstm_declines(const NodeInfo& info, LstmSpec* s) {
  const Node& n = info.node;
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
  for (size_t k = 0; k < acts.size(); ++k) {
    if (!lower_equal(acts[k], k % 3 == 0 ? "sigmoid" : "tanh")) {
      return "activation " + acts[k] + " (only Sigmoid, Tanh, Tanh)";
    }
  }
  const Dims x = *known_shape(info, 0), w = *known_shape(info, 1);
  if (x.size() != 3 || w.size() != 3) return "X or W is not 3-D";
  const std::string dir = n.attr_string("direction", "forward");
  s->dirs = dir == "bidirectional" ? 2 : 1;
  s->reverse = dir == "reverse";
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return "direction " + dir;
  s->t = x[0];
  s->n = x[1];
  s->i = x[2];
  s->h = w[1] / 4;
  if (w[0] != s->dirs || w[1] != 4 * s->h || w[2] != s->i || s->h == 0) {
    return "W is " + dims_str(w) + " for X " + dims_str(x);
  }
  if (*known_shape(info, 2) != Dims{s->dirs, 4 * s->h, s->h}) return "R's shape";
  s->bias = n.num_inputs() > 3 && info.has_input(3);
  if (s->bias && info.constant(3)->shape() != Dims{s->dirs, 8 * s->h}) return "B's shape";
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
  for (size_t k = 0; k < 3; ++k) s->want[k] = k < n.num_outputs() && n.output(k);
  return "";
}

std::string declines(const NodeInfo& info) {
  LstmSpec s;
  return lstm_declines(info, &s);
}

// One step's gates for one row: g holds the pre-activations [i, o, f, c'] of H each; c and h
// are updated in place.
NNFUSE_TARGET_CLONES void lstm_cell(const float* g, float* c, float* h, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const float in_g = cpu::sigmoid_f(g[j]), out_g = cpu::sigmoid_f(g[n + j]);
    const float forget = cpu::sigmoid_f(g[2 * n + j]), cell = cpu::tanh_f(g[3 * n + j]);
    c[j] = forget * c[j] + in_g * cell;
    h[j] = out_g * cpu::tanh_f(c[j]);
  }
}

class LstmKernel : public Kernel {
 public:
  explicit LstmKernel(const NodeInfo& info) : what_(info.node.describe()) {
    lstm_declines(info, &s_);
    ThreadScope threads(info.num_threads);
    const int64_t g = 4 * s_.h;
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
      dnnl::matmul::primitive_desc rec_pd(
          dnnl::matmul::desc(f32_desc({s_.n, s_.h}, Tag::ab), f32_desc({s_.h, g}, Tag::any),
                             f32_desc({s_.n, g}, Tag::ab)),
          acc, engine());
      in_ = dnnl::matmul(in_pd);
      rec_ = dnnl::matmul(rec_pd);
      const Tensor& w = *info.constant(1);
      const Tensor& r = *info.constant(2);
      for (int64_t d = 0; d < s_.dirs; ++d) {
        // W[d] is [4H, I]: the [I, 4H] operand stored transposed (tag ba); R[d] likewise.
        const float* wd = w.data<float>() + d * g * s_.i;
        const float* rd = r.data<float>() + d * g * s_.h;
        w_.push_back(prepack(Tensor::borrow(DType::kFloat32, {g, s_.i}, const_cast<float*>(wd)),
                             f32_desc({s_.i, g}, Tag::ba), in_pd.weights_desc()));
        r_.push_back(prepack(Tensor::borrow(DType::kFloat32, {g, s_.h}, const_cast<float*>(rd)),
                             f32_desc({s_.h, g}, Tag::ba), rec_pd.weights_desc()));
        std::vector<float> b(static_cast<size_t>(g), 0.0f);
        if (s_.bias) {
          const float* pb = info.constant(3)->data<float>() + d * 2 * g;
          for (int64_t k = 0; k < g; ++k) b[static_cast<size_t>(k)] = pb[k] + pb[g + k];
        }
        bias_.push_back(memory(bias, engine()));
        std::memcpy(bias_.back().get_data_handle(), b.data(), b.size() * sizeof(float));
      }
    });
    gates_.resize(static_cast<size_t>(s_.t * s_.n * g));
    h_.resize(static_cast<size_t>(s_.n * s_.h));
    c_.resize(h_.size());
  }

  // W, R and B are prepacked.
  bool reads_input(size_t i) const override { return i != 1 && i != 2 && i != 3; }

  void run(KernelIO& io) override {
    const int64_t t = s_.t, n = s_.n, h = s_.h, g = 4 * h, dirs = s_.dirs;
    check_input(io.in(0), {t, n, s_.i}, Layout::kPlain, what_, 0);
    Tensor* y = s_.want[0] ? &io.output(0, DType::kFloat32, {t, dirs, n, h}) : nullptr;
    Tensor* yh = s_.want[1] ? &io.output(1, DType::kFloat32, {dirs, n, h}) : nullptr;
    Tensor* yc = s_.want[2] ? &io.output(2, DType::kFloat32, {dirs, n, h}) : nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t d = 0; d < dirs; ++d) {
      guarded(what_, [&] {
        memory src(f32_desc({t * n, s_.i}, Tag::ab), engine(), handle(io.in(0)));
        memory dst(f32_desc({t * n, g}, Tag::ab), engine(), gates_.data());
        execute(in_, {{DNNL_ARG_SRC, src},
                      {DNNL_ARG_WEIGHTS, w_[static_cast<size_t>(d)]},
                      {DNNL_ARG_BIAS, bias_[static_cast<size_t>(d)]},
                      {DNNL_ARG_DST, dst}});
      });
      const size_t state = static_cast<size_t>(n * h);
      auto init = [&](bool given, size_t k, std::vector<float>& v) {
        if (given) {
          std::memcpy(v.data(), io.in(k).data<float>() + d * n * h, state * sizeof(float));
        } else {
          std::fill(v.begin(), v.end(), 0.0f);
        }
      };
      init(s_.init_h, 5, h_);
      init(s_.init_c, 6, c_);
      const bool backwards = s_.reverse || d == 1;
      memory hm(f32_desc({n, h}, Tag::ab), engine(), h_.data());
      memory dst(f32_desc({n, g}, Tag::ab), engine(), gates_.data());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, hm}, {DNNL_ARG_WEIGHTS, r_[static_cast<size_t>(d)]}, {DNNL_ARG_DST, dst}};
      for (int64_t step = 0; step < t; ++step) {
        const int64_t ts = backwards ? t - 1 - step : step;
        float* gt = gates_.data() + ts * n * g;
        dst.set_data_handle(gt);
        guarded(what_, [&] { execute(rec_, args); });
        float* out = y ? y->data<float>() + (ts * dirs + d) * n * h : nullptr;
        for (int64_t b = 0; b < n; ++b) {
          float* hb = h_.data() + b * h;
          lstm_cell(gt + b * g, c_.data() + b * h, hb, h);
          if (out) std::memcpy(out + b * h, hb, static_cast<size_t>(h) * sizeof(float));
        }
      }
      if (yh) std::memcpy(yh->data<float>() + d * n * h, h_.data(), state * sizeof(float));
      if (yc) std::memcpy(yc->data<float>() + d * n * h, c_.data(), state * sizeof(float));
    }
  }

 private:
  std::string what_;
  LstmSpec s_;
  dnnl::matmul in_, rec_;
  std::vector<memory> w_, r_, bias_;
  std::vector<float> gates_, h_, c_;
  std::mutex mu_;
};

std::unique_ptr<Kernel> create(const NodeInfo& info) { return std::make_unique<LstmKernel>(info); }

}  // namespace

KernelFactory lstm_factory() {
  return {"onednn.lstm", accepts_unless_declined<declines>, nullptr, create, nullptr, declines};
}

}  // namespace nnfuse::onednn
