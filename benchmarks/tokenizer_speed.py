"""Tokenizing one 2,000-character string: irrun vs OpenVINO (CPU plugin with the openvino-tokenizers extension).

Run by hand (never part of the test suite):

    python benchmarks/tokenizer_speed.py [--repeat 20] [--chars 2000]

For every tokenizer IR of tests/data/tokenizers/*/default, the median process CPU time (robust to a shared,
loaded machine; both run one thread) of one call on a fresh string
of the battery's long text (a new string each call, so irrun's per-word cache of BPE/WordPiece/Unigram results
is warm only for the words already seen, as in real use), and of a call on a string seen before (cache hits),
each against OpenVINO's time on the same IR, one thread.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import irrun  # noqa: E402

DATA = ROOT / "tests" / "data" / "tokenizers"


def median_ms(fn, texts):
    times = []
    for text in texts:
        start = time.process_time()
        fn(text)
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--chars", type=int, default=2000)
    args = parser.parse_args()
    import openvino as ov
    import openvino_tokenizers

    core = ov.Core()
    core.add_extension(openvino_tokenizers._ext_path)
    print(f"{'tokenizer':<16} {'irrun new':>10} {'irrun seen':>11} {'openvino':>9} {'new/ov':>7} {'seen/ov':>8}")
    for folder in sorted(DATA.glob("*/default")):
        battery = json.loads((folder / "expected.json").read_text(encoding="utf-8"))["battery"]
        base = (battery[-1] * (args.chars // max(len(battery[-1]), 1) + 1))[:args.chars]
        # A different string each call: the words shift by one character per call.
        fresh = [(base[i:] + base[:i]) for i in range(1, args.repeat + 1)]
        xml = folder / "openvino_tokenizer.xml"
        model = irrun.load(xml)
        compiled = core.compile_model(str(xml), "CPU", {"INFERENCE_NUM_THREADS": "1"})
        request = compiled.create_infer_request()

        def run_irrun(text, model=model):
            model.run([np.array([text], dtype=object)])

        def run_openvino(text, request=request):
            request.infer([np.array([text])])

        run_irrun(base)
        run_openvino(base)
        new_ms = median_ms(run_irrun, fresh)
        seen_ms = median_ms(run_irrun, [base] * args.repeat)
        ov_ms = median_ms(run_openvino, fresh)
        print(f"{folder.parent.name:<16} {new_ms:>8.2f}ms {seen_ms:>9.2f}ms {ov_ms:>7.2f}ms "
              f"{new_ms / ov_ms:>6.1f}x {seen_ms / ov_ms:>7.1f}x")


if __name__ == "__main__":
    main()
