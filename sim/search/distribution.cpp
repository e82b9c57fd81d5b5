#include "sim/search/distribution.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

#ifdef STEPSIM_HAVE_MPI
#include "sim/search/mpi_distribution.hpp"
#endif

namespace stepsim::search {

void simulate_from(CandidateQueue& queue, const std::function<StepReport(std::size_t)>& simulate) {
  while (const auto i = queue.take()) {
    std::optional<StepReport> report;
    std::exception_ptr error;
    try {
      report = simulate(*i);
    } catch (...) {
      error = std::current_exception();
    }
    queue.finish(*i, std::move(report), error);
  }
}

unsigned Distribution::threads(unsigned jobs) const {
  if (jobs > 0) return jobs;
  const unsigned cores = std::thread::hardware_concurrency();
  return std::max(1u, cores / static_cast<unsigned>(std::max(1, processes_here())));
}

void LocalDistribution::run(CandidateQueue& queue, unsigned threads,
                            const std::function<StepReport(std::size_t)>& simulate) {
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back([&] { simulate_from(queue, simulate); });
  simulate_from(queue, simulate);
  for (auto& t : pool)
    t.join();
}

std::unique_ptr<Distribution> make_distribution() {
#ifdef STEPSIM_HAVE_MPI
  // Open MPI's mpirun, and PMI or PMIx launchers (srun --mpi=pmi2 / pmix, MPICH's hydra).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return make_mpi_distribution();
  }
#endif
  return std::make_unique<LocalDistribution>();
}

}  // namespace stepsim::search
