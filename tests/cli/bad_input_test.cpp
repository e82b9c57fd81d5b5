// The bad-input suite: malformed files and arguments must give exit code 2 and a message that
// names the problem (file, key, value), never a crash, a hang or a silent default. Runs the program
// in-process, so the ASan/UBSan build checks these paths for memory errors and leaks too.
#include <gtest/gtest.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/cli.hpp"

namespace stepsim {
namespace {

struct BadInput {
  std::string name;
  std::vector<std::string> args;  // "{bad}" stands for tests/inputs/bad
  std::vector<std::string> gist;  // each must appear in stderr
};

std::string expand(std::string arg) {
  const std::string dir = std::string(STEPSIM_SOURCE_DIR) + "/tests/inputs/bad";
  if (auto pos = arg.find("{bad}"); pos != std::string::npos) arg.replace(pos, 5, dir);
  return arg;
}

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, ExitsWithTwoAndExplains) {
  const BadInput& c = GetParam();
  std::vector<std::string> args;
  for (const auto& a : c.args)
    args.push_back(expand(a));
  std::ostringstream out, err;
  const int code = cli::run(args, out, err);
  EXPECT_EQ(code, 2) << "stderr: " << err.str();
  for (const auto& part : c.gist) {
    EXPECT_NE(err.str().find(part), std::string::npos) << "expected '" << part << "' in stderr:\n"
                                                       << err.str();
  }
}

std::vector<BadInput> cases() {
  return {
      // Usage.
      {"no_command", {}, {"A subcommand is required"}},
      {"unknown_command", {"chek", "x.yaml"}, {"unknown command 'chek'", "did you mean 'check'"}},
      {"unknown_option", {"check", "--frobnicate", "{bad}/empty.yaml"}, {"frobnicate"}},
      {"missing_argument", {"check"}, {"scenario is required"}},
      // Flags take no value (fuzz_cli: CLI11 converted `--verbose=N` with std::stoll, and an N
      // out of its range ended the program with std::terminate).
      {"flag_with_a_value_out_of_range",
       {"--verbose=111111111111111111111111111", "check", "{bad}/empty.yaml"},
       {"--verbose is a flag and takes no value", "'--verbose=111111111111111111111111111'"}},
      {"flag_with_a_count", {"--quiet=-5", "check", "{bad}/empty.yaml"}, {"--quiet is a flag"}},
      {"subcommand_flag_with_a_value", {"topo", "--list=2"}, {"--list is a flag", "'--list=2'"}},
      // Files.
      {"missing_file", {"check", "{bad}/no_such_file.yaml"}, {"no_such_file.yaml", "no such file"}},
      {"directory_as_file", {"check", "{bad}/a_directory.yaml"}, {"is a directory"}},
      {"empty_file", {"check", "{bad}/empty.yaml"}, {"empty.yaml", "the scenario is empty"}},
      {"only_a_comment", {"check", "{bad}/only_comment.yaml"}, {"the scenario is empty"}},
      {"binary_garbage", {"check", "{bad}/binary_garbage.yaml"}, {"not a YAML text file"}},
      // YAML syntax.
      {"unclosed_bracket",
       {"check", "{bad}/yaml_unclosed_bracket.yaml"},
       {"yaml_unclosed_bracket.yaml:", "YAML syntax error"}},
      {"bad_indentation",
       {"check", "{bad}/yaml_bad_indentation.yaml"},
       {"yaml_bad_indentation.yaml:2", "YAML syntax error"}},
      {"tab_indentation",
       {"check", "{bad}/yaml_tab_indentation.yaml"},
       {"yaml_tab_indentation.yaml:3", "indented with a tab"}},
      {"duplicate_key",
       {"check", "{bad}/duplicate_key.yaml"},
       {"duplicate_key.yaml:3:1", "duplicate key 'model'"}},
      {"list_as_key", {"check", "{bad}/list_as_key.yaml"}, {"list_as_key.yaml:3", "a key must be"}},
      {"alias_bomb", {"check", "{bad}/alias_bomb.yaml"}, {"alias_bomb.yaml", "refusing"}},
      {"alias_laughs_under_the_limit",
       {"check", "{bad}/alias_laughs_under_the_limit.yaml"},
       {"alias_laughs_under_the_limit.yaml", "aliases expand to", "at most 1000000"}},
      {"recursive_alias",
       {"check", "{bad}/recursive_alias.yaml"},
       {"recursive_alias.yaml:4:24", "names a node that contains it"}},
      // Includes.
      {"include_cycle",
       {"check", "{bad}/cycle_a.yaml"},
       {"include cycle", "cycle_a.yaml -> cycle_b.yaml -> cycle_a.yaml"}},
      {"missing_include",
       {"check", "{bad}/missing_include.yaml"},
       {"missing_include.yaml:1:11", "does_not_exist.yaml", "no such file"}},
      {"include_directory", {"check", "{bad}/include_directory.yaml"}, {"is a directory"}},
      // Structure.
      {"top_level_list", {"check", "{bad}/top_level_list.yaml"}, {"(top level)", "got a list"}},
      {"unknown_top_key",
       {"check", "{bad}/unknown_top_key.yaml"},
       {"unknown_top_key.yaml:3:1", "unknown key 'paralelism'", "did you mean 'parallelism'"}},
      {"name_is_a_map",
       {"check", "{bad}/name_is_a_map.yaml"},
       {"name_is_a_map.yaml:1:7", "name", "got a map"}},
      {"missing_topology",
       {"check", "{bad}/missing_topology.yaml"},
       {"missing required key 'topology'"}},
      {"missing_model", {"check", "{bad}/missing_model.yaml"}, {"missing required key 'model'"}},
      // Values in the sections.
      {"tp_negative",
       {"check", "{bad}/tp_negative.yaml"},
       {"tp_negative.yaml:4:19", "parallelism.tp", "got '-1'"}},
      {"tp_not_a_number",
       {"check", "{bad}/tp_not_a_number.yaml"},
       {"parallelism.tp", "got 'eight'"}},
      {"pp_zero", {"check", "{bad}/pp_zero.yaml"}, {"parallelism.pp", "got '0'"}},
      {"size_without_unit",
       {"check", "{bad}/bucket_without_unit.yaml"},
       {"training.grad_bucket", "'25000000' has no unit"}},
      {"size_with_bad_unit",
       {"check", "{bad}/bucket_bad_unit.yaml"},
       {"training.grad_bucket", "unknown size unit 'parsecs'"}},
      {"absurdly_large_batch",
       {"check", "{bad}/absurd_batch.yaml"},
       {"training.global_batch", "too large"}},
      {"batch_not_divisible", {"check", "{bad}/batch_not_divisible.yaml"}, {"global_batch", "7"}},
      {"bad_schedule",
       {"check", "{bad}/bad_schedule.yaml"},
       {"parallelism.schedule", "did you mean '1f1b'"}},
      {"layout_world_mismatch",
       {"check", "{bad}/layout_world_mismatch.yaml"},
       {"parallelism", "= 4 ranks", "8 accelerators"}},
      {"unknown_model",
       {"check", "{bad}/unknown_model.yaml"},
       {"model", "did you mean 'llama3-8b'"}},
      {"unknown_topology",
       {"check", "{bad}/unknown_topology.yaml"},
       {"topology", "unknown topology preset", "did you mean 'dgx-h100'"}},
      {"zero_bandwidth",
       {"check", "{bad}/zero_bandwidth.yaml"},
       {"zero_bandwidth.yaml:6:39", "topology.links[0].bandwidth", "a positive bandwidth"}},
      {"negative_latency",
       {"check", "{bad}/negative_latency.yaml"},
       {"topology.links[0].latency", "is negative"}},
      {"unknown_algorithm",
       {"check", "{bad}/unknown_algorithm.yaml"},
       {"network.algorithm", "did you mean 'ring'"}},
      {"zero_chunk", {"check", "{bad}/zero_chunk.yaml"}, {"network.chunk_size", "at least 1 B"}},
      {"idle_tolerance_too_large",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.idle_tolerance=0.7"},
       {"network.idle_tolerance", "a number from 0 to 0.5", "'0.7'"}},
      {"idle_tolerance_with_unit",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.idle_tolerance=5%"},
       {"network.idle_tolerance", "'5%'"}},
      {"pxn_not_a_bool",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.pxn=maybe"},
       {"network.pxn", "expected true or false", "'maybe'"}},
      {"link_aliases_not_a_bool",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.link_aliases=maybe"},
       {"network.link_aliases", "expected true or false", "'maybe'"}},
      {"bad_protocol",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.protocol=LL64"},
       {"network.protocol", "LL, LL128 or Simple", "'LL64'"}},
      {"ecmp_unknown",
       {"check", "{bad}/../good/minimal.yaml", "-o", "network.ecmp=adaptive"},
       {"network.ecmp", "fabric", "spray", "'adaptive'"}},
      {"multipath_unknown_class",
       {"check", "{bad}/../good/minimal.yaml", "-o",
        "topology={preset: dgx-h100, multipath: "
        "{nvlnk: spray}}"},
       {"no link class 'nvlnk'", "did you mean 'nvlink'"}},
      {"collective_library_unknown",
       {"check", "{bad}/../good/minimal.yaml", "-o",
        "topology={preset: dgx-h100, collective_library: rccl}"},
       {"collective_library", "'rccl'", "nccl", "hccl"}},
      // Limits of the compact operations (workloads/operation.hpp): 15 bits of layer, 8 of chunk.
      {"too_many_layers",
       {"check", "{bad}/../good/minimal.yaml", "-o", "model={preset: llama3-8b, layers: 40000}"},
       {"model.layers", "'40000'"}},
      {"too_many_model_chunks",
       {"check", "{bad}/../good/minimal.yaml", "-o", "parallelism.vpp=300"},
       {"parallelism.vpp", "from 1 to 256", "'300'"}},
      {"run_checks_the_same", {"run", "{bad}/tp_negative.yaml"}, {"parallelism.tp", "got '-1'"}},
      {"unwritable_report",
       {"run", "{bad}/../good/minimal.yaml", "--report", "/nonexistent/r.json"},
       {"/nonexistent/r.json"}},
      // Overrides.
      {"override_without_equals",
       {"check", "{bad}/missing_model.yaml", "-o", "model"},
       {"expected KEY.PATH=VALUE"}},
      {"override_through_scalar",
       {"check", "{bad}/missing_model.yaml", "-o", "topology.x=1"},
       {"-o topology.x=1", "is a single value"}},
      {"override_bad_yaml",
       {"check", "{bad}/missing_model.yaml", "-o", "model=[1"},
       {"-o model=[1", "not valid YAML"}},
      {"override_unknown_key",
       {"check", "{bad}/missing_topology.yaml", "-o", "topolgy=x"},
       {"command line (-o topolgy=x)", "did you mean 'topology'"}},
      // Found by mutation fuzzing (a fixed-seed campaign over every input kind).
      {"endless_device", {"check", "/dev/zero"}, {"'/dev/zero' is larger than 64 MiB"}},
      {"include_endless_device",
       {"check", "{bad}/../good/minimal.yaml", "-o", "model=!include /dev/zero"},
       {"!include", "'/dev/zero' is larger than 64 MiB"}},
      {"file_name_too_long",
       {"check", std::string(5000, 'x') + ".yaml"},
       {"cannot read 'xxxx", "File name too long"}},
      {"unknown_tag",
       {"check", "{bad}/unknown_tag.yaml"},
       {"unknown_tag.yaml:2:11", "topology", "unknown tag '!inlcude'"}},
      {"topology_spec_names_the_file",
       {"check", "{bad}/topology_spec_bad_param.yaml"},
       {"topology_spec_bad_param.yaml:2:11", "topology spec 'selene:nodes=0'", "got '0'"}},
      {"step_latency_too_large",
       {"check", "{bad}/step_latency_too_large.yaml"},
       {"network.step_latency", "at most 1 s", "got '1e6s'"}},
      {"nccl_version_too_old",
       {"check", "{bad}/nccl_version_too_old.yaml"},
       {"network.nccl", "an NCCL version from 2.20 on", "got '2.18'"}},
      {"trace_ranks_without_trace",
       {"run", "{bad}/../good/minimal.yaml", "--trace-ranks", "x"},
       {"--trace-ranks requires --trace"}},
      {"flows_directory", {"traffic", "-t", "dgx-h100", "--flows", "{bad}"}, {"is a directory"}},
      {"flows_endless_device",
       {"traffic", "-t", "dgx-h100", "--flows", "/dev/zero"},
       {"/dev/zero: the flows file is larger than 64 MiB"}},
      {"flows_total_overflow",
       {"traffic", "-t", "dgx-h100", "--flows", "{bad}/flows_total_overflow.csv"},
       {"flows_total_overflow.csv:4", "bytes '1'", "add up to more than"}},
      {"flows_beyond_clock",
       {"traffic", "-t", "dgx-h100", "--flows", "{bad}/flows_beyond_clock.csv"},
       {"flows_beyond_clock.csv: simulated time runs out", "is a size or a start time too large?"}},
      {"pattern_total_overflow",
       {"traffic", "-t", "dgx-h100", "-p", "alltoall", "-b", "4000PiB"},
       {"alltoall over 8 ranks", "56 flows of 4000 PiB", "add up to more than"}},
      {"traffic_bytes_without_unit",
       {"traffic", "-t", "dgx-h100", "-p", "ring", "-b", "64"},
       {"--bytes '64'", "has no unit"}},
      {"idle_tolerance_nan",
       {"traffic", "-t", "dgx-h100", "-p", "ring", "--idle-tolerance", "nan"},
       {"-o network.idle_tolerance=nan", "network.idle_tolerance", "a number from 0 to 0.5"}},
      // fuzz_cli (session 13): a size whose plan overflowed 2^63 bytes (an internal error).
      {"collective_size_beyond_a_pebibyte",
       {"collective", "-t", "dgx-a100", "-s", "9223372036854775807B"},
       {"--sizes '9223372036854775807B'", "at most 1 PiB"}},
      {"collective_zero_chunk",
       {"collective", "-t", "dgx-h100", "--chunk-size", "0B"},
       {"network.chunk_size", "a size of at least", "'0B'"}},
      {"collective_chunk_names_option",
       {"collective", "-t", "dgx-h100", "--chunk-size", "-1B"},
       {"-o network.chunk_size=-1B", "network.chunk_size", "is negative"}},
      {"collective_too_many_channels",
       {"collective", "-t", "dgx-h100", "--channels", "1000000"},
       {"--channels", "1000000", "not in range 0 to 1024"}},
      {"collective_step_latency_too_large",
       {"collective", "-t", "dgx-h100", "--step-latency", "1e6s"},
       {"network.step_latency", "a time of at most 1 s", "'1e6s'"}},
      {"collective_bad_proto",
       {"collective", "-t", "dgx-h100", "--proto", "fast"},
       {"network.protocol", "auto, off, LL, LL128 or Simple", "'fast'"}},
      {"collective_bad_nccl_version",
       {"collective", "-t", "dgx-h100", "--nccl", "2.23.x"},
       {"network.nccl", "an NCCL version from 2.20 on", "'2.23.x'"}},
      {"collective_pat_needs_one_gpu_per_node",
       {"collective", "-t", "dgx-h100", "--op", "allgather", "--algo", "pat", "-s", "1MiB"},
       {"one member per scale-up domain"}},
      {"collective_proto_nvls_cannot_run",
       {"collective", "-t", "dgx-h100", "--algo", "in-switch", "--proto", "LL", "-s", "1MiB"},
       {"protocol LL does not run with in-switch"}},
      {"collective_one_rank",
       {"collective", "-t", "dgx-h100", "-n", "1"},
       {"--ranks '1'", "at least 2 ranks"}},
      {"collective_beyond_clock",
       // (A collective is at most 1 PiB: a slow fabric runs past the clock.)
       {"collective", "-t", "cluster:nodes=2,nic_speed=1Mbps", "-a", "ring", "-s", "1PiB"},
       {"simulated time runs out"}},
      {"matrix_row_overflow",
       {"collective", "-t", "dgx-h100", "-n", "2", "--op", "alltoallv", "--matrix",
        "{bad}/matrix_row_overflow.csv"},
       {"matrix_row_overflow.csv:2", "row 0", "add up to more than"}},
      {"graph_to_full_disk",
       {"topo", "dgx-h100", "--graphml", "/dev/full"},
       {"writing '/dev/full' failed (disk full?)"}},
      {"compare_csv_to_full_disk",
       {"compare", "{bad}/../good/pipeline.yaml", "--topology", "dgx-a100", "--csv", "/dev/full"},
       {"writing '/dev/full' failed"}},
      {"missing_topology_file",
       {"check", "{bad}/missing_topology_file.yaml"},
       {"missing_topology_file.yaml:2:11: topology: cannot read", "nowhere.yaml", "no such file"}},
      {"missing_kernel_table",
       {"check", "{bad}/missing_kernel_table.yaml"},
       {"missing_kernel_table.yaml:6:39: compute.kernel_times: cannot read", "no such file"}},
      {"bandwidth_below_a_byte_a_second",
       {"topo", "fat-tree:hosts=4,nic_speed=1e-30Gbps"},
       {"nic_speed", "'1e-30Gbps' is too small (the least is 1 B/s"}},
      {"validation_case_names_itself",
       {"validate", "--cases", "{bad}/validation_bad_algo.yaml", "-o", "-"},
       {"validation_bad_algo.yaml:11:9", "tables[0].cases[0]", "'rign'"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputTest, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// Duplicate keys were found by comparing each key with every earlier one: a map of 100,000 keys
// took 36 s in the ASan build. 200,000 keys and a duplicate at the end must be refused at once.
TEST(BadInput, DuplicateKeyInAHugeMapIsFoundQuickly) {
  const auto path = std::filesystem::temp_directory_path() / "stepsim_huge_map.yaml";
  {
    std::ofstream file(path);
    file << "model:\n";
    for (int i = 0; i < 200'000; ++i)
      file << "  k" << i << ": 1\n";
    file << "  k7: 2\n";
  }
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  const int code = cli::run({"check", path.string()}, out, err);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::filesystem::remove(path);
  EXPECT_EQ(code, 2);
  // About a second in the ASan build; the pairwise comparison would take about four times 36 s.
  EXPECT_LT(took.count(), 60.0);
  EXPECT_NE(err.str().find("duplicate key 'k7' (first given at line 9)"), std::string::npos)
      << err.str();
}

// "Did you mean" compared a bad value with every choice by edit distance, in time proportional to
// the value's length: a model name of 30 million characters took 20 s in the release build.
TEST(BadInput, AHugeUnknownNameIsRefusedQuickly) {
  const auto path = std::filesystem::temp_directory_path() / "stepsim_huge_name.yaml";
  std::ofstream(path) << "topology: dgx-h100\nmodel: " << std::string(10'000'000, 'x') << "\n"
                      << "parallelism: {tp: 8}\ntraining: {seq_len: 8192, global_batch: 8}\n"
                      << "compute: {device: h100}\n";
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  const int code = cli::run({"check", path.string()}, out, err);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::filesystem::remove(path);
  EXPECT_EQ(code, 2);
  EXPECT_LT(took.count(), 10.0);  // under a second in the ASan build
  EXPECT_NE(err.str().find("model: expected one of"), std::string::npos) << err.str();
  EXPECT_LT(err.str().size(), 2000u) << "the value is shown cut short";
}

}  // namespace
}  // namespace stepsim
