// User fusion patterns from C++: the seed's Conv -> BatchNormalization -> Relu as one node the
// program computes, and a Mish (x * tanh(softplus(x))) written by the user. Each is registered
// with its ops, infer_shape and compute; compiling a model fuses every match, the report lists it
// under the pattern's name, and verify compares the fused model with the unfused one.
//   custom_pattern RESNET.onnx MLP.onnx   (the bundled models/tiny_resnet.onnx, tiny_mlp.onnx)
#include <nnfuse/nnfuse.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using nnfuse::PatternContext;
using nnfuse::Tensor;
using nnfuse::TensorInfo;

int64_t attr_at(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return i < v.size() ? v[i] : fallback;
}

// Y = relu(batchnorm(conv(X, W) + B)) for 2-D NCHW convolutions, plainly.
nnfuse::FusionPattern conv_bn_relu() {
  nnfuse::FusionPattern p;
  p.name = "MyConvBnRelu";
  p.ops = {"Conv", "BatchNormalization", "Relu"};
  p.infer_shape = [](const std::vector<TensorInfo>& in, const PatternContext& ctx) {
    const TensorInfo& x = in[0];
    const TensorInfo& w = in[1];
    if (x.shape.size() != 4 || w.shape.size() != 4) {
      throw std::invalid_argument("only 2-D convolutions (NCHW)");
    }
    if (ctx.attr_int(0, "group", 1) != 1) throw std::invalid_argument("only group 1");
    const auto strides = ctx.attr_ints(0, "strides"), pads = ctx.attr_ints(0, "pads"),
               dil = ctx.attr_ints(0, "dilations");
    TensorInfo y{"", x.dtype, {x.shape[0], w.shape[0], -1, -1}};
    for (size_t d = 0; d < 2; ++d) {
      const int64_t span = attr_at(dil, d, 1) * (w.shape[2 + d] - 1) + 1;
      const int64_t padded = x.shape[2 + d] + attr_at(pads, d, 0) + attr_at(pads, d + 2, 0);
      if (x.shape[2 + d] >= 0) y.shape[2 + d] = (padded - span) / attr_at(strides, d, 1) + 1;
    }
    return std::vector<TensorInfo>{y};
  };
  p.compute = [](const std::vector<Tensor>& in, const PatternContext& ctx) {
    const Tensor& x = in[0];
    const Tensor& w = in[1];
    const int bias = ctx.input_index(0, 2);  // the conv's bias, when it has one
    const Tensor& scale = in[static_cast<size_t>(ctx.input_index(1, 1))];
    const Tensor& shift = in[static_cast<size_t>(ctx.input_index(1, 2))];
    const Tensor& mean = in[static_cast<size_t>(ctx.input_index(1, 3))];
    const Tensor& var = in[static_cast<size_t>(ctx.input_index(1, 4))];
    const double eps = ctx.attr_float(1, "epsilon", 1e-5);
    const auto strides = ctx.attr_ints(0, "strides"), pads = ctx.attr_ints(0, "pads"),
               dil = ctx.attr_ints(0, "dilations");
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
    const int64_t m = w.dim(0), kh = w.dim(2), kw = w.dim(3);
    const int64_t sh = attr_at(strides, 0, 1), sw = attr_at(strides, 1, 1);
    const int64_t ph = attr_at(pads, 0, 0), pw = attr_at(pads, 1, 0);
    const int64_t dh = attr_at(dil, 0, 1), dw = attr_at(dil, 1, 1);
    const int64_t oh = (h + ph + attr_at(pads, 2, 0) - dh * (kh - 1) - 1) / sh + 1;
    const int64_t ow = (wd + pw + attr_at(pads, 3, 0) - dw * (kw - 1) - 1) / sw + 1;
    Tensor y(nnfuse::DType::kFloat32, {n, m, oh, ow});
    const float* px = x.data<float>();
    const float* pk = w.data<float>();
    float* py = y.data<float>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t o = 0; o < m; ++o) {
        const double a = scale.data<float>()[o] / std::sqrt(var.data<float>()[o] + eps);
        const double base = bias >= 0 ? in[static_cast<size_t>(bias)].data<float>()[o] : 0.0;
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            double s = base;
            for (int64_t ci = 0; ci < c; ++ci) {
              for (int64_t u = 0; u < kh; ++u) {
                const int64_t yi = i * sh - ph + u * dh;
                if (yi < 0 || yi >= h) continue;
                for (int64_t v = 0; v < kw; ++v) {
                  const int64_t xj = j * sw - pw + v * dw;
                  if (xj < 0 || xj >= wd) continue;
                  s += static_cast<double>(px[((b * c + ci) * h + yi) * wd + xj]) *
                       pk[((o * c + ci) * kh + u) * kw + v];
                }
              }
            }
            const double bn = (s - mean.data<float>()[o]) * a + shift.data<float>()[o];
            py[((b * m + o) * oh + i) * ow + j] = static_cast<float>(std::max(bn, 0.0));
          }
        }
      }
    }
    return std::vector<Tensor>{y};
  };
  return p;
}

nnfuse::FusionPattern mish() {
  nnfuse::FusionPattern p;
  p.name = "MyMish";
  p.ops = {"Softplus", "Tanh", "Mul"};
  p.infer_shape = [](const std::vector<TensorInfo>& in, const PatternContext&) {
    return std::vector<TensorInfo>{in[0]};
  };
  p.compute = [](const std::vector<Tensor>& in, const PatternContext&) {
    Tensor y(nnfuse::DType::kFloat32, in[0].shape());
    const float* x = in[0].data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      y.data<float>()[i] = x[i] * std::tanh(std::log1p(std::exp(x[i])));
    }
    return std::vector<Tensor>{y};
  };
  return p;
}

// Compiles `path`, prints how often `pattern` fused and the verification; true when it fused
// and verified.
bool compile_and_verify(const std::string& path, const std::string& pattern) {
  const nnfuse::Model model = nnfuse::compile(path);
  const std::string report = model.report_json();
  // The report lists the pattern among the passes, and each node it made under its name.
  size_t fused = 0;
  for (size_t at = report.find("\"pass\": \"" + pattern + "\""); at != std::string::npos;
       at = report.find("\"pass\": \"" + pattern + "\"", at + 1)) {
    ++fused;
  }
  const nnfuse::VerifyResult v = model.verify();
  std::cout << path << ": " << pattern << " fused " << fused << " time(s); "
            << model.num_imported_nodes() << " nodes -> " << model.num_nodes() << "; verify "
            << (v.pass ? "passed" : "FAILED") << " (relative error "
            << (v.outputs.empty() ? 0.0 : v.outputs[0].relative_error) << ")\n";
  return fused > 0 && v.pass;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " RESNET.onnx MLP.onnx\n";
    return 2;
  }
  try {
    nnfuse::register_fusion_pattern(conv_bn_relu());
    nnfuse::register_fusion_pattern(mish());
    const bool ok =
        compile_and_verify(argv[1], "MyConvBnRelu") && compile_and_verify(argv[2], "MyMish");
    return ok ? 0 : 1;
  } catch (const nnfuse::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
