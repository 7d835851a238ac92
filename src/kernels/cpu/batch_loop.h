// Kernels for nodes whose batch is known only at run time (a detector's heads over the regions
// or detections it kept, [?, 256, 14, 14]), built from a static-shape kernel factory: a kernel
// made for one image (the node copied with batch 1 into a graph of its own) runs image by image
// over views of the batched inputs and of the output, each image's bytes being contiguous in the
// plain and the channels-last layout alike. Every other dim must be static, and the op must
// treat the images independently (convolutions, resizes that keep the batch).
//
// batch_loop_factory<kInner, kBatched, kExtra>(name): kInner returns the static-shape factory
// (whose accepts() decides; the kernel is the plan's choice for the image, NodeInfo::chooser);
// kBatched is the mask of the inputs viewed per image (input 0 always; FusedConv's residual,
// input 3, where its batch is unknown too); kExtra, when given, says why the op cannot run so
// ("" when it can).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace nnfuse::cpu::batch_loop {

// Whether `s` is [?, d1, d2, ...] with every dim but the first static.
inline bool only_batch_unknown(const Shape& s) {
  if (!s.has_rank || s.dims.size() < 3 || s.dims[0].known()) return false;
  for (size_t i = 1; i < s.dims.size(); ++i) {
    if (!s.dims[i].known()) return false;
  }
  return true;
}

inline Dims with_batch(const Shape& s, int64_t n) {
  Dims d = {n};
  for (size_t i = 1; i < s.dims.size(); ++i) d.push_back(s.dims[i].value);
  return d;
}

// The node as it would be for one image: a graph of its own holding a copy of the node whose
// batched inputs (X, and FusedConv's residual) have batch 1, the others as they are (constants
// copied), and the NodeInfo the single-image kernel is made from.
struct OneImage {
  Graph g;
  std::unique_ptr<NodeInfo> info;
  std::vector<size_t> batched;  // inputs viewed per image
  std::string why;              // why there is no single-image form, "" when there is

  OneImage(const NodeInfo& from, uint32_t batched_mask) {
    const Node& n = from.node;
    if (!from.has_input(0)) {
      why = "X is missing";
      return;
    }
    if (const Shape& x = from.input(0)->shape(); !only_batch_unknown(x)) {
      why = !x.has_rank         ? "the rank of X is not known"
            : x.dims.size() < 3 ? "X of rank " + std::to_string(x.dims.size())
            : x.fully_known()   ? "X has a static shape (the static-shape kernel's case)"
            : x.dims[0].known() ? "X's batch is static, its other dims are not"
                                : "X " + x.str() + " has unknown dims besides its batch";
      return;
    }
    g.opsets[""] = from.opset;
    std::vector<Value*> ins;
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      if (!from.has_input(i)) {
        ins.push_back(nullptr);
        continue;
      }
      const Value* v = from.input(i);
      Shape s = v->shape();
      if (const Tensor* c = from.constant(i)) {
        Value* w = g.add_value("in" + std::to_string(i), v->dtype(), Shape::of(c->shape()));
        w->set_constant(*c);
        ins.push_back(w);
        continue;
      }
      if (i == 0 || ((batched_mask >> i) & 1u && only_batch_unknown(s))) {
        s = Shape::of(with_batch(s, 1));
        batched.push_back(i);
      }
      Value* w = g.add_value("in" + std::to_string(i), v->dtype(), s);
      g.add_input(w);
      ins.push_back(w);
    }
    std::vector<Value*> outs;
    for (size_t k = 0; k < n.num_outputs(); ++k)
      outs.push_back(g.add_value("out" + std::to_string(k)));
    Node* one = g.add_node(n.op_type(), n.name(), ins, outs, n.domain());
    for (const auto& [name, a] : n.attrs()) one->set_attr(name, a);
    info = std::make_unique<NodeInfo>(
        NodeInfo{*one, from.opset, from.input_layouts, from.num_threads, {}, from.chooser});
  }
};

class BatchLoopKernel : public Kernel {
 public:
  BatchLoopKernel(const NodeInfo& info, const KernelFactory& inner, uint32_t batched_mask)
      : what_(info.node.describe()), image_(std::make_unique<OneImage>(info, batched_mask)) {
    // The kernel the plan would choose for the image (measured where it would be), else the
    // inner factory's.
    if (info.chooser) kernel_ = info.chooser->create(*image_->info);
    if (!kernel_) kernel_ = inner.create(*image_->info);
    x_shape_ = image_->info->input(0)->shape().static_dims();
    x_layout_ = info.input_layouts.empty() ? Layout::kPlain : info.input_layouts[0];
    // The output of one image (shape and layout): the kernel run once on zeros.
    KernelIO io;
    std::vector<Tensor> zeros;
    zeros.reserve(image_->batched.size());
    io.inputs.resize(info.node.num_inputs(), nullptr);
    image_dims_.resize(info.node.num_inputs());
    for (size_t i : image_->batched) {
      image_dims_[i] = image_->info->input(i)->shape().static_dims();
      zeros.push_back(Tensor(DType::kFloat32, image_dims_[i]));
      zeros.back().set_layout(i < info.input_layouts.size() ? info.input_layouts[i]
                                                            : Layout::kPlain);
      io.inputs[i] = &zeros.back();
    }
    for (size_t i = 0; i < info.node.num_inputs(); ++i) {
      if (!io.inputs[i] && info.has_input(i)) io.inputs[i] = info.constant(i);
    }
    io.outputs.resize(1);
    kernel_->run(io);
    y_shape_ = io.outputs[0].shape();
    y_layout_ = io.outputs[0].layout();
  }

