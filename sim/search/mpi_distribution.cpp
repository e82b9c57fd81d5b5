// Process 0 serves a CandidateQueue to the other processes while its own threads take from it:
// a process asks for a candidate, with the result of its last one, whenever one of its threads is
// free; process 0 answers with the next index or -1 (the queue is over), and is told when every
// thread of a process is done. Requests are a few bytes and results a few kilobytes; simulations
// take milliseconds to minutes, so one round trip per candidate costs nothing that shows.

#include "sim/search/mpi_distribution.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sim/common/input_error.hpp"
#include "sim/search/report_codec.hpp"

namespace stepsim::search {
namespace {

constexpr int kRequestTag = 1;  // a process -> 0: [result of its last candidate], next please
constexpr int kReplyTag = 2;    // 0 -> a process: the next index, or -1
constexpr int kDoneTag = 3;     // a process -> 0: all its threads are done

// How a candidate's simulation ended, in a request.
enum class Ending : std::uint8_t { kNone = 0, kReport = 1, kInputError = 2, kError = 3 };

struct Request {
  Ending ending = Ending::kNone;
  std::uint64_t index = 0;
  std::string payload;  // encode_report(), or the error's message
};

std::string encode(const Request& r) {
  std::string out(1 + sizeof r.index, '\0');
  out[0] = static_cast<char>(r.ending);
  std::memcpy(out.data() + 1, &r.index, sizeof r.index);
  return out + r.payload;
}

Request decode(const std::vector<char>& bytes) {
  Request r;
  if (bytes.size() < 1 + sizeof r.index)
    throw std::runtime_error("stepsim search: a short request from another process (a bug)");
  r.ending = static_cast<Ending>(bytes[0]);
  std::memcpy(&r.index, bytes.data() + 1, sizeof r.index);
  r.payload.assign(bytes.begin() + 1 + sizeof r.index, bytes.end());
  return r;
}

class MpiDistribution final : public Distribution {
 public:
  MpiDistribution() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      owns_ = true;
      if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw std::runtime_error(
            "stepsim search: this MPI library does not support MPI_THREAD_SERIALIZED");
      }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm here;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &here);
    MPI_Comm_size(here, &here_);
    MPI_Comm_free(&here);
  }
  ~MpiDistribution() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && finalized == 0) MPI_Finalize();
  }
  MpiDistribution(const MpiDistribution&) = delete;
  MpiDistribution& operator=(const MpiDistribution&) = delete;

  int rank() const override { return rank_; }
  int processes() const override { return size_; }
  int processes_here() const override { return here_; }

  std::string first_error(const std::string& local) override {
    const int length = static_cast<int>(local.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int first = 0;
    while (first < size_ && lengths[static_cast<std::size_t>(first)] == 0)
      ++first;
    if (first == size_) return {};
    std::string message =
        rank_ == first ? local : std::string(lengths[static_cast<std::size_t>(first)], '\0');
    MPI_Bcast(message.data(), static_cast<int>(message.size()), MPI_CHAR, first, MPI_COMM_WORLD);
    if (first != 0) message += " (on MPI process " + std::to_string(first) + ")";
    return message;
  }

  std::vector<std::string> all_gather(const std::string& mine) override {
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size_));
    MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::vector<int> offsets(lengths.size());
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = total;
      total += lengths[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                   MPI_CHAR, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      out.push_back(
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    return out;
  }

  void run(CandidateQueue& queue, unsigned threads,
           const std::function<StepReport(std::size_t)>& simulate) override {
    if (rank_ == 0) {
      serve(queue, threads, simulate);
    } else {
      work(threads, simulate);
    }
  }

 private:
  // Process 0: its threads simulate from the queue while this one answers the others.
  void serve(CandidateQueue& queue, unsigned threads,
             const std::function<StepReport(std::size_t)>& simulate) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&] { simulate_from(queue, simulate); });
    int working = size_ - 1;
    std::vector<char> bytes;
    while (working > 0) {
      int found = 0;
      MPI_Message message;
      MPI_Status status;
      MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &message, &status);
      if (found == 0) {
        // Not MPI_Mprobe: it spins a core that this process's threads are simulating on.
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        continue;
      }
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      bytes.resize(static_cast<std::size_t>(count));
      MPI_Mrecv(bytes.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      if (status.MPI_TAG == kDoneTag) {
        --working;
        continue;
      }
      const Request request = decode(bytes);
      const auto i = static_cast<std::size_t>(request.index);
      switch (request.ending) {
        case Ending::kNone:
          break;
        case Ending::kReport:
          queue.finish(i, decode_report(request.payload), nullptr);
          break;
        case Ending::kInputError:
          queue.finish(i, std::nullopt, std::make_exception_ptr(InputError(request.payload)));
          break;
        case Ending::kError:
          queue.finish(i, std::nullopt,
                       std::make_exception_ptr(std::runtime_error(request.payload)));
          break;
      }
      const auto next = queue.take();
      const std::int64_t reply = next ? static_cast<std::int64_t>(*next) : -1;
      MPI_Send(&reply, 1, MPI_INT64_T, status.MPI_SOURCE, kReplyTag, MPI_COMM_WORLD);
    }
    for (auto& t : pool)
      t.join();
  }

  // Another process: each thread asks process 0 for a candidate (sending the result of its last
  // one) until there is none; the MPI calls of a request and its reply are made under one lock.
  void work(unsigned threads, const std::function<StepReport(std::size_t)>& simulate) {
    std::mutex mpi;
    auto worker = [&] {
      Request request;
      for (;;) {
        std::int64_t reply = -1;
        {
          const std::string bytes = encode(request);
          const std::lock_guard lock(mpi);
          MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, kRequestTag,
                   MPI_COMM_WORLD);
          MPI_Recv(&reply, 1, MPI_INT64_T, 0, kReplyTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (reply < 0) return;
        request.index = static_cast<std::uint64_t>(reply);
        try {
          request.payload = encode_report(simulate(static_cast<std::size_t>(reply)));
          request.ending = Ending::kReport;
        } catch (const InputError& e) {
          request.payload = e.what();
          request.ending = Ending::kInputError;
        } catch (const std::exception& e) {
          request.payload = e.what();
          request.ending = Ending::kError;
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
      pool.emplace_back(worker);
    worker();
    for (auto& t : pool)
      t.join();
    MPI_Send(nullptr, 0, MPI_BYTE, 0, kDoneTag, MPI_COMM_WORLD);
  }

  int rank_ = 0;
  int size_ = 1;
  int here_ = 1;
  bool owns_ = false;
};

}  // namespace

std::unique_ptr<Distribution> make_mpi_distribution() {
  return std::make_unique<MpiDistribution>();
}

}  // namespace stepsim::search
