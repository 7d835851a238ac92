#include "cost/winograd_rule.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace nnfuse::cost {

int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t best_level = 0, size = 0;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream level_in(dir + "level"), type_in(dir + "type"), size_in(dir + "size");
      int64_t level = 0;
      std::string type, text;
      if (!(level_in >> level) || !(type_in >> type) || !(size_in >> text)) continue;
      if (type == "Instruction" || level <= best_level || text.empty()) continue;
      char* end = nullptr;
      const int64_t v = std::strtoll(text.c_str(), &end, 10);
      const int64_t unit = *end == 'K'   ? 1024
                           : *end == 'M' ? 1024 * 1024
                           : *end == 'G' ? 1 << 30
                                         : 1;
      if (v <= 0) continue;
      best_level = level;
      size = v * unit;
    }
    return size;
  }();
  return bytes;
}

bool winograd_pays(int64_t cin, int64_t cout, int64_t out_h, int64_t out_w) {
  if (cin < 32 || cout < 48) return false;
  const int64_t area = out_h * out_w;
  return area >= 28 * 28 || (area >= 14 * 14 && cout >= 96);
}

bool winograd_measured(int64_t cin, int64_t cout, int64_t out_h, int64_t out_w) {
  return cin >= 32 && cout >= 16 && out_h * out_w >= 14 * 14;
}

bool winograd_scratch_pays(double flops, int64_t scratch_bytes, int64_t cache_bytes) {
  constexpr int64_t kMinCachedScratchBytes = int64_t{8} << 20;
  constexpr double kMinFlopsPerScratchByte = 64.0;
  if (scratch_bytes <= std::max(cache_bytes, kMinCachedScratchBytes)) return true;
  return flops >= kMinFlopsPerScratchByte * static_cast<double>(scratch_bytes);
}

}  // namespace nnfuse::cost
