"""Where a decode step's time goes: CPU time per token of a stateful LLM in irrun, optionally under cProfile.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/decode_profile.py \
        /tmp/irrun-llm-bench/int4-stateful/openvino_model.xml [--max-memory 654M] [--steps 8] [--profile 25]

Prints the CPU time (time.process_time, so other processes on the machine count less) of the prefill and of
each decode step, their median, and with `--profile N` the N functions with the most own time over the decode
steps. `--fresh-plans` makes every step build its plan from scratch (irrun.engine.runtime.PLAN_REUSE = False), for
comparing with plan reuse.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def feeds(tokens, position):
    count = len(tokens)
    return {"input_ids": np.asarray(tokens, np.int64)[None],
            "attention_mask": np.ones((1, position + count), np.int64),
            "position_ids": np.arange(position, position + count, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, np.int32)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--max-memory", default=None)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--profile", type=int, default=0, help="show the N functions with the most own time")
    parser.add_argument("--fresh-plans", action="store_true", help="build every step's plan from scratch")
    args = parser.parse_args()
    import irrun
    from irrun.ops.budget import parse_size
    if args.fresh_plans:
        irrun.engine.runtime.PLAN_REUSE = False
    started = time.process_time()
    model = irrun.load(args.model, max_memory=parse_size(args.max_memory) if args.max_memory else None)
    print(f"load {time.process_time() - started:.2f} s CPU")
    session = model.session()
    started = time.process_time()
    outputs = session.run(feeds(list(range(1, args.prompt + 1)), 0))
    print(f"prefill {time.process_time() - started:.3f} s CPU")
    position, times = args.prompt, []
    profiler = cProfile.Profile() if args.profile else None
    for _ in range(args.steps):
        token = int(np.argmax(outputs["logits"][0, -1]))
        started = time.process_time()
        if profiler:
            profiler.enable()
        outputs = session.run(feeds([token], position))
        if profiler:
            profiler.disable()
        times.append(time.process_time() - started)
        position += 1
    print("decode steps (s CPU):", " ".join(f"{t:.3f}" for t in times))
    print(f"decode median {np.median(times):.3f} s CPU per token")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
