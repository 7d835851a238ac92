#include "codegen/jit.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "codegen/jit_internal.h"

extern char** environ;

namespace nnfuse::codegen {

namespace fs = std::filesystem;

namespace {

std::atomic<int64_t> g_compiler_runs{0};
std::atomic<int64_t> g_entry_reads{0};
std::atomic<int64_t> g_unique{0};

const char* env_nonempty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string w;
  while (is >> w) out.push_back(w);
  return out;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string first_lines(const std::string& path, int max_lines) {
  std::ifstream f(path);
  std::string line, out;
  int n = 0;
  while (n < max_lines && std::getline(f, line)) {
    if (!out.empty()) out += '\n';
    out += line;
    ++n;
  }
  return out;
}

// Every cached object ends in a trailer: 8 magic bytes and the FNV-1a hash of the bytes before
// it. The ELF loader ignores bytes past the object's end, and an entry that is truncated,
// corrupted or was not written by this code fails the check and is rebuilt, never loaded.
constexpr char kTrailerMagic[8] = {'n', 'n', 'f', 'u', 's', 'e', 'o', '1'};

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return f ? s.str() : std::string();
}

bool append_trailer(const fs::path& so) {
  const std::string bytes = read_bytes(so);
  if (bytes.empty()) return false;
  const uint64_t h = fnv1a64(bytes);
  std::ofstream f(so, std::ios::binary | std::ios::app);
  f.write(kTrailerMagic, sizeof kTrailerMagic);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((h >> (8 * i)) & 0xff));
  f.close();
  return static_cast<bool>(f);
}

// "" when `so` ends in a trailer that matches its bytes, else why not.
std::string check_trailer(const fs::path& so) {
  g_entry_reads.fetch_add(1);
  const std::string bytes = read_bytes(so);
  const size_t n = sizeof kTrailerMagic + 8;
  if (bytes.size() <= n) return "too short";
  if (bytes.compare(bytes.size() - n, sizeof kTrailerMagic,
                    std::string(kTrailerMagic, sizeof kTrailerMagic)) != 0) {
    return "no checksum trailer";
  }
  uint64_t h = 0;
  for (int i = 0; i < 8; ++i) {
    h |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[bytes.size() - 8 + i])) << (8 * i);
  }
  return fnv1a64(bytes.substr(0, bytes.size() - n)) == h ? "" : "checksum mismatch";
}

// Seconds a compile may take ($NNFUSE_JIT_TIMEOUT, default 300) before it is killed and the
// region falls back to its nodes.
double compile_timeout() {
  if (const char* v = env_nonempty("NNFUSE_JIT_TIMEOUT")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end != v && t > 0) return t;
  }
  return 300;
}

// Loads `so` and resolves `symbol`; on failure sets `error`.
KernelFn load(const std::string& so, const std::string& symbol, std::string& error) {
  dlerror();
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    error = std::string("dlopen failed: ") + (e != nullptr ? e : so.c_str());
    return nullptr;
  }
  dlerror();
  void* sym = dlsym(h, symbol.c_str());
  if (sym == nullptr) {
    const char* e = dlerror();
    error = std::string("dlsym failed for '") + symbol + "': " + (e != nullptr ? e : "not found");
    dlclose(h);
    return nullptr;
  }
  // Kept loaded for the process lifetime: callers hold the function pointer.
  return reinterpret_cast<KernelFn>(sym);
}

