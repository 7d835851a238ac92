#include "ir/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace nnfuse {

namespace {

std::atomic<unsigned> g_counter{0};

std::string errno_text(int e) { return e ? std::string(" (") + std::strerror(e) + ")" : ""; }

}  // namespace

void write_file_atomically(const std::string& path_in, const std::string& what,
                           const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path_in, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a pipe (/dev/null, /dev/stdout, a FIFO) is written as it is: renaming over it
    // would replace it.
    std::ofstream f(path_in, std::ios::binary);
    if (!f) fail(ErrorKind::kInvalidArgument, "cannot write ", what, " '", path_in, "'");
    write(f);
    f.flush();
    if (!f) fail(ErrorKind::kInvalidArgument, "failed writing ", what, " '", path_in, "'");
    return;
  }
  // Through a symbolic link, the file it names is replaced, not the link.
  const std::string path = fs::is_symlink(fs::symlink_status(path_in, ec))
                               ? fs::canonical(path_in, ec).string()
                               : path_in;
  // Beside the destination (one file system, so the rename is atomic), named by process and
  // call so that concurrent writers of one path do not share it.
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long long>(getpid())) + "." +
                          std::to_string(g_counter.fetch_add(1));
  auto discard = [&] {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
  };
  errno = 0;
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    fail(ErrorKind::kInvalidArgument, "cannot write ", what, " '", path, "'", errno_text(errno));
  }
  try {
    write(f);
  } catch (...) {
    f.close();
    discard();
    throw;
  }
  errno = 0;
  f.flush();
  f.close();
  if (!f) {
    const int e = errno;
    discard();
    fail(ErrorKind::kInvalidArgument, "failed writing ", what, " '", path, "'", errno_text(e),
         "; the previous file, if any, is unchanged");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    discard();
    fail(ErrorKind::kInvalidArgument, "cannot replace ", what, " '", path, "'", errno_text(e));
  }
}

}  // namespace nnfuse
