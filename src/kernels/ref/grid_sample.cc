#include "kernels/ref/grid_sample.h"

#include <algorithm>
#include <cmath>

#include "ir/error.h"

namespace nnfuse::ref {

namespace {

// Sets *m to the named interpolation mode; false when the name is not one of this opset's
// (bilinear/bicubic before opset 20, linear/cubic from it; nearest in both).
bool gs_mode(const std::string& s, int64_t opset, GsMode* m) {
  const bool v20 = opset >= 20;
  if (s == "nearest")
    *m = GsMode::kNearest;
  else if (s == (v20 ? "linear" : "bilinear"))
    *m = GsMode::kLinear;
  else if (s == (v20 ? "cubic" : "bicubic"))
    *m = GsMode::kCubic;
  else
    return false;
  return true;
}

bool gs_pad(const std::string& s, GsPad* p) {
  if (s == "zeros")
    *p = GsPad::kZeros;
  else if (s == "border")
    *p = GsPad::kBorder;
  else if (s == "reflection")
    *p = GsPad::kReflection;
  else
    return false;
  return true;
}

std::string default_mode(int64_t opset) { return opset >= 20 ? "linear" : "bilinear"; }

}  // namespace

std::string grid_sample_attrs_problem(const Node& n, int64_t opset) {
  GsMode m;
  GsPad p;
  const std::string mode = n.attr_string("mode", default_mode(opset));
  if (!gs_mode(mode, opset, &m)) {
    return "mode '" + mode + "' is not supported at opset " + std::to_string(opset);
  }
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (!gs_pad(pad, &p)) return "padding_mode '" + pad + "' is not supported";
  return "";
}

GridSampleGeometry::GridSampleGeometry(const Node& n, int64_t opset, int64_t h, int64_t w)
    : h_(h), w_(w) {
  const std::string mode = n.attr_string("mode", default_mode(opset));
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (!gs_mode(mode, opset, &mode_) || !gs_pad(pad, &pad_)) {
    fail(ErrorKind::kUnsupported, n.describe(), ": mode '", mode, "' / padding_mode '", pad,
         "' is not supported");
  }
  align_ = n.attr_int("align_corners", 0) != 0;
  ax_ = {w, align_ ? 0.0 : -0.5, align_ ? static_cast<double>(w) - 1 : w - 0.5};
  ay_ = {h, align_ ? 0.0 : -0.5, align_ ? static_cast<double>(h) - 1 : h - 0.5};
}

}  // namespace nnfuse::ref