// Runs `argv` with stdout and stderr to `log`; returns a failure reason or "".
std::string run_compiler(const std::vector<std::string>& argv, const std::string& log) {
  // A compiler that could not be started (not found, not executable) is not tried again by this
  // process with the same PATH: each region would otherwise pay a process start to learn it.
  // Only the reasons that will not change on their own are kept (below).
  static std::mutex unstartable_mutex;
  static std::map<std::string, std::string> unstartable;  // argv[0] and PATH -> the reason
  const char* path_env = std::getenv("PATH");
  const std::string key = argv[0] + '\n' + (path_env != nullptr ? path_env : "");
  {
    std::lock_guard<std::mutex> lock(unstartable_mutex);
    if (auto it = unstartable.find(key); it != unstartable.end()) return it->second;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  // Its own process group, so that a compile that hangs is killed with the processes it started.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  g_compiler_runs.fetch_add(1);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::string why =
        std::string("compiler '") + argv[0] + "' could not be started: " + std::strerror(rc);
    // Not a failure to start a process at all (EAGAIN, ENOMEM): that may pass.
    if (rc == ENOENT || rc == EACCES || rc == ENOEXEC || rc == ENOTDIR || rc == EPERM) {
      std::lock_guard<std::mutex> lock(unstartable_mutex);
      unstartable.emplace(key, why);
    }
    return why;
  }
  int status = 0;
  const double limit = compile_timeout();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      return std::string("compiler '") + argv[0] + "': waitpid failed: " + std::strerror(errno);
    }
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (spent.count() > limit) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      char t[32];
      std::snprintf(t, sizeof t, "%g", limit);
      return std::string("compiler '") + argv[0] + "' timed out after " + t +
             " s (NNFUSE_JIT_TIMEOUT) and was killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::string why = std::string("compiler '") + argv[0] + "' failed";
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    why += std::string(" (exit status ") + std::to_string(code) +
           (code == 127 ? ", not found?)" : ")");
  } else if (WIFSIGNALED(status)) {
    why += std::string(" (signal ") + std::to_string(WTERMSIG(status)) + ")";
  }
  const std::string out = first_lines(log, 20);
  if (!out.empty()) why += std::string(":\n") + out;
  return why;
}

// The host's ISA as the kernel sees it with -march=native: the CPU feature line of
// /proc/cpuinfo ("flags" on x86, "Features" on Arm), so a cache shared between machines
// never hands one an object built for another's instruction set.
const std::string& host_isa() {
  static const std::string isa = [] {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) return line;
    }
    return std::string("unknown");
  }();
  return isa;
}

}  // namespace

uint64_t fnv1a64(const std::string& data) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int64_t jit_compiler_invocations() { return g_compiler_runs.load(); }

int64_t jit_entry_reads() { return g_entry_reads.load(); }

std::string jit_compiler() {
  if (const char* v = env_nonempty("NNFUSE_CXX")) return v;
  if (const char* v = env_nonempty("CXX")) return v;
  return "c++";
}

std::string jit_cache_dir() {
  if (const char* v = env_nonempty("NNFUSE_CACHE_DIR")) return v;
  if (const char* v = env_nonempty("XDG_CACHE_HOME")) return std::string(v) + "/nnfuse";
  if (const char* v = env_nonempty("HOME")) return std::string(v) + "/.cache/nnfuse";
  return (fs::temp_directory_path() / "nnfuse-cache").string();
}

std::string jit_entry_path(const std::string& source, std::string* error) {
  const std::string compiler = jit_compiler();
  const std::string key =
      compiler + '\n' + kJitFlags + ' ' + kJitLibs + '\n' + host_isa() + '\n' + source;
  const fs::path dir = jit_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    if (error)
      *error = std::string("cannot create cache dir '") + dir.string() + "': " + ec.message();
    return "";
  }
  return (dir / (std::string("nnf_") + hex64(fnv1a64(key)) + ".so")).string();
}

namespace {

// A file's identity: the same path with the same identity is the same bytes (a rename gives a
// new inode, a write a new size or change time).
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; };
  return FileId{st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
}

// The entries this process has checked, and the functions it has loaded from them: a model's
// regions share a few thousand objects, each checked (read and hashed) once, not once per region.
std::mutex g_entries_mu;
std::map<std::string, FileId> g_verified;
std::map<std::pair<std::string, std::string>, std::pair<FileId, KernelFn>> g_loaded;

// The identity of `path` when it holds a valid entry.
std::optional<FileId> valid_entry(const std::string& path) {
  const std::optional<FileId> id = file_id(path);
  if (!id) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(g_entries_mu);
    auto it = g_verified.find(path);
    if (it != g_verified.end() && it->second == *id) return id;
  }
  if (!check_trailer(path).empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(g_entries_mu);
  g_verified[path] = *id;
  return id;
}

// `symbol` of the valid entry `so` (of identity `id`), loaded once per process.
KernelFn load_entry(const std::string& so, const FileId& id, const std::string& symbol,
                    std::string& error) {
  const auto key = std::make_pair(so, symbol);
  {
    std::lock_guard<std::mutex> lock(g_entries_mu);
    auto it = g_loaded.find(key);
    if (it != g_loaded.end() && it->second.first == id) return it->second.second;
  }
  KernelFn fn = load(so, symbol, error);
  if (fn != nullptr) {
    std::lock_guard<std::mutex> lock(g_entries_mu);
    g_loaded[key] = {id, fn};
  }
  return fn;
}

}  // namespace

