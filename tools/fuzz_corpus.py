"""The test suite's fuzz corpus: the cases of its fuzz run that cover every branch of irrun the whole run covers.

The suite's fuzz run (tests/test_hostile.py) draws FUZZ_CASES mutations of the small models in models/, in
FUZZ_CHUNKS chunks that parallel test workers share. Most of those cases take branches others take too. This tool
runs them all under coverage.py (branch coverage of irrun/, one context per case) and keeps a small set of cases,
by their CPU time, that together take every branch the whole run takes, each branch in two cases where two take it
(greedy weighted set cover, twice). It writes them to CORPUS_FILE with a digest of each chunk's cases; the suite
runs the kept cases only, and when the mutations or the seeds change (the digests then differ) it fails and asks
for this tool to be run again:

    pip install coverage && python tools/fuzz_corpus.py --jobs 2

The long fuzz runs (tools/fuzz.py) still draw fresh random cases.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CORPUS_FILE = REPO / "tests" / "data" / "fuzz_corpus.json"
FUZZ_CASES = 2520
FUZZ_CHUNKS = 6
RANDOM_SEED = 20261121
# Seeds larger than this (Swin, Faster R-CNN: ten times the time per case) are left to tools/fuzz.py's long runs.
SEED_MAX_XML_BYTES = 200_000
# Each branch is kept in two cases (where two take it), so that a change to irrun that moves one case off a
# branch leaves it covered.
COVER_TIMES = 2


def small_model_seeds() -> list:
    return [seed for seed in fuzz.load_seeds([REPO / "models"]) if len(seed.xml) <= SEED_MAX_XML_BYTES]


def chunk_cases(chunk: int, seeds: list):
    """The chunk's cases in order: (case number, description, XML bytes, .bin bytes)."""
    rng = random.Random(RANDOM_SEED + chunk)
    for case in range(FUZZ_CASES // FUZZ_CHUNKS):
        seed = rng.choice(seeds)
        xml_bytes, bin_bytes, kind = fuzz.mutate(seed, rng)
        yield case, f"{kind} of {Path(seed.name).parent.name}", xml_bytes, bin_bytes


def inputs_rng(chunk: int, case: int) -> np.random.Generator:
    """The random inputs of one case, whichever cases ran before it."""
    return np.random.default_rng([RANDOM_SEED, chunk, case])


def chunk_digest(cases) -> str:
    """A digest of a chunk's cases (all of them, kept or not): it changes when the mutations or the seeds do."""
    digest = hashlib.sha256()
    for _, _, xml_bytes, bin_bytes in cases:
        digest.update(hashlib.sha256(xml_bytes).digest() + hashlib.sha256(bin_bytes).digest())
    return digest.hexdigest()[:16]


def _measure_chunk(chunk: int, folder: str) -> tuple[str, dict]:
    """Runs one chunk's cases under coverage, each in its own context; returns the data file and the CPU time
    of each case."""
    import coverage

    data_file = str(Path(folder) / f"coverage.{chunk}")
    work = Path(folder) / f"work{chunk}"
    work.mkdir()
    cov = coverage.Coverage(data_file=data_file, branch=True, source=[str(REPO / "irrun")])
    seconds = {}
    cov.start()
    try:
        for case, _, xml_bytes, bin_bytes in chunk_cases(chunk, small_model_seeds()):
            cov.switch_context(f"{chunk}:{case}")
            started = time.process_time()
            try:
                fuzz.run_case(xml_bytes, bin_bytes, work, inputs_rng(chunk, case))
            except Exception:  # noqa: BLE001 - a finding; the suite's run reports it
                pass
            seconds[f"{chunk}:{case}"] = time.process_time() - started
    finally:
        cov.stop()
        cov.save()
    return data_file, seconds


def branches_by_case(data_file: str) -> dict[str, set]:
    """context -> the (file, from line, to line) arcs it took, read from coverage.py's SQLite data file."""
    with sqlite3.connect(data_file) as db:
        contexts = dict(db.execute("select id, context from context"))
        taken: dict[str, set] = {}
        for context_id, file_id, start, end in db.execute("select context_id, file_id, fromno, tono from arc"):
            taken.setdefault(contexts[context_id], set()).add((file_id, start, end))
        paths = dict(db.execute("select id, path from file"))
    return {context: {(paths[f], a, b) for f, a, b in arcs} for context, arcs in taken.items()}


def cheapest_cover(taken: dict[str, set], seconds: dict[str, float], times: int) -> list[str]:
    """Cases that take every branch any case takes `times` times over (or as often as the cases take it), in
    `times` rounds: each round greedily adds, from the cases not chosen yet, the one taking the most branches
    the round still needs per second of its CPU time."""
    chosen: list[str] = []
    for _ in range(times):
        candidates = {case: arcs for case, arcs in taken.items() if case not in chosen}
        left = set().union(*candidates.values()) if candidates else set()
        while left:
            best = max(candidates, key=lambda c: len(candidates[c] & left) / max(seconds.get(c, 0.0), 1e-3))
            chosen.append(best)
            left -= candidates.pop(best)
    return chosen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes measuring chunks at once")
    parser.add_argument("--out", type=Path, default=CORPUS_FILE)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, ProcessPoolExecutor(args.jobs) as pool:
        measured = list(pool.map(_measure_chunk, range(FUZZ_CHUNKS), [folder] * FUZZ_CHUNKS))
        taken, seconds = {}, {}
        for data_file, chunk_seconds in measured:
            taken.update(branches_by_case(data_file))
            seconds.update(chunk_seconds)
    chosen = cheapest_cover(taken, seconds, COVER_TIMES)
    seeds = small_model_seeds()
    kept = [[] for _ in range(FUZZ_CHUNKS)]
    for context in chosen:  # "chunk:case"
        chunk, case = map(int, context.split(":"))
        kept[chunk].append(case)
    corpus = {
        "about": "written by tools/fuzz_corpus.py: the cases of tests/test_hostile.py's fuzz run that take every "
                 "branch of irrun its FUZZ_CASES cases take, each in COVER_TIMES cases where as many take it",
        "cover_times": COVER_TIMES,
        "fuzz_cases": FUZZ_CASES,
        "branches": len(set().union(*taken.values())),
        "cpu_seconds_all": round(sum(seconds.values()), 1),
        "cpu_seconds_kept": round(sum(seconds[c] for c in chosen), 1),
        "chunks": [{"digest": chunk_digest(chunk_cases(chunk, seeds)), "cases": sorted(cases)}
                   for chunk, cases in enumerate(kept)],
    }
    text = json.dumps(corpus, indent=1)
    text = re.sub(r"\[[\d,\s]*\]", lambda m: json.dumps(json.loads(m.group(0))), text)  # a chunk's cases on one line
    args.out.write_text(text + "\n")
    print(f"{len(chosen)} of {FUZZ_CASES} cases take all {corpus['branches']} branches {COVER_TIMES} times "
          f"({corpus['cpu_seconds_kept']} of {corpus['cpu_seconds_all']} s of CPU under coverage): {args.out}")


if __name__ == "__main__":
    main()
