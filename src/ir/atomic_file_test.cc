// Files written whole or not at all: the new content replaces the old in one step, a writer
// that fails midway leaves the old file and no temporary one, and errors name the file.
#include "ir/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace nnfuse {
namespace atomic_file_test {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(AtomicFile, ReplacesTheOldContentAndLeavesNoTemporaryFile) {
  const fs::path d = fresh_dir("atomic_replace");
  const std::string p = (d / "model.onnx").string();
  write_file_atomically(p, "the model", [](std::ostream& o) { o << "old"; });
  write_file_atomically(p, "the model", [](std::ostream& o) { o << "new content"; });
  EXPECT_EQ(read(p), "new content");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
}

TEST(AtomicFile, AWriterThatFailsMidwayLeavesTheOldFile) {
  const fs::path d = fresh_dir("atomic_fail");
  const std::string p = (d / "report.json").string();
  write_file_atomically(p, "the report", [](std::ostream& o) { o << "complete"; });
  EXPECT_THROW(write_file_atomically(p, "the report",
                                     [](std::ostream& o) {
                                       o << "half of it";
                                       throw Error(ErrorKind::kRuntime, "killed");
                                     }),
               Error);
  EXPECT_EQ(read(p), "complete");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  // A stream that goes bad (as on a full disk) is an error too, and changes nothing.
  try {
    write_file_atomically(p, "the report", [](std::ostream& o) {
      o << "x";
      o.setstate(std::ios::badbit);
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed writing the report '" + p + "'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(p), "complete");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
}

TEST(AtomicFile, DevicesAreWrittenInPlaceAndLinksKept) {
  // Renaming over /dev/null would replace the device with a file.
  write_file_atomically("/dev/null", "the model", [](std::ostream& o) { o << "x"; });
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  const fs::path d = fresh_dir("atomic_link");
  write_file_atomically((d / "target").string(), "the model", [](std::ostream& o) { o << "a"; });
  fs::create_symlink(d / "target", d / "link");
  write_file_atomically((d / "link").string(), "the model", [](std::ostream& o) { o << "b"; });
  EXPECT_TRUE(fs::is_symlink(d / "link"));
  EXPECT_EQ(read(d / "target"), "b");
}

}  // namespace atomic_file_test
}  // namespace nnfuse
