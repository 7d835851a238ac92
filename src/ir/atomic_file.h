// Files written whole or not at all. A compiled model, a report or an output written in place
// would be left half-written by a process killed midway, a full disk or a crash, and the next
// reader would load the torn file; written here, the bytes go to a temporary file beside the
// destination and are renamed over it only once all of them are written, so a reader sees the
// old file (or none) or the whole new one.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace nnfuse {

// Writes `path` with `write`, as above. `what` names the file in errors ("the fused model").
// Throws Error (kInvalidArgument) naming `path` when the file cannot be created, a write fails
// (a full disk: "no space left on device") or the rename fails; the temporary file is removed
// then, and when `write` throws.
void write_file_atomically(const std::string& path, const std::string& what,
                           const std::function<void(std::ostream&)>& write);

}  // namespace nnfuse
