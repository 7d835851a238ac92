// The project's own conv kernels over a ConvSpec (conv_spec.h): the Winograd F(4x4, 3x3) one
// (cpu_winograd.h, as a Kernel in cpu_winograd_conv.cc) and the depthwise one (cpu_depthwise.h,
// cpu_depthwise_conv.cc). Where each runs a node instead of oneDNN's kernel is
// conv_factories.cc's business: they are measured against it.
#pragma once

#include <memory>
#include <string>

#include "kernels/cpu/conv_spec.h"
#include "kernels/kernel.h"

namespace nnfuse::onednn {

// "" where the own Winograd kernel computes the conv: the Winograd geometry, channels-last in
// and out (a residual too), no split or skip convolution, and an activation it applies (a
// FusedConvPool's pool runs on its output); else why not.
std::string own_winograd_declines(const ConvSpec& s);
std::unique_ptr<Kernel> make_own_winograd_kernel(const NodeInfo& info, const ConvSpec& s);

// "" where the own depthwise kernel computes the conv: a 2-D conv with one input and one output
// channel per group, channels-last in and out, a square kernel, equal strides, undilated, no
// residual, pool, split or skip convolution, and a geometry the kernel takes; else why not.
std::string own_depthwise_declines(const ConvSpec& s);
std::unique_ptr<Kernel> make_own_depthwise_kernel(const NodeInfo& info, const ConvSpec& s);

}  // namespace nnfuse::onednn
