// DepthToSpace (DCR and CRD) and SpaceToDepth: each a transpose of a 6-D view of the 4-D tensor,
// run as one strided copy (cpu_copy.h) from a plain or a channels-last input (then the reorder
// a convolution's output would need first is skipped) into a plain output. Any element type of
// 1, 2, 4 or 8 bytes. (nn.PixelShuffle exports as DepthToSpace CRD: ESPCN's ran on the reference
// kernel at 9.1 ms a run, 40% of the model.)
#include <memory>

#include "kernels/cpu/cpu_copy.h"
#include "kernels/cpu/cpu_internal.h"

namespace nnfuse::cpu {
namespace {

class DepthSpaceKernel : public Kernel {
 public:
  DepthSpaceKernel(const NodeInfo& info, bool to_space)
      : node_(info.node),
        opset_(info.opset),
        to_space_(to_space),
        crd_(info.node.attr_string("mode", "DCR") == "CRD"),
        b_(info.node.attr_int("blocksize", 0)) {}

  void run(KernelIO& io) override {
    const Tensor& x = io.in(0);
    const int64_t b = b_;
    if (x.rank() != 4 || b <= 0 || b > 4096 || !copyable_elem_size(dtype_size(x.dtype())) ||
        (x.layout() != Layout::kPlain && x.layout() != Layout::kNHWC)) {
      return run_reference(node_, opset_, io);  // its checks name what is wrong
    }
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    // Element strides of x's (n, c, h, w) in its storage order.
    const bool nhwc = x.layout() == Layout::kNHWC;
    const int64_t sn = c * h * w, sc = nhwc ? 1 : h * w, sh = nhwc ? w * c : w, sw = nhwc ? c : 1;
    Dims dims, strides;
    Dims out;
    if (to_space_) {
      if (c % (b * b) != 0) return run_reference(node_, opset_, io);
      const int64_t oc = c / (b * b);
      out = {n, oc, h * b, w * b};
      // y[n, o, hh * b + i, ww * b + j] over (n, o, hh, i, ww, j) reads channel (i * b + j) * oc
      // + o (DCR) or o * b * b + i * b + j (CRD).
      dims = {n, oc, h, b, w, b};
      strides = crd_ ? Dims{sn, b * b * sc, sh, b * sc, sw, sc}
                     : Dims{sn, sc, sh, b * oc * sc, sw, oc * sc};
    } else {
      if (h % b != 0 || w % b != 0) return run_reference(node_, opset_, io);
      out = {n, c * b * b, h / b, w / b};
      // y[n, (i * b + j) * c + k, hh, ww] over (n, i, j, k, hh, ww) reads x[n, k, hh * b + i,
      // ww * b + j].
      dims = {n, b, b, c, h / b, w / b};
      strides = {sn, sh, sw, sc, b * sh, b * sw};
    }
    Tensor& y = io.output(0, x.dtype(), out);
    if (y.numel() == 0) return;
    strided_copy(static_cast<const std::byte*>(x.raw()), dims, strides,
                 static_cast<std::byte*>(y.raw()), dtype_size(x.dtype()));
  }

 private:
  const Node& node_;
  int64_t opset_;
  bool to_space_, crd_;
  int64_t b_;
};

std::string depth_space_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (!n.domain().empty() || n.num_inputs() != 1 || !info.has_input(0) || !single_output(n)) {
    return "not a plain node";
  }
  if (!copyable_elem_size(dtype_size(info.input_dtype(0)))) {
    return "elements of " + dtype_name(info.input_dtype(0));
  }
  const Layout l = input_layout(info, 0);
  if (l != Layout::kPlain && l != Layout::kNHWC) return "input in an unsupported layout";
  if (const Value* x = info.input(0); x->shape().has_rank && x->shape().dims.size() != 4) {
    return "input of rank " + std::to_string(x->shape().dims.size());
  }
  if (n.attr_int("blocksize", 0) <= 0) return "no positive blocksize";
  if (n.is(Op::kDepthToSpace)) {
    const std::string mode = n.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") return "mode '" + mode + "'";
  }
  return "";
}

template <bool kToSpace>
std::unique_ptr<Kernel> make_depth_space(const NodeInfo& info) {
  return std::make_unique<DepthSpaceKernel>(info, kToSpace);
}

}  // namespace

void append_depth_space_kernels(FactoryTable& t) {
  t.emplace_back("DepthToSpace",
                 KernelFactory{"cpu.depth_to_space", accepts_unless_declined<depth_space_declines>,
                               nullptr, make_depth_space<true>, nullptr, depth_space_declines});
  t.emplace_back("SpaceToDepth",
                 KernelFactory{"cpu.space_to_depth", accepts_unless_declined<depth_space_declines>,
                               nullptr, make_depth_space<false>, nullptr, depth_space_declines});
}

}  // namespace nnfuse::cpu
