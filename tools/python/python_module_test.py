"""`import kvsim` against the command line: the same replay gives the same summary and request columns."""
import csv
import io
import json
import os
import subprocess
import tempfile
import unittest

try:
    import kvsim
    HAVE_MODULE = getattr(kvsim, "available", False)
    WHY = "" if HAVE_MODULE else "the module was built without pybind11-dev/python3-dev"
except ImportError as error:
    HAVE_MODULE, WHY = False, "cannot import kvsim: %s" % error

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

if __name__ == "__main__":
    unittest.main()
