// `kernels`: every distinct kernel of one micro-batch's forward and backward (and the optimizer
// step) of a scenario, with its shape, FLOPs, bytes, bound, modelled time, efficiency and the data
// its time came from (workloads/kernel_report.hpp). The use behind `stepsim kernels`.
#pragma once

#include <iosfwd>

#include "sim/app/scenario_source.hpp"
#include "workloads/kernel_report.hpp"

namespace stepsim::app {

// Reads the scenario and lists its kernels.
//   THROWS: InputError naming file, key and value for a bad scenario.
workloads::KernelReport kernels(const ScenarioSource& scenario);

// The table of `stepsim kernels`: the device and where its data comes from, one row per kernel
// (time in us, efficiency in %), and the kernel time of one micro-batch.
void write_kernel_table(std::ostream& out, const workloads::KernelReport& report);

// The same rows as CSV (time_us, flops, bytes, efficiency as a fraction).
void write_kernel_csv(std::ostream& out, const workloads::KernelReport& report);

}  // namespace stepsim::app
