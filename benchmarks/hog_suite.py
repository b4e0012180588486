"""The whole test suite, several times in a row, with a CPU hog on every core: does anything flake?

Run ``python benchmarks/hog_suite.py`` from the repository root (with the venv active). It starts
one busy-loop process per core (``--hogs``, default: every core), runs the README's suite command
(``python -m pytest -q -n 2 -p no:cacheprovider``, or the words after ``--``) ``--runs`` times in a
row (default 3), stops the hogs (by their own process ids) and prints one table row per run:
start and end (UTC), duration, passed / failed / errors / skipped, the 1-minute load average at the
start and the end, and the mean and the peak of samples taken every 15 s while the run ran.
Each run's output is kept in ``--logs`` (default ``hog_suite_logs/`` under the system temp dir);
the failures of a run are printed after the table. ``--stop-on-failure`` stops after the first
run that failed (to look at it while the machine is as it was). ``--quick`` runs one fast subset
(tests/plugin and tests/docs) once, to try the script itself.

Why: issue 24's "a suite that never flakes" asks for the proof that the socket and thread tests
wait on state, never on wall time, and retry where a real client would: three whole runs in a row
under a hog on both cores, 0 failures. The exit status is 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
QUICK = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
         "tests/plugin", "tests/docs"]
HOG = "while True: pass"


@dataclass
class Run:
    """One run of the suite: its times, its counts, the load it ran under."""

    number: int
    start: datetime
    end: datetime | None = None
    counts: dict[str, int] = field(default_factory=dict)
    load_start: float = 0.0
    load_end: float = 0.0
    loads: list[float] = field(default_factory=list)
    returncode: int | None = None
    failures: list[str] = field(default_factory=list)
    log: Path | None = None

    @property
    def seconds(self) -> float:
        return ((self.end or self.start) - self.start).total_seconds()

    @property
    def clean(self) -> bool:
        return (self.returncode == 0 and not self.counts.get("failed")
                and not self.counts.get("errors") and not self.counts.get("error"))


def load1() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def start_hogs(n: int) -> list[subprocess.Popen]:
    """``n`` busy loops at normal priority, each its own process."""
    return [subprocess.Popen([sys.executable, "-c", HOG], stdin=subprocess.DEVNULL)
            for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    """Stop exactly the processes this script started, by their ids."""
    for hog in hogs:
        if hog.poll() is None:
            hog.kill()
    for hog in hogs:
        hog.wait(timeout=30)


_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected|warnings?)")
_FAILED = re.compile(r"^(FAILED|ERROR) (\S+)")


def summarize(text: str) -> tuple[dict[str, int], list[str]]:
    """pytest's closing counts and the ids of the tests that failed or errored."""
    counts: dict[str, int] = {}
    for line in reversed(text.splitlines()):
        found = _COUNT.findall(line)
        if found and (" in " in line or "passed" in line or "failed" in line):
            for number, word in found:
                word = {"error": "errors", "warning": "warnings"}.get(word, word)
                counts[word] = int(number)
            break
    failures = [f"{m.group(1)} {m.group(2)}" for line in text.splitlines()
                if (m := _FAILED.match(line))]
    return counts, failures


def run_once(number: int, command: list[str], logs: Path, sample_every: float) -> Run:
    """One run of ``command``, its output to a log file, the load sampled while it runs."""
    run = Run(number, datetime.now(timezone.utc), load_start=load1())
    run.log = logs / f"run{number}.log"
    done = threading.Event()

    def sample() -> None:
        while not done.wait(sample_every):
            run.loads.append(load1())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with open(run.log, "w") as out:
        # its own session, so an interrupted run stops the suite's workers with it (its process
        # group, which this script made), and nothing else
        suite = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            run.returncode = suite.wait()
        finally:
            if suite.poll() is None:
                os.killpg(suite.pid, signal.SIGKILL)
                suite.wait()
            try:  # whatever the run left behind in its group (a server a failed test started)
                os.killpg(suite.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    done.set()
    sampler.join()
    run.end = datetime.now(timezone.utc)
    run.load_end = load1()
    run.counts, run.failures = summarize(run.log.read_text(errors="replace"))
    return run


def commit() -> str:
    """This checkout's commit; for an exported tree (``git archive``) without ``.git``, the
    ``HOG_SUITE_COMMIT`` environment variable names it."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("HOG_SUITE_COMMIT", "?")


def table(runs: list[Run], hogs: int) -> str:
    """A markdown table, one row per run."""
    lines = [f"commit {commit()}, {os.cpu_count()} cores, {hogs} hog process(es)", "",
             "| run | start (UTC) | end | duration | passed | failed | errors | skipped "
             "| load 1-min start / end | mean / peak while running |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in runs:
        mean = sum(r.loads) / len(r.loads) if r.loads else r.load_start
        peak = max(r.loads, default=r.load_start)
        c = r.counts
        lines.append(
            f"| {r.number} | {r.start:%Y-%m-%d %H:%M} | {(r.end or r.start):%H:%M} "
            f"| {r.seconds / 60:.1f} min | {c.get('passed', 0):,} | {c.get('failed', 0)} "
            f"| {c.get('errors', 0)} | {c.get('skipped', 0)} "
            f"| {r.load_start:.1f} / {r.load_end:.1f} | {mean:.1f} / {peak:.1f} |")
    flaky = sum(not r.clean for r in runs)
    lines += ["", f"{len(runs)} run(s), {flaky} with a failure"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--logs", type=Path,
                        default=Path(tempfile.gettempdir()) / "hog_suite_logs")
    parser.add_argument("--sample-every", type=float, default=15.0)
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument("--quick", action="store_true", help="one run of a fast subset")
    parser.add_argument("command", nargs="*", help="after --: the suite command to run instead")
    args = parser.parse_args(argv)
    command = args.command or (QUICK if args.quick else SUITE)
    runs_wanted = 1 if args.quick else args.runs
    args.logs.mkdir(parents=True, exist_ok=True)

    # a SIGTERM stops the script as Ctrl-C does: the finally below stops the hogs and the suite
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    hogs = start_hogs(args.hogs)
    print(f"hogs: {[h.pid for h in hogs]}; logs in {args.logs}; command: {' '.join(command)}",
          flush=True)
    runs: list[Run] = []
    try:
        for number in range(1, runs_wanted + 1):
            run = run_once(number, command, args.logs, args.sample_every)
            runs.append(run)
            print(f"run {number}: {run.seconds / 60:.1f} min, {run.counts}, "
                  f"load {run.load_start:.1f} -> {run.load_end:.1f}", flush=True)
            if not run.clean and args.stop_on_failure:
                break
    finally:
        stop_hogs(hogs)
    print()
    print(table(runs, args.hogs))
    for r in runs:
        if r.failures:
            print(f"\nrun {r.number} ({r.log}):")
            print("\n".join(f"  {f}" for f in r.failures))
    return 0 if runs and all(r.clean for r in runs) and len(runs) == runs_wanted else 1


if __name__ == "__main__":
    sys.exit(main())