bool jit_entry_valid(const std::string& path) { return valid_entry(path).has_value(); }

std::string jit_temp_name(const std::string& entry, const std::string& ext) {
  return entry.substr(0, entry.size() - 3) + "." +
         std::to_string(static_cast<long long>(getpid())) + "." +
         std::to_string(g_unique.fetch_add(1)) + ".tmp" + ext;
}

namespace {

// The leading lines of `source` that are blank, `//` comments or `#include <...>` of system
// headers: the part every generated source shares and the compiler spends most of a small
// kernel's build on (<cmath> is 20,000 lines). Its length in bytes and in lines.
std::pair<size_t, int> include_prefix(const std::string& source) {
  size_t pos = 0, end = 0;
  int lines = 0, end_lines = 0;
  bool any_include = false;
  while (pos < source.size()) {
    const size_t nl = source.find('\n', pos);
    if (nl == std::string::npos) break;
    const std::string line = source.substr(pos, nl - pos);
    const bool include = line.rfind("#include <", 0) == 0 && line.back() == '>';
    if (!(line.empty() || line.rfind("//", 0) == 0 || include)) break;
    pos = nl + 1;
    ++lines;
    if (include) {
      any_include = true;
      end = pos;
      end_lines = lines;
    }
  }
  return any_include ? std::pair<size_t, int>{end, end_lines} : std::pair<size_t, int>{0, 0};
}

std::mutex g_pch_mu;
bool g_pch_disabled =
    false;  // a compile with a precompiled header failed where one without did not

bool pch_enabled() {
  if (const char* v = env_nonempty("NNFUSE_JIT_PCH"); v != nullptr && std::string(v) == "0") {
    return false;
  }
  // Clang's precompiled headers name the file they were made from, which the temporary name and
  // rename below do not keep; GCC's do not.
  const std::vector<std::string> argv = split_ws(jit_compiler());
  if (argv.empty() ||
      fs::path(argv.back()).filename().string().find("clang") != std::string::npos) {
    return false;
  }
  std::lock_guard<std::mutex> lock(g_pch_mu);
  return !g_pch_disabled;
}

// The cache's header for `prefix`, precompiled (`<header>.gch` beside it) for this compiler,
// flags and host, built on first use; "" when it cannot be built. The .gch is renamed into place
// before the header, so a header in the cache always has its precompiled form beside it.
std::string precompiled_header(const std::string& prefix, const std::vector<std::string>& argv0) {
  const std::string key = jit_compiler() + '\n' + kJitFlags + '\n' + host_isa() + '\n' + prefix;
  const fs::path dir = jit_cache_dir();
  const std::string header =
      (dir / (std::string("nnf_pch_") + hex64(fnv1a64(key)) + ".h")).string();
  std::error_code ec;
  // One build per process at a time: the threads of a batched build all want the same header.
  static std::mutex building;
  std::lock_guard<std::mutex> lock(building);
  if (fs::exists(header, ec) && fs::exists(header + ".gch", ec)) return header;
  const std::string tmp = jit_temp_name(header.substr(0, header.size() - 2) + ".so", ".h");
  {
    std::ofstream f(tmp, std::ios::binary);
    f << prefix;
    f.close();
    if (!f) {
      fs::remove(tmp, ec);
      return "";
    }
  }
  std::vector<std::string> argv = argv0;
  for (const std::string& flag : split_ws(kJitFlags)) {
    if (flag != "-shared") argv.push_back(flag);
  }
  for (const char* a : {"-x", "c++-header", "-o"}) argv.push_back(a);
  argv.push_back(tmp + ".gch");
  argv.push_back(tmp);
  const std::string why = run_compiler(argv, tmp + ".log");
  fs::remove(tmp + ".log", ec);
  if (why.empty()) fs::rename(tmp + ".gch", header + ".gch", ec);
  if (why.empty() && !ec) fs::rename(tmp, header, ec);
  const bool ok = why.empty() && !ec;
  fs::remove(tmp + ".gch", ec);
  fs::remove(tmp, ec);
  if (!ok) {  // not tried again in this process (a compiler that hangs would hang twice a kernel)
    std::lock_guard<std::mutex> pch_lock(g_pch_mu);
    g_pch_disabled = true;
  }
  return ok ? header : "";
}

// One compiler run: `source` into `out`, with the precompiled `header` included first when
// given (then `source` is what follows the header's lines, which `#line` numbers as in the
// whole source).
std::string compile_once(const std::string& source, const std::string& out,
                         const std::string& header, int header_lines) {
  std::vector<std::string> argv = split_ws(jit_compiler());
  const std::string src = out.substr(0, out.size() - 3) + ".cc";
  const std::string log = out.substr(0, out.size() - 3) + ".log";
  std::error_code ec;
  {
    std::ofstream f(src, std::ios::binary);
    if (!header.empty()) f << "#line " << header_lines + 1 << '\n';
    f << source;
    f.close();
    if (!f) {
      fs::remove(src, ec);
      return std::string("cannot write '") + src + "'";
    }
  }
  for (const std::string& flag : split_ws(kJitFlags)) argv.push_back(flag);
  if (!header.empty()) {
    // A precompiled header the compiler cannot use is an error (then retried without it and
    // removed), not a silent parse of the text beside it.
    for (const char* a : {"-Winvalid-pch", "-Werror=invalid-pch", "-include"}) argv.push_back(a);
    argv.push_back(header);
  }
  argv.push_back("-o");
  argv.push_back(out);
  argv.push_back(src);
  for (const std::string& lib : split_ws(kJitLibs)) argv.push_back(lib);
  const std::string why = run_compiler(argv, log);
  fs::remove(src, ec);
  fs::remove(log, ec);
  if (!why.empty()) fs::remove(out, ec);
  return why;
}

}  // namespace

