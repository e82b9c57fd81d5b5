#include "sim/output/atomic_output.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "sim/common/input_error.hpp"

namespace stepsim::output {

namespace fs = std::filesystem;

void OutputGuard::add(const fs::path& temporary) {
  const std::lock_guard lock(mutex_);
  temporaries_.insert(temporary.string());
}

int OutputGuard::create(const fs::path& temporary) {
  const std::lock_guard lock(mutex_);
  if (closed_) {
    errno = EINTR;
    return -1;
  }
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) temporaries_.insert(temporary.string());
  return fd;
}

void OutputGuard::forget(const fs::path& temporary) {
  const std::lock_guard lock(mutex_);
  temporaries_.erase(temporary.string());
}

bool OutputGuard::rename_into_place(const fs::path& temporary, const fs::path& target) {
  const std::lock_guard lock(mutex_);
  if (closed_) {
    errno = EINTR;
    return false;
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) return false;
  temporaries_.erase(temporary.string());
  return true;
}

void OutputGuard::remove_all() noexcept {
  const std::lock_guard lock(mutex_);
  closed_ = true;
  for (const std::string& path : temporaries_)
    ::unlink(path.c_str());
  temporaries_.clear();
}

namespace {

// Creates a new file `.NAME.stepsim-PID-N` beside `target` (O_EXCL, so never someone else's), with
// the mode a plain open would give (0666 less the umask).
fs::path create_temporary(const fs::path& target, OutputGuard* guard) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string name = target.filename().string();
  const auto seed = static_cast<unsigned long long>(
      std::chrono::steady_clock::now().time_since_epoch().count() & 0xffffff);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path candidate =
        dir / fmt::format(".{}.stepsim-{}-{:x}{}", name, ::getpid(), seed, attempt);
    const int fd = guard != nullptr
                       ? guard->create(candidate)
                       : ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      return candidate;
    }
    if (errno != EEXIST) break;
  }
  throw InputError(fmt::format("cannot write '{}': {}", target.string(),
                               errno == ENOENT ? "no such directory" : std::strerror(errno)));
}

}  // namespace

PendingFile::PendingFile(fs::path target, OutputGuard* guard)
    : target_(std::move(target)), guard_(guard) {
  if (target_.empty() || !target_.has_filename()) {
    throw InputError(fmt::format("cannot write '{}': not a file name", target_.string()));
  }
  std::error_code ec;
  const fs::file_status status = fs::status(target_, ec);  // follows symbolic links
  if (fs::is_directory(status)) {
    throw InputError(fmt::format("cannot write '{}': it is a directory", target_.string()));
  }
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device, pipe or terminal (/dev/stdout, a FIFO): written in place; replacing it with a
    // file would be wrong, and it has no earlier content to keep.
    temporary_ = target_;
    direct_ = true;
    return;
  }
  // Through a symbolic link, the file it names is replaced and the link stays.
  if (fs::is_symlink(fs::symlink_status(target_, ec))) {
    const fs::path real = fs::canonical(target_, ec);
    if (!ec) target_ = real;
  }
  temporary_ = create_temporary(target_, guard_);  // registered with the guard as it is created
}

PendingFile::~PendingFile() {
  discard();
}

void PendingFile::commit() {
  if (done_ || direct_) return;
  const bool ok = guard_ != nullptr ? guard_->rename_into_place(temporary_, target_)
                                    : std::rename(temporary_.c_str(), target_.c_str()) == 0;
  if (!ok) {
    const std::string why = std::strerror(errno);
    discard();
    throw InputError(fmt::format("cannot write '{}': {}", target_.string(), why));
  }
  done_ = true;
}

void PendingFile::discard() noexcept {
  if (done_ || direct_) return;
  done_ = true;
  ::unlink(temporary_.c_str());
  if (guard_ != nullptr) guard_->forget(temporary_);
}

AtomicFile::AtomicFile(fs::path target, OutputGuard* guard)
    : file_(std::move(target), guard), stream_(file_.temporary(), std::ios::binary) {
  if (!stream_) {
    throw InputError(fmt::format("cannot write '{}': not writable", file_.target().string()));
  }
}

void AtomicFile::commit() {
  stream_.flush();
  stream_.close();
  if (stream_.fail()) {
    throw InputError(fmt::format("writing '{}' failed (disk full?)", file_.target().string()));
  }
  file_.commit();
}

void write_file_atomically(const fs::path& target, const std::function<void(std::ostream&)>& write,
                           OutputGuard* guard) {
  AtomicFile file(target, guard);
  write(file.stream());
  file.commit();
}

}  // namespace stepsim::output
