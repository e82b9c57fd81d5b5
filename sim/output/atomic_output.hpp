// Output files written whole or not at all: every file stepsim writes goes to a temporary file
// beside its target (same directory, so the same file system) and is renamed into place only when
// it is complete. An interrupted or failed run leaves the target as it was before, and no
// temporary file behind.
//
// OutputGuard knows the temporary files in progress, so that the program's signal watcher
// (sim/cli/main.cpp) can remove them and exit at once on SIGINT or SIGTERM. Renames go through the
// guard under its lock: after remove_all() no rename can happen, and a rename that happened before
// it left a complete file.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <set>
#include <string>

namespace stepsim::output {

class OutputGuard {
 public:
  OutputGuard() = default;
  OutputGuard(const OutputGuard&) = delete;
  OutputGuard& operator=(const OutputGuard&) = delete;

  void add(const std::filesystem::path& temporary);
  // Creates `temporary` (O_EXCL) and registers it in one step, so that remove_all() never runs
  // between the two (a file created then would outlive the stop); -1 with errno as open() sets it,
  // or EINTR once remove_all() has run.
  int create(const std::filesystem::path& temporary);
  // Removes `temporary` from the files in progress (it was renamed or deleted).
  void forget(const std::filesystem::path& temporary);
  // Renames `temporary` onto `target`; false (and errno set) when the rename failed or the guard
  // was closed by remove_all().
  bool rename_into_place(const std::filesystem::path& temporary,
                         const std::filesystem::path& target);
  // Deletes every temporary file in progress and refuses any later rename. Safe to call from a
  // thread other than the writers' (the signal watcher).
  void remove_all() noexcept;

 private:
  std::mutex mutex_;
  std::set<std::string> temporaries_;
  bool closed_ = false;
};

// A file being written: `temporary()` is a new, empty file beside `target`, made when the
// PendingFile is; commit() renames it onto the target; a PendingFile destroyed before commit()
// deletes it. Throws InputError naming the target when the directory does not exist or is not
// writable, or when the target is a directory. A target that exists and is not a regular file
// (/dev/stdout, a FIFO) is written in place; through a symbolic link, the file it names is
// replaced.
class PendingFile {
 public:
  explicit PendingFile(std::filesystem::path target, OutputGuard* guard = nullptr);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& temporary() const { return temporary_; }
  // Renames the temporary onto the target. The caller has closed and checked what it wrote.
  void commit();
  // Deletes the temporary now (what the destructor does for an uncommitted file).
  void discard() noexcept;

 private:
  std::filesystem::path target_;
  std::filesystem::path temporary_;
  OutputGuard* guard_;
  bool done_ = false;
  bool direct_ = false;  // the target is not a regular file: written in place
};

// A text or binary stream onto a PendingFile: write to stream(), then commit(), which throws
// InputError when the data could not be written (disk full) or renamed into place.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target, OutputGuard* guard = nullptr);
  std::ostream& stream() { return stream_; }
  void commit();
  const std::filesystem::path& target() const { return file_.target(); }

 private:
  PendingFile file_;
  std::ofstream stream_;
};

// Writes a whole file: `write` fills the stream, then it is committed.
void write_file_atomically(const std::filesystem::path& target,
                           const std::function<void(std::ostream&)>& write,
                           OutputGuard* guard = nullptr);

}  // namespace stepsim::output