std::string jit_compile(const std::string& source, const std::string& out) {
  const std::vector<std::string> argv = split_ws(jit_compiler());
  if (argv.empty()) return "no compiler configured";
  std::error_code ec;
  std::string why;
  bool done = false;
  // The shared #include lines from a precompiled header where the compiler allows. A failure
  // with it is retried without, so a broken header costs time, never a kernel.
  if (const auto [len, lines] = include_prefix(source); len > 0 && pch_enabled()) {
    const std::string header = precompiled_header(source.substr(0, len), argv);
    if (!header.empty()) {
      done = compile_once(source.substr(len), out, header, lines).empty();
      if (!done) {
        why = compile_once(source, out, "", 0);
        done = true;
        if (why.empty()) {  // the header was at fault, not the source
          std::lock_guard<std::mutex> lock(g_pch_mu);
          g_pch_disabled = true;
          fs::remove(header, ec);  // rebuilt by the next process that wants it
          fs::remove(header + ".gch", ec);
        }
      }
    }
  }
  if (!done) why = compile_once(source, out, "", 0);
  if (!why.empty()) return why;
  if (!append_trailer(out)) {
    fs::remove(out, ec);
    return std::string("cannot write the checksum of '") + out + "'";
  }
  return "";
}

JitResult jit_build(const std::string& source, const std::string& symbol) {
  JitResult res;
  try {
    if (split_ws(jit_compiler()).empty()) {
      res.error = "no compiler configured";
      return res;
    }
    const std::string so = jit_entry_path(source, &res.error);
    if (so.empty()) return res;
    res.so_path = so;
    std::error_code ec;
    // A damaged or foreign entry is never loaded: it is rebuilt below (the rename replaces it).
    if (const std::optional<FileId> id = valid_entry(so)) {
      std::string why;
      if (KernelFn fn = load_entry(so, *id, symbol, why)) {
        res.fn = fn;
        res.cache_hit = true;
        return res;
      }
    }
    const std::string tmp_so = jit_temp_name(so, ".so");
    if (std::string why = jit_compile(source, tmp_so); !why.empty()) {
      res.error = why;
      return res;
    }
    fs::rename(tmp_so, so, ec);
    if (ec) {
      fs::remove(tmp_so, ec);
      res.error = std::string("cannot rename into cache '") + so + "'";
      return res;
    }
    res.fn = load(so, symbol, res.error);
    if (res.fn != nullptr) res.error.clear();
    return res;
  } catch (const std::exception& e) {
    res.fn = nullptr;
    res.error = std::string("jit_build: ") + e.what();
    return res;
  }
}

}  // namespace nnfuse::codegen
