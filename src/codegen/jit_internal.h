// The pieces of jit.cc that the batch builder (jit_batch.cc) shares: where a source's cache
// entry lives, whether an entry is whole, and one compiler run into an object file.
#pragma once

#include <string>

namespace nnfuse::codegen {

// The cache entry's path for `source` ("" and *error when the cache directory cannot be made).
std::string jit_entry_path(const std::string& source, std::string* error);
// Whether the entry at `path` exists and its checksum trailer holds.
bool jit_entry_valid(const std::string& path);
// A temporary name beside `entry` (a .so path), unique in this process, ending in `ext`.
std::string jit_temp_name(const std::string& entry, const std::string& ext);
// Compiles `source` into the shared object `out` (a temporary name ending in .so) and appends
// the checksum trailer; "" or why not (out removed then).
std::string jit_compile(const std::string& source, const std::string& out);

}  // namespace nnfuse::codegen
