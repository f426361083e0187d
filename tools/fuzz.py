"""Mutation fuzzing of irrun's reader, checker and runtime.

Each case mutates a valid IR (attribute values, dims, edges, ids, Const fields, raw bytes of the XML
and the .bin), then loads and runs it. The only acceptable outcomes are success and irrun.IRError;
anything else is a finding, saved under --save for a regression case.

Seeds are every *.xml under the seed folders (SEED_DIRS by default). A seed with recorded inputs (the
steps.npz of an LLM export) is run on them, step after step in one session (a stateful decoder's prefill,
then a decode step reading its KV cache); a case may instead keep the model and mutate those inputs (values
out of range, other shapes, other dtypes). The tokenizer corpus' IRs are run on strings, decomposed or ragged
strings, or token ids, and mutated alike (string elements, shapes and dtypes too: fuzz_strings.py). Other seeds
are run on random inputs.

    python tools/fuzz.py --cases 20000 --seed 1 --save tests/data/fuzz_regressions
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import irrun  # noqa: E402
from irrun.engine.loader import load_document  # noqa: E402
from irrun.ir.xml import read_xml  # noqa: E402
from irrun.tools.check import check_document  # noqa: E402
from fuzz_strings import TOKENIZER_DIRS, mutate_strings, tokenizer_feeds  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEED_DIRS = [
    REPO / "models",                    # example models: static shapes, f32 weights
    REPO / "tests" / "data" / "llm",    # optimum-intel exports: every weight format, stateful and stateless
                                        # decoders, MoE, seq2seq encoders and decoders (with their steps.npz)
    REPO / "tests" / "data" / "compressed",  # nncf-compressed MatMul blocks
    REPO / "tests" / "data" / "fuzz_seeds",  # string-typed IRs (tools/make_string_seeds.py)
    *TOKENIZER_DIRS,  # tokenizers, detokenizers and single tokenizer ops, run on strings (fuzz_strings.py)
]
FUZZ_BUDGET = 256 << 20  # bytes: small, so hostile shapes fail fast
FEED_MUTATION_SHARE = 0.15  # of the cases of a seed with recorded inputs: keep the model, mutate its inputs
MAX_INPUT_ELEMENTS = 1 << 16  # larger (mutated) inputs are loaded but not run, to keep cases quick

ODD_VALUES = ["", " ", "-1", "0", "1", "2", "3", "-7", "999999999999", "1" * 40, "1,,2", "abc", "1.5", "nan",
              "inf", "true", "FLOOR", "Ceil_Torch", "i32", "f32", "u1", "string", "1,2,3,4,5,6", "0,0", "-1,-1",
              "2, 2", "\u00e9", "1e309", "0x10", "..", "?", "2..8", "..."]


@dataclass
class Seed:
    name: str
    xml: bytes
    bin: bytes
    feeds: list = field(default_factory=list)  # scenarios of recorded inputs: each a list of steps {name: array}


def load_seeds(directories) -> list[Seed]:
    seeds = []
    for directory in directories:
        for xml in sorted(Path(directory).glob("**/*.xml")):
            bin_path = xml.with_suffix(".bin")
            seeds.append(Seed(str(xml), xml.read_bytes(), bin_path.read_bytes() if bin_path.exists() else b"",
                              recorded_feeds(xml)))
    return seeds


def recorded_feeds(xml: Path) -> list:
    """The inputs recorded beside a seed: a feeds.npz (see save_feeds), or an LLM export's steps.npz
    (tests/data/llm/README.md): per scenario, the encoder's step for an encoder IR, the first two steps
    (prefill, then a decode step) for a decoder IR; strings or token ids for an IR of the tokenizer corpus."""
    if (xml.parent / "feeds.npz").exists():
        return [read_feeds(xml.parent / "feeds.npz")]
    strings = tokenizer_feeds(xml, xml.read_bytes())
    if strings:
        return strings
    steps_path = xml.parent / "steps.npz"
    if not steps_path.exists() or not xml.name.startswith("openvino_"):
        return []
    with np.load(steps_path) as steps:
        arrays = {key: steps[key] for key in steps.files}
    names = ["encoder"] if "encoder" in xml.name else ["0", "1"]
    scenarios = sorted({key.split("/")[0] for key in arrays})
    return [[_feeds_under(arrays, f"{scenario}/{name}/") for name in names] for scenario in scenarios
            if f"{scenario}/{names[0]}/input_ids" in arrays or f"{scenario}/{names[0]}/input_features" in arrays]


def _feeds_under(arrays: dict, prefix: str) -> dict:
    return {key[len(prefix):]: value for key, value in arrays.items()
            if key.startswith(prefix) and key[len(prefix):] not in ("logits", "last_hidden_state")}


def save_feeds(path: Path, steps: list) -> None:
    """Steps of inputs as an .npz keyed `<step>/<input name>` (a regression case's feeds.npz)."""
    np.savez(path, **{f"{index}/{name}": array for index, step in enumerate(steps) for name, array in step.items()})


def read_feeds(path: Path) -> list:
    with np.load(path) as saved:
        count = 1 + max(int(key.split("/")[0]) for key in saved.files)
        return [_feeds_under({key: saved[key] for key in saved.files}, f"{index}/") for index in range(count)]


def _sub_nth(pattern: str, text: str, rng: random.Random, replace) -> str:
    matches = list(re.finditer(pattern, text))
    if not matches:
        return text
    m = rng.choice(matches)
    return text[:m.start()] + replace(m) + text[m.end():]


def _odd_number(rng: random.Random) -> str:
    return rng.choice(["-1", "0", "1", "2", "7", "65", "-3", "100000", str(10 ** 12), str(2 ** 63), "x"])


def mutate(seed: Seed, rng: random.Random) -> tuple[bytes, bytes, str]:
    """One mutation of a seed: returns the new XML, the new .bin and a description."""
    text = seed.xml.decode("utf-8", errors="replace")
    blob = seed.bin
    kind = rng.choice(["attr", "attr", "dim", "edge", "id", "const", "xml_bytes", "bin_bytes", "structure"])
    if kind == "attr":
        text = _sub_nth(r'(?<=<data )[^>]*', text, rng, lambda m: _mutate_attrs(m.group(0), rng))
    elif kind == "dim":
        text = _sub_nth(r"<dim>[^<]*</dim>", text, rng, lambda m: f"<dim>{_odd_number(rng)}</dim>")
    elif kind == "edge":
        field = rng.choice(["from-layer", "from-port", "to-layer", "to-port"])
        text = _sub_nth(rf'{field}="[^"]*"', text, rng, lambda m: f'{field}="{_odd_number(rng)}"')
    elif kind == "id":
        text = _sub_nth(r'<layer id="[^"]*"', text, rng, lambda m: f'<layer id="{_odd_number(rng)}"')
    elif kind == "const":
        field = rng.choice(["offset", "size", "shape", "element_type"])
        value = rng.choice(ODD_VALUES + [_odd_number(rng)]) if field != "element_type" else rng.choice(
            ["u1", "u4", "i4", "bf16", "f16", "boolean", "string", "nf4", "f8e4m3", "u3", "dynamic", "zz"])
        text = _sub_nth(rf'{field}="[^"]*"', text, rng, lambda m: f'{field}="{value}"')
    elif kind == "structure":
        choice = rng.randrange(4)
        if choice == 0:  # drop an edge
            text = _sub_nth(r"<edge [^>]*/>", text, rng, lambda m: "")
        elif choice == 1:  # duplicate an edge
            text = _sub_nth(r"<edge [^>]*/>", text, rng, lambda m: m.group(0) * 2)
        elif choice == 2:  # drop a layer
            text = _sub_nth(r"<layer .*?</layer>", text.replace("\n", "\x00"), rng, lambda m: "").replace("\x00", "\n")
        else:  # change a type or version
            text = _sub_nth(r'(type|version)="[^"]*"', text, rng,
                            lambda m: f'{m.group(1)}="{rng.choice(["MaxPool", "Foo", "opset99", "opset1", "Result", "Parameter", "const"])}"')
    elif kind == "xml_bytes":
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 8)):
            op = rng.randrange(3)
            pos = rng.randrange(len(data)) if data else 0
            if op == 0 and data:
                data[pos] = rng.randrange(256)
            elif op == 1:
                data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
            else:
                del data[pos:]
        return bytes(data), blob, kind
    else:  # bin_bytes
        data = bytearray(blob)
        op = rng.randrange(3)
        if op == 0 and data:
            for _ in range(rng.randint(1, 16)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 1:
            del data[rng.randrange(len(data) + 1):]
        else:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return text.encode(), bytes(data), kind
    return text.encode("utf-8", errors="replace"), blob, kind


def make_case(seed: Seed, rng: random.Random) -> tuple[bytes, bytes, list | None, str]:
    """One case of a seed: the XML, the .bin, the steps of inputs to run (None: random inputs), a
    description. Seeds without recorded inputs draw from `rng` exactly as `mutate` does."""
    if seed.feeds and rng.random() < FEED_MUTATION_SHARE:
        return seed.xml, seed.bin, mutate_feeds(rng.choice(seed.feeds), rng), "feeds"
    xml_bytes, bin_bytes, kind = mutate(seed, rng)
    return xml_bytes, bin_bytes, (rng.choice(seed.feeds) if seed.feeds else None), kind


def mutate_feeds(steps: list, rng: random.Random) -> list:
    """The steps with one input of one step replaced: odd values, another shape or another dtype."""
    steps = [dict(step) for step in steps]
    step = rng.choice(steps)
    name = rng.choice(sorted(step))
    array = step[name]
    action = rng.randrange(3)
    if array.dtype == object:
        array = mutate_strings(array, rng)
    elif action == 0:
        odd = np.array([-1, 0, 1, 2, 255, 256, 2 ** 31 - 1, -2 ** 31, 10 ** 6], dtype=np.int64)
        values = rng.choice(list(odd) + [np.nan, np.inf] * (array.dtype.kind == "f"))
        array = array.copy()
        if array.size:
            array.reshape(-1)[rng.randrange(array.size)] = values if array.dtype.kind == "f" else \
                np.array(values).astype(array.dtype)
    elif action == 1:
        shape = list(array.shape)
        if shape and rng.random() < 0.7:
            shape[rng.randrange(len(shape))] = rng.choice([0, 1, 2, 3, 7])
        elif shape and rng.random() < 0.5:
            del shape[rng.randrange(len(shape))]
        else:
            shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2]))
        array = np.resize(array, shape)
    else:
        array = array.astype(rng.choice([np.float32, np.float16, np.int32, np.int64, np.uint8, np.uint64, bool]))
    step[name] = array
    return steps


