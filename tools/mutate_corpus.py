"""Differential recall of `irrun check` against OpenVINO's reader, on single mutations of real IRs.

Each mutant changes one thing in a valid IR from models/ or tests/data/llm/ (an attribute value, a boolean
flipped, a Const's offset, type or shape, a port's dim or precision, a layer's opset, an edge's source, or a
random edit from tools/fuzz.py). OpenVINO decides: `Core.read_model` then `validate_nodes_and_infer_types`
refuses it or not (run in a worker process, so a crash of OpenVINO is a verdict too). irrun decides with
`irrun.check`, in its default mode and with `openvino_compatible=True`. The summary gives both directions:
of the mutants OpenVINO refuses, how many irrun reports (recall), and of those it accepts, how many irrun
flags (the stricter rules; in compatible mode this must be none).

    python tools/mutate_corpus.py --cases 2000 --seed 1 --out /tmp/irrun-mutants
    python tools/mutate_corpus.py --cases 300 --keep-disagreements
    python tools/mutate_corpus.py --recheck /tmp/irrun-mutants     # the same mutants, today's irrun

Mutants live under --out (outside git); results.jsonl there has one line per mutant.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
import irrun  # noqa: E402
from fuzz import Seed, load_seeds, mutate as fuzz_mutate  # noqa: E402

SEED_DIRECTORIES = [ROOT / "models", ROOT / "tests" / "data" / "llm"]
ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64", "boolean",
                 "u4", "i4", "u1", "nf4", "f8e4m3", "f8e5m2", "f4e2m1", "f8e8m0", "u2", "u3", "u6", "string"]
PRECISIONS = ["FP32", "FP16", "BF16", "FP64", "I64", "I32", "I8", "U8", "BOOL", "U4", "I4", "U1", "dynamic"]
BYTES = {"f64": 8, "i64": 8, "u64": 8, "f32": 4, "i32": 4, "u32": 4, "f16": 2, "bf16": 2, "i16": 2, "u16": 2}


# ---------------------------------------------------------------- mutations

def _sites(pattern: str, text: str) -> list[re.Match]:
    return list(re.finditer(pattern, text))


def _replace(text: str, match: re.Match, group: int, value: str) -> str:
    return text[:match.start(group)] + value + text[match.end(group):]


def _number_variants(value: int) -> list[int]:
    return sorted({value + 1, value - 1, 0, -1, 2 * value, value + 4} - {value})


def _int_list_attr(text, rng):
    sites = [m for m in _sites(r'<data [^>]*?\b([\w-]+)="(-?\d+(?:,\s*-?\d+)*)"', text)
             if m.group(1) not in ("offset", "size")]
    if not sites:
        return None
    m = rng.choice(sites)
    parts = [int(p) for p in m.group(2).split(",")]
    i = rng.randrange(len(parts))
    parts[i] = rng.choice(_number_variants(parts[i]))
    return _replace(text, m, 2, ",".join(map(str, parts))), f"{m.group(1)} {m.group(2)} -> {parts}"


def _bool_flip(text, rng):
    sites = _sites(r'<data [^>]*?\b([\w-]+)="(true|false)"', text)
    if not sites:
        return None
    m = rng.choice(sites)
    new = "false" if m.group(2) == "true" else "true"
    return _replace(text, m, 2, new), f"{m.group(1)} {m.group(2)} -> {new}"


def _enum_attr(text, rng, vocabulary):
    sites = [m for m in _sites(r'<data [^>]*?\b([\w-]+)="([a-z_][\w-]*)"', text)
             if len(vocabulary.get(m.group(1), ())) > 1]
    if not sites:
        return None
    m = rng.choice(sites)
    new = rng.choice(sorted(vocabulary[m.group(1)] - {m.group(2)}))
    return _replace(text, m, 2, new), f"{m.group(1)} {m.group(2)} -> {new}"


def _const_offset(text, rng):
    sites = _sites(r'<data element_type="(\w+)" shape="[^"]*" offset="(\d+)"', text)
    if not sites:
        return None
    m = rng.choice(sites)
    step = BYTES.get(m.group(1), 1)
    offsets = [int(o.group(2)) for o in sites]
    new = rng.choice([int(m.group(2)) + k * step for k in (-4, -1, 1, 4)] + [rng.choice(offsets)])
    new = max(new, 0)
    return _replace(text, m, 2, str(new)), f"Const offset {m.group(2)} -> {new}"


def _const_field(text, rng):
    m = rng.choice(_sites(r'<data element_type="(\w+)" shape="([^"]*)"', text) or [None])
    if m is None:
        return None
    if rng.random() < 0.5:
        new = rng.choice(ELEMENT_TYPES)
        return _replace(text, m, 1, new), f"element_type {m.group(1)} -> {new}"
    dims = [d for d in m.group(2).split(",") if d]
    if dims and rng.random() < 0.7:
        i = rng.randrange(len(dims))
        if dims[i].isdigit():
            dims[i] = str(rng.choice(_number_variants(int(dims[i]))))
    else:
        dims = dims[:-1] if dims and rng.random() < 0.5 else dims + ["1"]
    return _replace(text, m, 2, ",".join(dims)), f"shape {m.group(2)} -> {','.join(dims)}"


def _port_dim(text, rng):
    sites = _sites(r"<dim>(-?\d+)</dim>", text)
    if not sites:
        return None
    m = rng.choice(sites)
    new = rng.choice(_number_variants(int(m.group(1))))
    return _replace(text, m, 1, str(new)), f"dim {m.group(1)} -> {new}"


def _precision(text, rng):
    sites = _sites(r'precision="(\w+)"', text)
    if not sites:
        return None
    m = rng.choice(sites)
    new = rng.choice([p for p in PRECISIONS if p != m.group(1)])
    return _replace(text, m, 1, new), f"precision {m.group(1)} -> {new}"


def _version(text, rng):
    sites = _sites(r'<layer [^>]*type="(\w+)" version="(opset\d+)"', text)
    if not sites:
        return None
    m = rng.choice(sites)
    new = f"opset{rng.randint(1, 16)}"
    return _replace(text, m, 2, new), f"{m.group(1)} {m.group(2)} -> {new}"


def _edge_source(text, rng):
    edges = _sites(r'<edge from-layer="(\d+)" from-port="(\d+)"', text)
    if not edges:
        return None
    m, other = rng.choice(edges), rng.choice(edges)
    return (text[:m.start(1)] + f'{other.group(1)}" from-port="{other.group(2)}' + text[m.end(2):],
            f"edge from {m.group(1)}:{m.group(2)} -> {other.group(1)}:{other.group(2)}")


def attribute_vocabulary(seeds: list[Seed]) -> dict[str, set[str]]:
    """Every word-like value each attribute name takes in the seeds: the alternatives for _enum_attr."""
    vocabulary: dict[str, set[str]] = {}
    for seed in seeds:
        for name, value in re.findall(r'\b([\w-]+)="([a-z_][\w-]*)"', seed.xml.decode(errors="replace")):
            if name not in ("name", "names", "type", "version", "element_type", "precision", "variable_id"):
                vocabulary.setdefault(name, set()).add(value)
    return vocabulary


def mutate(seed: Seed, rng: random.Random, vocabulary) -> tuple[bytes, bytes, str]:
    """One mutation of a seed: the new XML, the new .bin and what changed."""
    text = seed.xml.decode("utf-8")
    kinds = [_int_list_attr, _int_list_attr, _bool_flip, _enum_attr, _const_offset, _const_offset, _const_field,
             _port_dim, _port_dim, _precision, _version, _edge_source, None]
    for _ in range(20):
        kind = rng.choice(kinds)
        if kind is None:
            xml, blob, what = fuzz_mutate(seed, rng)
            return xml, blob, f"fuzz {what}"
        done = kind(text, rng, vocabulary) if kind is _enum_attr else kind(text, rng)
        if done is not None and done[0] != text:
            return done[0].encode(), seed.bin, f"{kind.__name__.lstrip('_')}: {done[1]}"
    return fuzz_mutate(seed, rng)[0], seed.bin, "fuzz"


# ---------------------------------------------------------------- verdicts

def openvino_worker() -> None:
    """Reads mutant paths on stdin; prints one JSON verdict per path: refused or not, and the first line."""
    import openvino as ov

    core = ov.Core()
    for line in sys.stdin:
        path = line.strip()
        try:
            model = core.read_model(path)
            model.validate_nodes_and_infer_types()
            verdict = {"refused": False, "message": ""}
        except Exception as exc:  # noqa: BLE001 - any refusal is the verdict
            lines = [part.strip() for part in str(exc).splitlines()
                     if part.strip() and not part.startswith("Exception from")]
            verdict = {"refused": True, "message": " | ".join(lines)[:400] or type(exc).__name__}
        print(json.dumps(verdict), flush=True)


class OpenVINO:
    """The worker process; restarted when OpenVINO crashes on a mutant (counted as a refusal)."""

    def __init__(self):
        self.process = None

    def verdict(self, path: Path) -> dict:
        if self.process is None:
            self.process = subprocess.Popen([sys.executable, __file__, "--openvino-worker"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True)
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.process = None
            return {"refused": True, "message": "OpenVINO crashed"}
        return json.loads(line)

    def close(self):
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()


def irrun_verdict(path: Path) -> dict:
    report = irrun.check(path)
    compatible = irrun.check(path, openvino_compatible=True)
    return {"errors": sorted({d.rule for d in report.errors}),
            "compatible_errors": sorted({d.rule for d in compatible.errors}),
            "first": report.lines()[0] if report.errors else ""}


# ---------------------------------------------------------------- the run

def write_mutant(directory: Path, seed: Seed, xml: bytes, blob: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    xml_path = directory / "model.xml"
    xml_path.write_bytes(xml)
    bin_path = directory / "model.bin"
    bin_path.unlink(missing_ok=True)
    if blob is seed.bin:
        bin_path.symlink_to(Path(seed.name).with_suffix(".bin"))
    else:
        bin_path.write_bytes(blob)
    return xml_path


def summarize(results: list[dict]) -> str:
    refused = [r for r in results if r["refused"]]
    accepted = [r for r in results if not r["refused"]]
    caught = sum(bool(r["errors"]) for r in refused)
    caught_compatible = sum(bool(r["compatible_errors"]) for r in refused)
    flagged = sum(bool(r["errors"]) for r in accepted)
    flagged_compatible = sum(bool(r["compatible_errors"]) for r in accepted)
    return (f"{len(results)} mutants: OpenVINO refuses {len(refused)}, accepts {len(accepted)}\n"
            f"default mode: irrun reports {caught}/{len(refused)} of the refused, flags {flagged}/{len(accepted)} "
            f"of the accepted (stricter rules)\n"
            f"--openvino-compatible: irrun reports {caught_compatible}/{len(refused)} of the refused, flags "
            f"{flagged_compatible}/{len(accepted)} of the accepted")


def recipe(seed_xml: bytes, mutant_xml: bytes) -> dict | None:
    """The one edit that turns the seed into the mutant: {"offset", "old", "new"} (None if not text)."""
    try:
        a, b = seed_xml.decode(), mutant_xml.decode()
    except UnicodeDecodeError:
        return None
    start = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    return {"offset": start, "old": a[start:len(a) - end], "new": b[start:len(b) - end]}


def export_cases(runs: list[Path], names: list[str], sample: int, target: Path, seed: int) -> None:
    """Recipes of mutants (seed file and one edit; the .bin unchanged) from earlier runs: the named cases
    and a sample of the rest, refused and accepted alike, for tests/test_check_mutants.py."""
    results = [dict(r, run=run) for run in runs for r in map(json.loads, (run / "results.jsonl").open())]
    small = [r for r in results if (ROOT / r["seed"]).stat().st_size < 120_000 and not r["mutation"].startswith(
        "fuzz bin") and (r["run"] / r["case"] / "model.bin").is_symlink()]
    chosen = [r for r in results if r["case"] in names]
    rng = random.Random(seed)
    chosen += rng.sample([r for r in small if r["case"] not in names], sample)
    cases = []
    for r in chosen:
        edit = recipe((ROOT / r["seed"]).read_bytes(), (r["run"] / r["case"] / "model.xml").read_bytes())
        if edit is not None:
            cases.append({"case": r["case"], "seed": r["seed"], "mutation": r["mutation"], **edit})
    target.write_text(json.dumps(cases, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {target}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/irrun-mutants"))
    parser.add_argument("--keep-disagreements", action="store_true",
                        help="keep only the mutants where irrun and OpenVINO disagree (in either mode)")
    parser.add_argument("--export", type=Path, nargs="+", metavar="RUN_DIR",
                        help="write recipes of mutants from these earlier --out folders to --cases-file instead")
    parser.add_argument("--named", nargs="*", default=[], help="with --export: cases always exported")
    parser.add_argument("--sample", type=int, default=30, help="with --export: how many others")
    parser.add_argument("--cases-file", type=Path, default=ROOT / "tests" / "data" / "check_mutants.json")
    parser.add_argument("--recheck", type=Path, metavar="RUN_DIR",
                        help="check an earlier run's mutants again with this irrun (OpenVINO's verdicts kept)")
    parser.add_argument("--openvino-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.openvino_worker:
        openvino_worker()
        return 0
    if args.recheck:
        results = [json.loads(line) for line in (args.recheck / "results.jsonl").open()]
        results = [{**r, **irrun_verdict(args.recheck / r["case"] / "model.xml")} for r in results]
        print(summarize(results))
        return 0
    if args.export:
        export_cases(args.export, args.named, args.sample, args.cases_file, args.seed)
        return 0
    seeds = load_seeds(SEED_DIRECTORIES)
    vocabulary = attribute_vocabulary(seeds)
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    openvino, results, started = OpenVINO(), [], time.time()
    with open(args.out / "results.jsonl", "w") as log:
        for case in range(args.cases):
            seed = rng.choice(seeds)
            xml, blob, what = mutate(seed, rng, vocabulary)
            directory = args.out / f"m{args.seed}_{case:05d}"
            path = write_mutant(directory, seed, xml, blob)
            result = {"case": directory.name, "seed": str(Path(seed.name).relative_to(ROOT)), "mutation": what,
                      **openvino.verdict(path), **irrun_verdict(path)}
            results.append(result)
            log.write(json.dumps(result) + "\n")
            disagree = result["refused"] != bool(result["errors"]) or \
                result["refused"] != bool(result["compatible_errors"])
            if args.keep_disagreements and not disagree:
                shutil.rmtree(directory)
    openvino.close()
    print(summarize(results))
    print(f"({time.time() - started:.0f} s; details in {args.out / 'results.jsonl'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
