// How the simulations of a search (or of a comparison) are shared among processes.
//
// One process (LocalDistribution) simulates every candidate on its threads. Under an MPI launcher
// (mpirun, srun), make_distribution() returns the MPI distribution (mpi_distribution.cpp, built
// when CMake finds MPI and STEPSIM_MPI is on): every process enumerates the same layouts, each
// checks, sizes and bounds every processes()-th one and they exchange the results, process 0 hands
// the candidates out
// one at a time from its CandidateQueue (a dynamic queue: simulations of different layouts differ
// in length by orders of magnitude, so a fixed split would leave processes idle), the others ask
// for the next candidate when one of their threads is free and send back its report, and process 0
// alone writes the output. The queue sees every result, so the bound prunes against the best step
// time of all processes, and the output is byte for byte that of one process.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/run/step_report.hpp"
#include "sim/search/candidate_queue.hpp"

namespace stepsim::search {

class Distribution {
 public:
  virtual ~Distribution() = default;
  // This process (0 writes the output) and how many there are.
  virtual int rank() const = 0;
  virtual int processes() const = 0;
  // The processes on this machine (this one included), which share its cores.
  virtual int processes_here() const = 0;
  bool writes_output() const { return rank() == 0; }
  // Simulations at once in this process: `jobs`, or when it is 0 the machine's cores shared among
  // the processes on it (at least 1).
  unsigned threads(unsigned jobs) const;

  // Collective (every process calls it at the same point): the message of the first process, by
  // rank, whose `local` message is not empty, on every process; empty when every one is. So an
  // error that only some processes see (a file missing on one machine) ends every one of them.
  virtual std::string first_error(const std::string& local) = 0;

  // Collective: the `mine` of every process, by rank, on every process. (The processes of a
  // search check, size and bound a share of the candidates each and exchange the results so.)
  virtual std::vector<std::string> all_gather(const std::string& mine) = 0;

  // Collective: simulates the candidates of `queue` until it hands out no more, `threads` at a
  // time in each process, with `simulate` (which runs on any thread of any process for any index,
  // and must not share mutable state between calls). On process 0, `queue` holds every result on
  // return; other processes do not use theirs.
  virtual void run(CandidateQueue& queue, unsigned threads,
                   const std::function<StepReport(std::size_t)>& simulate) = 0;
};

// Every simulation in this process.
class LocalDistribution final : public Distribution {
 public:
  int rank() const override { return 0; }
  int processes() const override { return 1; }
  int processes_here() const override { return 1; }
  std::string first_error(const std::string& local) override { return local; }
  std::vector<std::string> all_gather(const std::string& mine) override { return {mine}; }
  void run(CandidateQueue& queue, unsigned threads,
           const std::function<StepReport(std::size_t)>& simulate) override;
};

// Takes candidates from `queue` and simulates them on this thread until it hands out no more; a
// simulation's exception is the candidate's error.
void simulate_from(CandidateQueue& queue, const std::function<StepReport(std::size_t)>& simulate);

// The distribution of this process: MPI when stepsim was built with it and an MPI launcher
// started the process (it sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK), local otherwise.
// The MPI one initializes MPI and finalizes it when destroyed; make one per process.
std::unique_ptr<Distribution> make_distribution();

}  // namespace stepsim::search