def _mutate_attrs(attrs: str, rng: random.Random) -> str:
    """`attrs`: a <data> element's text up to its '>' (its '/' included, kept so that the XML stays well-formed)."""
    pairs = re.findall(r'([\w-]+)="([^"]*)"', attrs)
    if not pairs:
        return attrs
    index = rng.randrange(len(pairs))
    name, value = pairs[index]
    action = rng.randrange(4)
    if action == 0:
        pairs[index] = (name, rng.choice(ODD_VALUES))
    elif action == 1:
        parts = value.split(",")
        parts[rng.randrange(len(parts))] = _odd_number(rng)
        pairs[index] = (name, ",".join(parts))
    elif action == 2:
        del pairs[index]
    else:
        pairs.append((rng.choice(["foo", "axis", "dilations", "auto_pad", "rounding_type"]), rng.choice(ODD_VALUES)))
    return " ".join(f'{k}="{v}"' for k, v in pairs) + (" /" if attrs.rstrip().endswith("/") else " ")


def random_inputs(model, rng: np.random.Generator):
    feeds = []
    for desc in model.inputs:
        if desc.shape is None:
            return None
        shape = tuple(int(rng.integers(1, 4)) if d is None else d for d in desc.shape)
        if int(np.prod(shape, dtype=object)) > MAX_INPUT_ELEMENTS:
            return None
        dtype = np.dtype(irrun.ir.types.element_type(desc.element_type).storage)
        if desc.element_type == "string":
            feeds.append(random_strings(shape, rng))
        elif dtype.kind == "f":
            feeds.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            feeds.append(rng.integers(0, 2, shape).astype(bool))
        else:
            feeds.append(rng.integers(0, 3, shape).astype(dtype))
    return feeds


