// ScaledConv(X, S, W, B?, Sum?) (ai.nnfuse) = act(Conv1x1(X * S, W, B) [+ Sum]) for S one value
// per channel ([N or 1, C, 1, 1]): a squeeze-and-excitation block's channel scale and the 1x1
// projection after it. The scale folds into the weights, W'[c, o] = W[o, c] * S[n, c], once
// per image (C x O multiplies instead of a pass over X), and the product runs as a oneDNN
// matmul with run-time weights: channels-last X is [H*W, C] rows, the output [H*W, O] rows,
// with the bias, the residual Sum (sum post-op) and the activation in the primitive. Plain X is
// [C, H*W]: the product W' X, with the bias and activation applied after it.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {

namespace {

using dnnl::memory;

struct ScaledConvSpec {
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0;
  bool scale_per_image = false;  // S is [N, C, 1, 1] (else [1, C, 1, 1])
  Layout layout = Layout::kPlain;
  bool sum = false;
  ref::Activation act;
};

// Why the kernel declines the node, "" when it runs it (with *s filled).
std::string scaled_conv_declines(const NodeInfo& info, ScaledConvSpec* s) {
  const Node& n = info.node;
  if (n.num_inputs() < 3 || n.num_inputs() > 5 || n.num_outputs() != 1) {
    return "not 3 to 5 inputs and 1 output";
  }
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    if (!static_f32_input(info, i)) return "input " + std::to_string(i) + " is not static float32";
  }
  const Dims x = *known_shape(info, 0), sc = *known_shape(info, 1);
  const Tensor* w = info.constant(2);
  if (x.size() != 4 || !w || w->rank() != 4 || w->dim(1) != x[1] || w->dim(2) != 1 ||
      w->dim(3) != 1) {
    return "not a 1x1 convolution of 4-D X with constant weights";
  }
  if (sc.size() != 4 || sc[1] != x[1] || sc[2] != 1 || sc[3] != 1 ||
      (sc[0] != 1 && sc[0] != x[0])) {
    return "the scale is not one value per channel";
  }
  if (n.attr_int("group", 1) != 1) return "grouped";
  for (const char* a : {"strides", "dilations"}) {
    for (int64_t v : n.attr_ints(a, {})) {
      if (v != 1) return std::string(a) + " other than 1";
    }
  }
  for (int64_t v : n.attr_ints("pads", {})) {
    if (v != 0) return "padded";
  }
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET" &&
      n.attr_string("auto_pad", "NOTSET") != "VALID") {
    return "auto_pad";
  }
  const Layout xl = input_layout(info, 0);
  if (xl != Layout::kPlain && xl != Layout::kNHWC) return "X in an unsupported layout";
  // [N, C, 1, 1] is stored alike plain and channels-last.
  if (input_layout(info, 1) != Layout::kPlain && input_layout(info, 1) != Layout::kNHWC) {
    return "the scale in an unsupported layout";
  }
  if (n.num_inputs() > 3 && info.has_input(3)) {
    const Tensor* b = info.constant(3);
    if (!b || b->dtype() != DType::kFloat32 || b->numel() != w->dim(0)) {
      return "the bias is not a constant of [O]";
    }
  }
  s->sum = n.num_inputs() > 4 && info.has_input(4);
  if (s->sum) {
    std::optional<Dims> r = known_shape(info, 4);
    if (!r || *r != Dims{x[0], w->dim(0), x[2], x[3]} || info.input_dtype(4) != DType::kFloat32 ||
        input_layout(info, 4) != xl) {
      return "the residual Sum is not of the output's shape and layout";
    }
  }
  std::optional<ref::Activation> act = fused_activation(n);
  if (!act) return "an activation oneDNN does not compute as the reference does";
  s->act = *act;
  s->n = x[0];
  s->c = x[1];
  s->h = x[2];
  s->w = x[3];
  s->o = w->dim(0);
  s->scale_per_image = sc[0] != 1;
  s->layout = xl;
  if (!output_shape_is(info, {s->n, s->o, s->h, s->w})) return "the declared output shape differs";
  return "";
}

std::string declines(const NodeInfo& info) {
  ScaledConvSpec s;
  return scaled_conv_declines(info, &s);
}

Layout output_layout(const NodeInfo& info, size_t) { return input_layout(info, 0); }

// The residual Sum may be planned into the output's storage.
int in_place(const NodeInfo& info, size_t k) {
  return k == 0 && info.node.num_inputs() > 4 && info.has_input(4) ? 4 : -1;
}

