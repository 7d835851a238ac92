#include "cost/machine.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/jit.h"
#include "ir/atomic_file.h"
#include "ir/error.h"

namespace nnfuse::cost {

std::string cpu_model_name() {
  // Read once: every compile compares it with the calibration's.
  static const std::string name = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) break;
      size_t b = line.find_first_not_of(" \t", colon + 1);
      return b == std::string::npos ? std::string("unknown CPU") : line.substr(b);
    }
    return std::string("unknown CPU");
  }();
  return name;
}

std::string calibration_path() { return codegen::jit_cache_dir() + "/calibration.json"; }

std::optional<Calibration> load_calibration(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    if (why) *why = "no calibration at " + path + " (run `nnfuse calibrate`)";
    return std::nullopt;
  }
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    Calibration c;
    c.machine.flops_per_s = j.at("peak_gflops").get<double>() * 1e9;
    c.machine.bytes_per_s = j.at("bandwidth_gbps").get<double>() * 1e9;
    c.machine.launch_s = j.at("launch_us").get<double>() * 1e-6;
    c.cpu = j.at("cpu").get<std::string>();
    c.threads = j.at("threads").get<int>();
    c.measured_at = j.value("measured_at", "");
    if (!(c.machine.flops_per_s > 0) || !(c.machine.bytes_per_s > 0) ||
        !(c.machine.launch_s >= 0)) {
      if (why) *why = path + ": figures out of range";
      return std::nullopt;
    }
    return c;
  } catch (const std::exception& e) {
    if (why) *why = path + ": not a calibration (" + e.what() + ")";
    return std::nullopt;
  }
}

void save_calibration(const Calibration& c, const std::string& path) {
  const nlohmann::json j = {{"cpu", c.cpu},
                            {"threads", c.threads},
                            {"measured_at", c.measured_at},
                            {"peak_gflops", c.machine.flops_per_s / 1e9},
                            {"bandwidth_gbps", c.machine.bytes_per_s / 1e9},
                            {"launch_us", c.machine.launch_s * 1e6}};
  write_file_atomically(path, "the calibration",
                        [&](std::ostream& out) { out << j.dump(2) << "\n"; });
}

Machine estimate_machine(std::string* source) {
  std::string why;
  const std::optional<Calibration> c = load_calibration(calibration_path(), &why);
  const std::string cpu = cpu_model_name();
  if (c && c->cpu == cpu) {
    if (source) {
      std::ostringstream s;
      s << "calibrated on " << c->cpu << ", " << c->threads << " thread"
        << (c->threads == 1 ? "" : "s") << (c->measured_at.empty() ? "" : ", " + c->measured_at);
      *source = s.str();
    }
    return c->machine;
  }
  if (source) {
    *source = c ? "defaults: the calibration is for " + c->cpu + ", not " + cpu +
                      " (run `nnfuse calibrate`)"
                : "defaults: " + why;
  }
  return Machine{};
}

}  // namespace nnfuse::cost
