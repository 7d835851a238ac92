#include <algorithm>
#include <cmath>
#include <sstream>

#include "ir/error.h"
#include "runtime/npy.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

std::map<std::string, Tensor> load_inputs(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      fail(ErrorKind::kInvalidArgument, "--input '", s, "': expected NAME=FILE");
    }
    std::string name = s.substr(0, eq);
    if (feeds.count(name)) fail(ErrorKind::kInvalidArgument, "--input '", name, "' is given twice");
    feeds[name] = load_tensor_file(s.substr(eq + 1));
  }
  return feeds;
}

std::string summarize(const Tensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << dims_str(t.shape());
  bool numeric = t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat64 ||
                 dtype_is_integer(t.dtype()) || t.dtype() == DType::kBool;
  if (!numeric || t.numel() == 0) return os.str();
  double lo = t.double_at(0), hi = lo, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.double_at(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  os << " min " << lo << " max " << hi << " mean " << sum / static_cast<double>(t.numel()) << ":";
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 6); ++i) os << " " << t.double_at(i);
  if (t.numel() > 6) os << " ...";
  return os.str();
}

}  // namespace nnfuse::cli
