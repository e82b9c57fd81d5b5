#include "sim/output/atomic_output.hpp"

#include <gtest/gtest.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/input_error.hpp"
#include "sim/output/trace_writer.hpp"

namespace stepsim::output {
namespace {

namespace fs = std::filesystem;

class AtomicOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stepsim-atomic-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

TEST_F(AtomicOutputTest, TargetAppearsOnlyOnCommit) {
  const fs::path target = dir_ / "report.json";
  write(target, "earlier");
  AtomicFile file(target);
  file.stream() << "new content\n";
  file.stream().flush();
  // Before commit: the earlier file is intact and the new bytes sit in one temporary beside it.
  EXPECT_EQ(read(target), "earlier");
  ASSERT_EQ(entries().size(), 2u);
  file.commit();
  EXPECT_EQ(read(target), "new content\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"report.json"});
}

TEST_F(AtomicOutputTest, UncommittedFileLeavesNothingAndKeepsTheEarlierFile) {
  const fs::path target = dir_ / "report.json";
  write(target, "earlier");
  {
    AtomicFile file(target);
    file.stream() << "half a report";
  }
  EXPECT_EQ(read(target), "earlier");
  EXPECT_EQ(entries(), std::vector<std::string>{"report.json"});
  {
    AtomicFile file(dir_ / "new.json");
    file.stream() << "half";
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"report.json"});
}

TEST_F(AtomicOutputTest, BadTargetsAreInputErrorsNamingThePath) {
  try {
    AtomicFile file(dir_ / "missing-dir" / "r.json");
    FAIL() << "no error for a missing directory";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing-dir/r.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no such directory"), std::string::npos) << e.what();
  }
  fs::create_directories(dir_ / "sub");
  try {
    AtomicFile file(dir_ / "sub");
    FAIL() << "no error for a directory as the target";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"sub"});
}

TEST_F(AtomicOutputTest, GuardRemovesTemporariesAndRefusesLaterRenames) {
  OutputGuard guard;
  const fs::path target = dir_ / "t.json";
  write(target, "earlier");
  AtomicFile a(target, &guard);
  AtomicFile b(dir_ / "u.csv", &guard);
  a.stream() << "x";
  EXPECT_EQ(entries().size(), 3u);  // t.json and two temporaries
  guard.remove_all();               // what the signal watcher does
  EXPECT_EQ(entries(), std::vector<std::string>{"t.json"});
  EXPECT_THROW(a.commit(), InputError);
  EXPECT_EQ(read(target), "earlier");
  EXPECT_FALSE(fs::exists(dir_ / "u.csv"));
}

TEST_F(AtomicOutputTest, DevicesAreWrittenInPlaceAndLinksKept) {
  // /dev/null stays a device: a file that is not a regular file is written in place, never
  // replaced by a rename.
  write_file_atomically("/dev/null", [](std::ostream& out) { out << "discarded\n"; });
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_THROW(write_file_atomically("/dev/full", [](std::ostream& out) { out << "x\n"; }),
               InputError);
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
  // Through a symbolic link the file it names is replaced; the link stays a link.
  write(dir_ / "real.json", "earlier");
  fs::create_symlink(dir_ / "real.json", dir_ / "link.json");
  write_file_atomically(dir_ / "link.json", [](std::ostream& out) { out << "new"; });
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(read(dir_ / "real.json"), "new");
  EXPECT_EQ(entries(), (std::vector<std::string>{"link.json", "real.json"}));
}

TEST_F(AtomicOutputTest, WriteFileAtomicallyWritesTheWholeFile) {
  const fs::path target = dir_ / "graph.dot";
  write_file_atomically(target, [](std::ostream& out) { out << "graph {}\n"; });
  EXPECT_EQ(read(target), "graph {}\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"graph.dot"});
}

TEST_F(AtomicOutputTest, TraceIsRenamedIntoPlaceOnlyWhenClosed) {
  const fs::path target = dir_ / "trace.json";
  write(target, "earlier");
  {
    TraceWriter w(target);
    w.process_name(0, "rank 0");
    // Destroyed without close(), as when the simulation throws: no partial trace.
  }
  EXPECT_EQ(read(target), "earlier");
  EXPECT_EQ(entries(), std::vector<std::string>{"trace.json"});
  {
    TraceWriter w(dir_ / "trace.json.gz");
    w.process_name(0, "rank 0");
    w.close();
  }
  EXPECT_TRUE(fs::exists(dir_ / "trace.json.gz"));
  EXPECT_EQ(entries(), (std::vector<std::string>{"trace.json", "trace.json.gz"}));
}

}  // namespace
}  // namespace stepsim::output
