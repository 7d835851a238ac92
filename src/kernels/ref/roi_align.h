// RoiAlign's sampling geometry, shared by the reference kernel (vision.cc) and the fast one
// (kernels/cpu/cpu_roi_align.cc): where each output bin samples the feature map, and with which
// bilinear weights, computed in double for one roi at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nnfuse::ref {

// The attributes that place the samples, read and checked (errors name the node).
struct RoiAlignGeometry {
  int64_t out_h = 1, out_w = 1, ratio = 0;
  double scale = 1.0;
  bool half_pixel = true;  // coordinate_transformation_mode half_pixel (else output_half_pixel)
  bool is_max = false;     // mode max
};
RoiAlignGeometry roi_align_geometry(const Node& n, int64_t opset);

// One bilinear sample: up to four (flat position, weight) pairs into an H x W plane (all
// weights 0 outside it).
struct RoiSample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// The samples of roi r ([x1, y1, x2, y2] in `roi`) over an h x w plane into `samples`, bin by
// bin in row-major bin order, *per_bin each; returns the count a bin's sum is divided by in
// mode avg. Throws naming `what` for a roi of non-finite size.
double roi_bin_samples(const RoiAlignGeometry& g, const double* roi, int64_t h, int64_t w,
                       std::vector<RoiSample>& samples, size_t* per_bin, const std::string& what,
                       int64_t r);

}  // namespace nnfuse::ref