def random_strings(shape, rng: np.random.Generator) -> np.ndarray:
    """Short strings of any bytes (not always UTF-8), empty ones included."""
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
    out[:] = [rng.integers(0, 256, int(rng.integers(0, 9)), dtype=np.uint8).tobytes() for _ in range(out.size)]
    return out.reshape(shape)


def run_case(xml_bytes: bytes, bin_bytes: bytes, directory: Path, rng: np.random.Generator, feeds=None) -> str:
    """'ok' or 'irerror'; raises anything else. `feeds`: steps of inputs by name, run in one session, when
    the model has inputs of those names (else, or when None, one run on random inputs)."""
    xml_path = directory / "model.xml"
    for path, data in ((xml_path, xml_bytes), (directory / "model.bin", bin_bytes)):
        # a new file, not the last case's truncated: ext4 writes a truncated-and-rewritten file out on close
        # (auto_da_alloc), milliseconds per case; and a Model still mapping the old .bin keeps its own bytes
        path.unlink(missing_ok=True)
        path.write_bytes(data)
    try:
        try:
            doc = read_xml(xml_path)
        except irrun.IRError:
            irrun.check(xml_path)  # the checker's own reading of a file the reader refuses (it repairs some)
            raise
        check_document(doc)  # read once for the checker and the loader: both start from read_xml(xml_path)
        model = load_document(doc, max_memory=FUZZ_BUDGET)
        names = [next((name for name in desc.names if feeds and name in feeds[0]), desc.name)
                 for desc in model.inputs]
        if feeds and all(name in feeds[0] for name in names):
            steps = [{name: step[name] for name in names if name in step} for step in feeds]
        else:
            steps = [random_inputs(model, rng)]
        session = model.session()
        for step in steps:
            if step is not None:
                session.run(step)
        return "ok"
    except irrun.IRError as exc:
        message = str(exc)
        assert "\n" not in message and message, f"IRError message is not one line: {message!r}"
        # Under a ulimit, an allocation the budget did not see shows up as a wrapped MemoryError.
        assert "MemoryError" not in message, f"unbudgeted allocation: {message}"
        return "irerror"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--models", nargs="*", default=[str(d) for d in SEED_DIRS if d.is_dir()],
                        help="seed folders (default: SEED_DIRS)")
    parser.add_argument("--save", type=Path, help="folder to save failing cases in")
    parser.add_argument("--progress", type=int, default=0, help="print the counts every this many cases")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/irrun-fuzz"))
    args = parser.parse_args(argv)
    seeds = load_seeds(args.models)
    args.workdir.mkdir(parents=True, exist_ok=True)
    rng, nprng = random.Random(args.seed), np.random.default_rng(args.seed)
    counts: dict[str, int] = {}
    started = time.time()
    for case in range(args.cases):
        seed = rng.choice(seeds)
        xml_bytes, bin_bytes, feeds, kind = make_case(seed, rng)
        try:
            outcome = run_case(xml_bytes, bin_bytes, args.workdir, nprng, feeds)
        except Exception:  # noqa: BLE001 - every other outcome is a finding
            outcome = "FAILURE"
            print(f"case {case} ({kind} of {seed.name}):\n{traceback.format_exc()}", file=sys.stderr)
            if args.save:
                target = args.save / f"case{args.seed}_{case}"
                target.mkdir(parents=True, exist_ok=True)
                (target / "model.xml").write_bytes(xml_bytes)
                (target / "model.bin").write_bytes(bin_bytes)
                if feeds:
                    save_feeds(target / "feeds.npz", feeds)
        counts[outcome] = counts.get(outcome, 0) + 1
        if args.progress and (case + 1) % args.progress == 0:
            print(f"{case + 1} cases in {time.time() - started:.0f} s: " +
                  ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)
    print(f"{args.cases} cases from {len(seeds)} seeds in {time.time() - started:.0f} s: "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 1 if counts.get("FAILURE") else 0


if __name__ == "__main__":
    sys.exit(main())