class ScaledConvKernel : public Kernel {
 public:
  explicit ScaledConvKernel(const NodeInfo& info) : what_(info.node.describe()) {
    scaled_conv_declines(info, &s_);
    ThreadScope threads(info.num_threads);
    const Tensor& w = *info.constant(2);
    w_.assign(w.data<float>(), w.data<float>() + w.numel());
    wp_.resize(w_.size());
    if (info.node.num_inputs() > 3 && info.has_input(3)) {
      const Tensor& b = *info.constant(3);
      bias_.assign(b.data<float>(), b.data<float>() + b.numel());
    }
    const int64_t hw = s_.h * s_.w;
    guarded(what_, [&] {
      dnnl::post_ops ops;
      if (s_.sum) ops.append_sum(1.0f);
      memory::desc src, wei, dst, bias;
      if (s_.layout == Layout::kNHWC) {
        // Y[hw, o] = X[hw, c] W'[c, o] + B[o]
        src = f32_desc({hw, s_.c}, Tag::ab);
        wei = f32_desc({s_.c, s_.o}, Tag::ba);  // W' stored [o][c], as W is
        dst = f32_desc({hw, s_.o}, Tag::ab);
        if (!bias_.empty()) bias = f32_desc({1, s_.o}, Tag::ab);
        append_activation(s_.act, ops);
      } else {
        // Y[o, hw] = W'[o, c] X[c, hw]; bias and activation after it.
        src = f32_desc({s_.o, s_.c}, Tag::ab);
        wei = f32_desc({s_.c, hw}, Tag::ab);
        dst = f32_desc({s_.o, hw}, Tag::ab);
      }
      dnnl::primitive_attr attr = user_scratchpad_attr();
      attr.set_post_ops(ops);
      dnnl::matmul::desc d(src, wei, bias, dst);
      pd_ = dnnl::matmul::primitive_desc(d, attr, engine());
      prim_ = dnnl::matmul(pd_);
    });
  }

  // The weights and bias are copied at plan time.
  bool reads_input(size_t i) const override { return i != 2 && i != 3; }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const Tensor& sc = io.in(1);
    check_input(x, {s_.n, s_.c, s_.h, s_.w}, s_.layout, what_, 0);
    const Dims out = {s_.n, s_.o, s_.h, s_.w};
    Tensor& y = io.output(0, DType::kFloat32, out, s_.layout);
    const int64_t hw = s_.h * s_.w, c = s_.c, o = s_.o;
    const bool nhwc = s_.layout == Layout::kNHWC;
    std::lock_guard<std::mutex> lock(mu_);  // wp_ is the run's W'
    const float* ps = sc.data<float>();
    for (int64_t b = 0; b < s_.n; ++b) {
      const float* sb = ps + (s_.scale_per_image ? b * c : 0);
      // W'[o][c] = W[o][c] * S[c], rows in W's own order for both operand forms.
      cpu::parallel_range(o, std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(c, 1)),
                          [&](int64_t lo, int64_t hi) {
                            for (int64_t oo = lo; oo < hi; ++oo) {
                              const float* wr = w_.data() + oo * c;
                              float* out = wp_.data() + oo * c;
#pragma GCC ivdep
                              for (int64_t cc = 0; cc < c; ++cc) out[cc] = wr[cc] * sb[cc];
                            }
                          });
      const float* xb = x.data<float>() + b * c * hw;
      float* yb = y.data<float>() + b * o * hw;
      if (s_.sum) {
        const float* rb = io.in(4).data<float>() + b * o * hw;
        if (rb != yb) std::memcpy(yb, rb, static_cast<size_t>(o * hw) * sizeof(float));
      }
      guarded(what_, [&] {
        memory src, wei;
        if (nhwc) {
          src = memory(pd_.src_desc(), engine(), const_cast<float*>(xb));
          wei = memory(pd_.weights_desc(), engine(), wp_.data());
        } else {
          src = memory(pd_.src_desc(), engine(), wp_.data());
          wei = memory(pd_.weights_desc(), engine(), const_cast<float*>(xb));
        }
        memory dst(pd_.dst_desc(), engine(), yb);
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
        if (nhwc && !bias_.empty()) {
          args[DNNL_ARG_BIAS] = memory(pd_.bias_desc(), engine(), bias_.data());
        }
        execute(prim_, args);
      });
      if (!nhwc && (!bias_.empty() || s_.act.kind != ref::ActivationKind::kNone)) {
        cpu::parallel_range(o * hw, cpu::kParallelGrain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) {
            const double v = yb[i] + (bias_.empty() ? 0.0 : bias_[static_cast<size_t>(i / hw)]);
            yb[i] = static_cast<float>(ref::apply_activation(s_.act, v));
          }
        });
      }
    }
  }

 private:
  std::string what_;
  ScaledConvSpec s_;
  std::vector<float> w_, bias_;
  // W' of the image being run, made once: an allocation per run can meet fresh heap pages.
  std::vector<float> wp_;
  std::mutex mu_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::primitive prim_;
};

std::unique_ptr<Kernel> create(const NodeInfo& info) {
  return std::make_unique<ScaledConvKernel>(info);
}

}  // namespace

KernelFactory scaled_conv_factory() {
  return {"onednn.scaled_conv",
          accepts_unless_declined<declines>,
          output_layout,
          create,
          in_place,
          declines};
}

}  // namespace nnfuse::onednn
