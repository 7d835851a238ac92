// jit_build_many: the generated kernels of a model built with one compiler run per batch of
// regions instead of one per region (the compiler's start-up and the shared preamble dominate
// a small kernel's build).
#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include "codegen/jit.h"
#include "codegen/jit_internal.h"

namespace nnfuse::codegen {

namespace fs = std::filesystem;

namespace {

// Compiles the functions `batch` (indices into `fns`) as one source and stores the object under
// each one's cache entry (hard links where the file system allows, else copies). A batch that
// fails stores nothing: its sources are then built one by one.
void build_batch(const std::string& preamble, const std::vector<JitFunction>& fns,
                 const std::vector<std::string>& entries, const std::vector<size_t>& batch) {
  std::string text = preamble;
  for (size_t i : batch) text += fns[i].body;
  const std::string tmp = jit_temp_name(entries[batch.front()], ".so");
  if (!jit_compile(text, tmp).empty()) return;
  std::error_code ec;
  for (size_t i : batch) {
    const std::string staged = jit_temp_name(entries[i], ".so");
    fs::create_hard_link(tmp, staged, ec);
    if (ec) fs::copy_file(tmp, staged, fs::copy_options::overwrite_existing, ec);
    if (ec) continue;
    fs::rename(staged, entries[i], ec);
    if (ec) fs::remove(staged, ec);
  }
  fs::remove(tmp, ec);
}

}  // namespace

void jit_prebuild(const std::string& preamble, const std::vector<JitFunction>& functions) {
  // The sources missing from the cache, one per cache entry (equal sources share it).
  std::vector<std::string> entries(functions.size());
  std::map<std::string, size_t> missing;
  for (size_t i = 0; i < functions.size(); ++i) {
    std::string why;
    entries[i] = jit_entry_path(preamble + functions[i].body, &why);
    if (!entries[i].empty() && !jit_entry_valid(entries[i])) missing.emplace(entries[i], i);
  }
  if (missing.size() >= 2) {
    std::vector<std::vector<size_t>> batches;
    for (const auto& [entry, i] : missing) {
      if (batches.empty() || batches.back().size() >= kJitBatch) batches.emplace_back();
      batches.back().push_back(i);
    }
    const size_t workers =
        std::max<size_t>(1, std::min<size_t>(batches.size(), std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t w = 0; w < workers; ++w) {
      pool.emplace_back([&, w] {
        for (size_t b = w; b < batches.size(); b += workers) {
          build_batch(preamble, functions, entries, batches[b]);
        }
      });
    }
    for (std::thread& t : pool) t.join();
  }
}

std::vector<JitResult> jit_build_many(const std::string& preamble,
                                      const std::vector<JitFunction>& functions) {
  jit_prebuild(preamble, functions);
  // Every source now loads from its entry, or (its batch failed, or it was alone) builds alone.
  std::vector<JitResult> results;
  results.reserve(functions.size());
  for (const JitFunction& f : functions) results.push_back(jit_build(preamble + f.body, f.symbol));
  return results;
}

}  // namespace nnfuse::codegen
