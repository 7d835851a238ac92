// The machine the roofline estimates are made for: peak GFLOP/s, memory bandwidth and the cost
// of one kernel launch, measured once by `nnfuse calibrate` (runtime/calibrate.h) and cached
// as calibration.json in nnfuse's cache directory, with the CPU and thread count it ran on.
// A calibration made on another CPU is not used; without one the estimates use the defaults
// (cost::Machine's) and say so.
#pragma once

#include <optional>
#include <string>

#include "cost/cost.h"

namespace nnfuse::cost {

struct Calibration {
  Machine machine;
  std::string cpu;          // /proc/cpuinfo's model name
  int threads = 0;          // the threads it was measured with
  std::string measured_at;  // UTC, ISO 8601
};

// The CPU's model name ("unknown CPU" when the system does not say).
std::string cpu_model_name();

// calibration.json in the cache directory (NNFUSE_CACHE_DIR, else ~/.cache/nnfuse).
std::string calibration_path();

// Reads a calibration; nullopt with the reason in *why when the file is missing or malformed.
std::optional<Calibration> load_calibration(const std::string& path, std::string* why = nullptr);
// Writes it whole (atomically); throws kInvalidArgument naming the path when it cannot.
void save_calibration(const Calibration& c, const std::string& path);

// The machine for estimates: the cached calibration when it was made on this CPU, else the
// defaults. *source says which ("calibrated on CPU, N threads, DATE" or "defaults: ...").
Machine estimate_machine(std::string* source = nullptr);

}  // namespace nnfuse::cost
