// Convolutions whose batch is known only at run time: a detector's mask or keypoint head over
// the detections it kept. Conv, ConvTranspose and FusedConv (its residual viewed per image too)
// through the batch loop (batch_loop.h) over the oneDNN conv kernels, which need static shapes.
#include "kernels/cpu/batch_loop.h"
#include "kernels/cpu/onednn_kernels.h"

namespace nnfuse::onednn {

KernelFactory conv_batch_factory() {
  return cpu::batch_loop_factory<conv_factory>("onednn.conv_batch");
}
KernelFactory conv_transpose_batch_factory() {
  return cpu::batch_loop_factory<conv_transpose_factory>("onednn.conv_transpose_batch");
}
KernelFactory fused_conv_batch_factory() {
  return cpu::batch_loop_factory<fused_conv_factory, (1u << 0) | (1u << 3)>(
      "onednn.fused_conv_batch");
}

}  // namespace nnfuse::onednn
