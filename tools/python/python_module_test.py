"""`import kvsim` against the command line: the same replay gives the same summary and request columns."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from xml.sax.saxutils import quoteattr

try:
    import numpy  # noqa: F401  (the module's columns are numpy arrays)
    import kvsim
    HAVE_MODULE = getattr(kvsim, "available", False)
    WHY = "" if HAVE_MODULE else "the module was built without pybind11-dev/python3-dev"
except ImportError as error:
    HAVE_MODULE, WHY = False, "cannot import numpy or kvsim: %s" % error

CLI = os.environ.get("KVSIM_CLI", "bazel-bin/tools/kvsim")
TRACE = "traces/data/azure_code_2023.csv"
CONFIG = "workload { max_requests: 300 }\nslo { ttft_ms: 2000 tpot_ms: 100 }\n"


@unittest.skipUnless(HAVE_MODULE, WHY)
class ReplayTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.config = os.path.join(self.dir, "c.textproto")
        with open(self.config, "w") as f:
            f.write(CONFIG)

    def cli(self, *args):
        return subprocess.run([CLI] + list(args), capture_output=True, text=True)

    def test_summary_and_every_request_column_equal_the_command_line(self):
        out = os.path.join(self.dir, "replay")
        done = self.cli("replay", "--config=" + self.config, "--trace=" + TRACE, "--out=" + out)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            cli_summary = json.load(f)
        with open(os.path.join(out, "requests.csv")) as f:
            cli_csv = f.read()
        for config in (self.config, CONFIG):  # a file path, then the text itself
            r = kvsim.replay(TRACE, config=config)
            self.assertEqual(json.loads(r["summary_json"])["summary"], cli_summary["summary"])
            self.assertEqual(r["summary"], cli_summary["summary"])
            self.assertEqual(r["requests_csv"], cli_csv)
            rows = list(csv.DictReader(io.StringIO(cli_csv)))
            self.assertEqual(len(rows), 300)
            compared = 0
            for column, values in r["requests"].items():
                if column not in rows[0]:
                    continue
                compared += 1
                as_text = [str(int(v)) if isinstance(v, bool) else str(v) for v in values.tolist()]
                self.assertEqual(as_text, [row[column] for row in rows], column)
            self.assertGreaterEqual(compared, 5)

    def test_dict_config_equals_text_config(self):
        a = kvsim.replay(TRACE, config=CONFIG)
        b = kvsim.replay(TRACE, config={"workload": {"maxRequests": 300}, "slo": {"ttftMs": 2000, "tpotMs": 100}})
        self.assertEqual(a["summary"], b["summary"])

    def test_bad_config_raises_the_command_lines_message(self):
        bad = os.path.join(self.dir, "bad.textproto")
        with open(bad, "w") as f:
            f.write("scheduler { max_num_batched_tokens: -5 }\n")
        done = self.cli("replay", "--config=" + bad, "--trace=" + TRACE)
        self.assertEqual(done.returncode, 2)
        with self.assertRaises(ValueError) as raised:
            kvsim.replay(TRACE, config=bad)
        self.assertIn(str(raised.exception), done.stderr)
        self.assertTrue(str(raised.exception))

    def test_cache_and_trace_reader_equal_the_command_line(self):
        trace = "traces/data/mooncake_synthetic.jsonl"
        rows = kvsim.cache(trace, ["lru", "s3fifo"], [8192])
        done = self.cli("cache", "--trace=" + trace, "--policy=lru,s3fifo", "--capacity_blocks=8192", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        cli_rows = json.loads(done.stdout)
        self.assertEqual(len(rows), len(cli_rows))
        for mine, theirs in zip(rows, cli_rows):
            for key in ("policy", "capacity_blocks", "accesses", "hits", "prefix_hits", "evictions", "hit_ratio"):
                self.assertEqual(mine[key], theirs[key], key)
        self.assertGreater(rows[0]["hits"], 0)
        curve = kvsim.mrc(trace, sizes=[8192])
        self.assertEqual(curve["at"]["hit_ratio"][0], rows[0]["hit_ratio"])  # one-pass LRU = LRU replay
        self.assertTrue((curve["steps"]["hit_ratio"][1:] >= curve["steps"]["hit_ratio"][:-1]).all())
        requests = kvsim.read_trace(trace)
        self.assertEqual(len(requests), cli_rows[0]["requests"])
        self.assertEqual(sum(len(r["block_hashes"]) for r in requests), cli_rows[0]["accesses"])
        with self.assertRaises(ValueError) as raised:
            kvsim.read_trace(os.path.join(self.dir, "missing.jsonl"))
        self.assertIn("missing.jsonl", str(raised.exception))

@unittest.skipUnless(HAVE_MODULE and shutil.which("nm") and shutil.which("readelf"), WHY or "no nm/readelf")
class LinkTest(unittest.TestCase):
    """The command line links Abseil/Protobuf/zstd statically, the module their shared libraries: one copy each."""

    def test_module_needs_the_shared_libraries_and_defines_none_of_their_symbols(self):
        module = kvsim.__file__
        needed = subprocess.run(["readelf", "-d", module], capture_output=True, text=True, check=True).stdout
        libraries = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
        for prefix in ("libabsl_status.so", "libprotobuf.so", "libzstd.so"):
            self.assertTrue(any(lib.startswith(prefix) for lib in libraries), (prefix, libraries))

        def strong_symbols(path):
            out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True)
            return {f[2] for f in (line.split() for line in out.stdout.splitlines()) if len(f) == 3 and f[1] in "TDBR"}

        mine = strong_symbols(module)
        self.assertIn("PyInit_kvsim", mine)
        lib_dir = "/usr/lib/x86_64-linux-gnu"
        theirs = set()
        for lib in libraries:
            if lib.startswith(("libabsl_", "libprotobuf", "libzstd")) and os.path.exists(os.path.join(lib_dir, lib)):
                theirs |= strong_symbols(os.path.join(lib_dir, lib))
        self.assertGreater(len(theirs), 1000)
        self.assertEqual(sorted(mine & theirs)[:10], [])


def main():
    """Runs the tests and writes a JUnit report to $XML_OUTPUT_FILE (skips counted as skips by ./test.sh)."""
    result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[__name__]))
    xml_path = os.environ.get("XML_OUTPUT_FILE")
    if xml_path:
        outcome = {}
        for case, text in result.failures:
            outcome[case.id()] = ("failure", text)
        for case, text in result.errors:
            outcome[case.id()] = ("error", text)
        for case, text in result.skipped:
            outcome[case.id()] = ("skipped", text)
        cases = [t for suite in unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]) for t in suite]
        lines = []
        for case in cases:
            kind, text = outcome.get(case.id(), ("", ""))
            name = quoteattr(case.id().split(".")[-1])
            if kind == "skipped":
                lines.append('<testcase name=%s status="run" result="skipped"><skipped message=%s/></testcase>' %
                             (name, quoteattr(text)))
            elif kind:
                lines.append('<testcase name=%s status="run"><%s message=%s/></testcase>' % (name, kind, quoteattr(text)))
            else:
                lines.append('<testcase name=%s status="run" result="completed"/>' % name)
        header = '<testsuites tests="%d" failures="%d" errors="%d">' % (
            len(cases), len(result.failures), len(result.errors))
        with open(xml_path, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n%s\n<testsuite name="python_module_test" tests="%d">\n'
                    '%s\n</testsuite>\n</testsuites>\n' % (header, len(cases), "\n".join(lines)))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