  bool reads_input(size_t i) const override { return kernel_->reads_input(i); }

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    NNFUSE_CHECK(x.dtype() == DType::kFloat32 && x.layout() == x_layout_ &&
                     x.rank() == static_cast<int64_t>(x_shape_.size()),
                 what_, ": X is ", dtype_name(x.dtype()), dims_str(x.shape()), " ",
                 layout_name(x.layout()), ", not float32 [?, ...] in ", layout_name(x_layout_));
    for (size_t d = 1; d < x_shape_.size(); ++d) {
      NNFUSE_CHECK(x.shape()[d] == x_shape_[d], what_, ": X ", dims_str(x.shape()),
                   " differs from the planned [?", dims_str(tail(x_shape_)).substr(1));
    }
    const int64_t n = x.dim(0);
    Dims ys = y_shape_;
    ys[0] = n;
    Tensor& y = io.output(0, DType::kFloat32, ys, y_layout_);
    for (size_t i : image_->batched) {
      if (i == 0) continue;
      const Tensor& r = io.in(i);
      NNFUSE_CHECK(r.dtype() == DType::kFloat32 && r.shape() == ys, what_, ": input ", i, " is ",
                   dims_str(r.shape()), ", not the output's ", dims_str(ys));
    }
    const int64_t x_image = x.numel() / std::max<int64_t>(n, 1),
                  y_image = y.numel() / std::max<int64_t>(n, 1);
    KernelIO one;
    one.scratch = io.scratch;
    std::vector<Tensor> views(io.inputs.size());
    for (int64_t b = 0; b < n; ++b) {
      one.inputs = io.inputs;
      for (size_t i : image_->batched) {
        const Tensor& t = io.in(i);
        const int64_t per = i == 0 ? x_image : y_image;
        views[i] = Tensor::borrow(DType::kFloat32, image_dims_[i],
                                  const_cast<float*>(t.data<float>()) + b * per);
        views[i].set_layout(t.layout());
        one.inputs[i] = &views[i];
      }
      one.outputs.assign(1,
                         Tensor::borrow(DType::kFloat32, y_shape_, y.data<float>() + b * y_image));
      one.outputs[0].set_layout(y_layout_);
      kernel_->run(one);
    }
  }

  size_t scratch_bytes() const override { return kernel_->scratch_bytes(); }

 private:
  static Dims tail(const Dims& d) { return Dims(d.begin() + 1, d.end()); }

  std::string what_;
  std::unique_ptr<OneImage> image_;  // owns the node the single-image kernel was made for
  std::unique_ptr<Kernel> kernel_;
  Dims x_shape_, y_shape_;        // of one image
  std::vector<Dims> image_dims_;  // per input: one image's dims where it is viewed per image
  Layout x_layout_ = Layout::kPlain, y_layout_ = Layout::kPlain;
};

// The static-shape factory each batch-loop factory wraps.
template <KernelFactory (*kInner)()>
const KernelFactory& inner() {
  static const KernelFactory f = kInner();
  return f;
}

template <KernelFactory (*kInner)(), uint32_t kBatched, std::string (*kExtra)(const NodeInfo&)>
std::string declines(const NodeInfo& info) {
  OneImage one(info, kBatched);
  if (!one.why.empty()) return one.why;
  if constexpr (kExtra != nullptr) {
    if (std::string r = kExtra(info); !r.empty()) return r;
  }
  const KernelFactory& f = inner<kInner>();
  return f.accepts(*one.info) ? "" : "for one image: " + decline_reason(f, *one.info);
}

template <KernelFactory (*kInner)(), uint32_t kBatched, std::string (*kExtra)(const NodeInfo&)>
bool accepts(const NodeInfo& info) {
  return declines<kInner, kBatched, kExtra>(info).empty();
}

template <KernelFactory (*kInner)(), uint32_t kBatched>
std::unique_ptr<Kernel> create(const NodeInfo& info) {
  return std::make_unique<BatchLoopKernel>(info, inner<kInner>(), kBatched);
}

template <KernelFactory (*kInner)(), uint32_t kBatched>
Layout output_layout(const NodeInfo& info, size_t k) {
  OneImage one(info, kBatched);
  const KernelFactory& f = inner<kInner>();
  return one.why.empty() && f.output_layout ? f.output_layout(*one.info, k) : Layout::kPlain;
}

}  // namespace nnfuse::cpu::batch_loop

namespace nnfuse::cpu {

template <KernelFactory (*kInner)(), uint32_t kBatched = 1u,
          std::string (*kExtra)(const NodeInfo&) = nullptr>
KernelFactory batch_loop_factory(const char* name) {
  using namespace batch_loop;
  return {name,
          accepts<kInner, kBatched, kExtra>,
          output_layout<kInner, kBatched>,
          create<kInner, kBatched>,
          nullptr,
          declines<kInner, kBatched, kExtra>};
}

}  // namespace nnfuse::cpu
