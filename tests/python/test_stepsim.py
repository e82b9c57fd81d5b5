"""The Python module `stepsim` (sim/python, docs/python.md) against the command line: the same
results, the same error messages (and the file, key and value they name as attributes); a dict and
a YAML-text scenario; two simulations in two threads, with the GIL released while they run.

Run by ctest (label `python`) with Debian's python3, PYTHONPATH=<build>/python, and STEPSIM (the
program) and STEPSIM_SOURCE_DIR (the repository) in the environment.
"""
import json
import os
import subprocess
import tempfile
import threading
import time
import unittest

import stepsim

SOURCE = os.environ["STEPSIM_SOURCE_DIR"]
PROGRAM = os.environ["STEPSIM"]
PIPELINE = os.path.join(SOURCE, "tests/inputs/good/pipeline.yaml")
QUICKSTART = os.path.join(SOURCE, "examples/quickstart.yaml")


def cli(*args):
    return subprocess.run([PROGRAM, *args], capture_output=True, text=True, cwd=SOURCE)


class RunTest(unittest.TestCase):
    def test_report_equals_the_command_lines(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "report.json")
            result = cli("run", PIPELINE, "-o", "parallelism.pp=1", "-o", "parallelism.dp=4",
                         "--report", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                expected = json.load(f)
        report = stepsim.run(PIPELINE, overrides={"parallelism.pp": 1, "parallelism.dp": 4})
        self.assertEqual(report, expected)
        self.assertEqual(list(report), list(expected))  # the same keys in the same order
        self.assertGreater(report["step_time_s"], 0)

    def test_bad_input_raises_with_the_command_lines_message(self):
        result = cli("run", QUICKSTART, "-o", "parallelism.tp=3")
        self.assertEqual(result.returncode, 2)
        message = result.stderr.strip().removeprefix("stepsim: error: ")
        with self.assertRaises(stepsim.StepsimError) as raised:
            stepsim.run(QUICKSTART, overrides={"parallelism.tp": 3})
        self.assertEqual(str(raised.exception), message)
        self.assertIsInstance(raised.exception, ValueError)
        with self.assertRaises(stepsim.StepsimError) as missing:
            stepsim.run("/nonexistent/scenario.yaml")
        self.assertIn("/nonexistent/scenario.yaml", str(missing.exception))

    def test_a_dict_scenario_gives_the_files_figures(self):
        scenario = {
            "name": "pipeline",
            "topology": "dgx-h100",
            "model": {"preset": "llama3-8b", "layers": 4},
            "parallelism": {"tp": 2, "pp": 2, "dp": 2, "sp": True, "zero": 1},
            "training": {"seq_len": 2048, "micro_batch": 1, "global_batch": 8},
            "compute": {"device": "h100"},
        }
        from_dict = stepsim.run(scenario)
        from_file = stepsim.run(PIPELINE)
        for key in ("step_time_ps", "breakdown", "communication", "busiest_links", "memory"):
            self.assertEqual(from_dict[key], from_file[key], key)
        with self.assertRaises(stepsim.StepsimError) as bad:
            stepsim.run(dict(scenario, parallelism={"tp": 3, "pp": 2, "dp": 2}))
        self.assertIn("tp", str(bad.exception))

    def test_errors_carry_file_key_and_value(self):
        with self.assertRaises(stepsim.StepsimError) as raised:
            stepsim.run(QUICKSTART, overrides={"parallelism.tp": "banana"})
        self.assertEqual(raised.exception.file, "command line (-o parallelism.tp=banana)")
        self.assertEqual((raised.exception.line, raised.exception.column), (1, 1))
        self.assertEqual(raised.exception.key, "parallelism.tp")
        self.assertEqual(raised.exception.value, "banana")
        with self.assertRaises(stepsim.StepsimError) as bad_file:
            stepsim.run(os.path.join(SOURCE, "tests/inputs/bad/unknown_algorithm.yaml"))
        self.assertTrue(bad_file.exception.file.endswith("unknown_algorithm.yaml"))
        self.assertEqual(bad_file.exception.key, "network.algorithm")
        self.assertIsNotNone(bad_file.exception.line)

    def test_a_yaml_text_scenario_gives_the_files_figures(self):
        with open(PIPELINE) as f:
            text = f.read()
        self.assertIn("\n", text)
        before = os.getcwd()
        os.chdir(os.path.dirname(PIPELINE))  # its relative file names, if any
        try:
            from_text = stepsim.run(text)
        finally:
            os.chdir(before)
        self.assertEqual(from_text["step_time_ps"], stepsim.run(PIPELINE)["step_time_ps"])

    def test_html_and_trace_are_written(self):
        with tempfile.TemporaryDirectory() as d:
            html = os.path.join(d, "r.html")
            trace = os.path.join(d, "t.json")
            stepsim.run(PIPELINE, html=html, trace=trace)
            with open(html) as f:
                self.assertIn('data-chart="timeline"', f.read())
            with open(trace) as f:
                self.assertIn("traceEvents", f.read(200))


class ThreadsTest(unittest.TestCase):
    def test_two_threads_simulate_at_once_with_the_same_results(self):
        alone = [stepsim.run(PIPELINE), stepsim.run(QUICKSTART)]
        results = [None, None]

        def work(i, path):
            results[i] = stepsim.run(path)

        threads = [threading.Thread(target=work, args=(0, PIPELINE)),
                   threading.Thread(target=work, args=(1, QUICKSTART))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, alone)

    def test_the_gil_is_released_while_simulating(self):
        # A Python thread wakes every millisecond and counts, needing the GIL each time, while
        # the main thread simulates. With the GIL released it counts about once a millisecond;
        # with the GIL held it cannot run at all (measured with sorted() of 10^6 floats, which
        # holds the GIL: 2 counts in 0.35 s, against 33 in the 0.036 s of a quickstart run).
        ticks = [0]
        running = [True]

        def count():
            while running[0]:
                time.sleep(0.001)
                ticks[0] += 1

        counter = threading.Thread(target=count)
        counter.start()
        time.sleep(0.01)
        before = ticks[0]
        started = time.monotonic()
        for _ in range(5):
            stepsim.run(QUICKSTART)
        elapsed = time.monotonic() - started
        during = ticks[0] - before
        running[0] = False
        counter.join()
        self.assertGreater(during / elapsed, 100,
                           f"{during} counts in {elapsed:.3f} s: the GIL was held while simulating")


class OtherCommandsTest(unittest.TestCase):
    def test_serve_equals_the_command_lines_report(self):
        decode = os.path.join(SOURCE, "examples/llama3-70b-decode-h100.yaml")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "serve.json")
            result = cli("serve", decode, "--tpot", "30ms", "--report", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                expected = json.load(f)
        report = stepsim.serve(decode, tpot="30ms")
        self.assertEqual(report, expected)
        self.assertGreater(report["tpot_s"], 0)
        with self.assertRaises(stepsim.StepsimError) as bad:
            stepsim.serve(decode, tpot="-1ms")
        self.assertIn("--tpot '-1ms'", str(bad.exception))

    def test_collective_network_settings_are_the_scenarios_keys(self):
        result = cli("collective", "-t", "dgx-h100", "-n", "8", "-s", "1MiB", "--links",
                     "line-rate", "--proto", "LL128", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        expected = json.loads(result.stdout)
        self.assertEqual(stepsim.collective("dgx-h100", ranks=8, sizes="1MiB", links="line-rate",
                                            proto="LL128"), expected)
        self.assertEqual(stepsim.collective("dgx-h100", ranks=8, sizes="1MiB",
                                            network={"calibration": "line-rate",
                                                     "protocol": "LL128"}), expected)
        with self.assertRaises(stepsim.StepsimError) as bad:
            stepsim.collective("dgx-h100", links="fast")
        self.assertEqual(bad.exception.key, "network.calibration")
        self.assertEqual(bad.exception.value, "fast")


    def test_collective_equals_the_command_lines_json(self):
        result = cli("collective", "-t", "dgx-h100", "-n", "8", "-s", "1MiB:4MiB", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(stepsim.collective("dgx-h100", ranks="8", sizes="1MiB:4MiB"),
                         json.loads(result.stdout))
        with self.assertRaises(stepsim.StepsimError) as bad:
            stepsim.collective("dgx-h100", op="allsum")
        self.assertIn("allsum", str(bad.exception))

    def test_topology_equals_the_command_lines_json(self):
        result = cli("topo", "dgx-h100", "--json", "--no-reach")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(stepsim.topology("dgx-h100", reach=False), json.loads(result.stdout))

    def test_compare_equals_the_command_lines_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "c.json")
            result = cli("compare", PIPELINE, "--variant", "parallelism.pp=1 parallelism.dp=4",
                         "--variant", "parallelism.tp=1 parallelism.dp=4", "--json", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                expected = json.load(f)
        rows = stepsim.compare(PIPELINE, variants=["parallelism.pp=1 parallelism.dp=4",
                                                   {"parallelism.tp": 1, "parallelism.dp": 4}])
        self.assertEqual([r["report"] for r in rows], [e["report"] for e in expected])
        self.assertEqual(rows[0]["variant"], expected[0]["variant"])

    def test_search_equals_the_command_lines_json(self):
        dense = os.path.join(SOURCE, "tests/search/dense.yaml")
        space = ["tp=2,4", "pp=1,2", "vpp=1", "zero=1", "micro_batch=1", "recompute=selective"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.json")
            args = ["search", dense, "-j", "2", "--json", path]
            for item in space:
                args += ["--space", item]
            result = cli(*args)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                expected = json.load(f)
            best = os.path.join(d, "best.yaml")
            found = stepsim.search(dense, space={"tp": [2, 4], "pp": [1, 2], "vpp": 1,
                                                 "zero": 1, "micro_batch": 1,
                                                 "recompute": "selective"},
                                   jobs=1, write_best=best)
            self.assertEqual(found, expected)  # whatever the thread count
            # The best layout, as a scenario, runs to the step time the search reported.
            self.assertAlmostEqual(stepsim.run(best)["step_time_s"],
                                   found["results"][0]["step_time_s"], places=12)
        with self.assertRaises(stepsim.StepsimError) as bad:
            stepsim.search(dense, space={"tp": []})
        self.assertIn("tp", str(bad.exception))


if __name__ == "__main__":
    unittest.main()
