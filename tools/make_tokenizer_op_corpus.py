"""Build tests/data/tokenizer_ops: single openvino-tokenizers extension ops with OpenVINO's outputs.

    python tools/make_tokenizer_op_corpus.py [--out tests/data/tokenizer_ops]

Needs openvino and openvino-tokenizers; no network. Each case is one extension op whose string inputs are
model inputs in the extension's decomposed form (ragged begins, ragged ends, begins, ends, chars), so that
strings that are not valid UTF-8 reach it byte for byte, and whose outputs are all model outputs. cases.json
holds, per case, the model file and OpenVINO's outputs on the battery (STRINGS: the corpus battery of
tools/make_tokenizer_corpus.py plus invalid UTF-8 and byte-level edge cases, one string per row; the regex
ops get its valid UTF-8 strings only); byte arrays are base64.
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tokenizer_corpus import BATTERY


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


EXTRA = [
    b"\xff\xfe bad lead bytes", b"cut \xe2\x82", b"overlong \xc0\xaf and \xe0\x80\xaf", b"surrogate \xed\xa0\x80",
    b"\xf5\x80\x80\x80 past U+10FFFF", b"\xf0\x9f\x98", "A\u0302\u0323 \u1e0b\u0323 \ufb01 \u2460 \u00bd".encode(),
    b"<0x41><0x4G><abcd><0x0a>x", "\u0130i\u0049\u0131 \u00df \u01c5 \u1e9e \u03a3\u03c3\u03c2".encode(),
    # word characters where PCRE2 and the regex package differ: spacing marks, other numbers, a circled letter,
    # a zero-width non-joiner
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e \u00bd\u00b2 \u24b6x "
    "ab\u200ccd the_end".encode(),
]
STRINGS = [s.encode("utf-8") for s in BATTERY] + EXTRA
# PCRE2 runs JIT without checking UTF-8: on invalid UTF-8 its matches are undefined behaviour (observed: bytes
# after an invalid lead byte are swallowed into one "character"), so the regex ops get the valid strings only.
VALID = [s for s in STRINGS if _is_utf8(s)]
REGEX_OPS = ("RegexSplit", "RegexNormalization", "SpecialTokensSplit")
CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "1"}


def _b64(array) -> str:
    return base64.b64encode(np.asarray(array, dtype=np.uint8).tobytes()).decode("ascii")


def decomposed(strings: list[bytes]):
    lengths = np.array([len(s) for s in strings], dtype=np.int32)
    ends = np.cumsum(lengths).astype(np.int32)
    rows = np.arange(len(strings), dtype=np.int32)
    return rows, rows + 1, ends - lengths, ends, np.frombuffer(b"".join(strings), dtype=np.uint8).copy()


def _u8_const(text: str | bytes):
    import openvino as ov
    from openvino import opset15
    data = text.encode("utf-8") if isinstance(text, str) else text
    return opset15.constant(ov.Tensor(np.frombuffer(data, dtype=np.uint8).copy()) if data else
                            np.zeros(0, dtype=np.uint8))


def _strings_const(items: list[str]):
    from openvino import opset15
    _, _, begins, ends, chars = decomposed([s.encode("utf-8") for s in items])
    return [opset15.constant(begins), opset15.constant(ends), opset15.constant(chars)]


def cases():
    """name -> (op type, attributes, ragged input?, extra constant inputs builder, skips input?)."""
    from openvino import opset15
    out = {}
    for form in ("nfc", "nfd", "nfkc", "nfkd"):
        for fold in (False, True):
            out[f"charsmap_{form}{'_fold' if fold else ''}"] = (
                "CharsMapNormalization", {"normalization_form": form, "case_fold": fold,
                                          "remove_extra_whitespaces": False}, False, list)
    out["charsmap_identity_fold"] = ("CharsMapNormalization", {"normalization_form": "identity", "case_fold": True,
                                                              "remove_extra_whitespaces": False}, False, list)
    out["charsmap_nfkc_whitespace"] = ("CharsMapNormalization", {"normalization_form": "nfkc",
                                                                "remove_extra_whitespaces": True,
                                                                "add_dummy_prefix": True,
                                                                "escape_whitespaces": True}, False, list)
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        out[f"normalize_unicode_{form}"] = ("NormalizeUnicode", {"normalization_form": form}, False, list)
    out["casefold_ascii"] = ("CaseFold", {"encoding": ""}, False, list)
    out["casefold_utf8"] = ("CaseFold", {"encoding": "utf-8"}, False, list)
    out["regex_normalization_swap"] = ("RegexNormalization", {"global_replace": True}, False,
                                       lambda: [_u8_const(r"(\p{L})(\p{N})"), _u8_const("$2$1")])
    out["regex_normalization_first"] = ("RegexNormalization", {"global_replace": False}, False,
                                        lambda: [_u8_const(r"\s+"), _u8_const("_")])
    for behaviour in ("remove", "isolate", "contiguous", "mergedwithprevious", "mergedwithnext"):
        for invert in (False, True):
            out[f"regex_split_{behaviour}{'_invert' if invert else ''}"] = (
                "RegexSplit", {"behaviour": behaviour, "invert": invert}, True, lambda: [_u8_const(r"\s")])
    out["regex_split_punct_max2"] = ("RegexSplit", {"behaviour": "isolate", "max_splits": 2}, True,
                                     lambda: [_u8_const(r"\p{P}")])
    out["regex_split_word_classes"] = ("RegexSplit", {"behaviour": "isolate"}, True,
                                       lambda: [_u8_const(r"\w+|[^\w\s]+")])
    out["regex_normalization_word_boundary"] = ("RegexNormalization", {"global_replace": True}, False,
                                                lambda: [_u8_const(r"\b(\w)"), _u8_const("<$1")])
    out["regex_split_hex_escape"] = ("RegexSplit", {"behaviour": "isolate"}, True,
                                     lambda: [_u8_const(r"[\x{4E00}-\x{9FFF}]|[\x{1F300}-\x{1FAFF}]")])
    out["special_tokens_split"] = ("SpecialTokensSplit", {}, True,
                                   lambda: [_u8_const(r"(<s>|</s>|\[CLS\]|<unk>)")])
    out["bytes_to_chars"] = ("BytesToChars", {}, True, list)
    out["chars_to_bytes"] = ("CharsToBytes", {}, True, list)
    out["ragged_to_sparse"] = ("RaggedToSparse", {}, True, list)
    out["equal_str"] = ("EqualStr", {}, False, lambda: _strings_const(["Hello world"]))
    out["utf8_validate_replace"] = ("UTF8Validate", {"replace_mode": True}, False, list)
    out["utf8_validate_drop"] = ("UTF8Validate", {"replace_mode": False}, False, list)
    out["byte_fallback"] = ("ByteFallback", {}, False, list)
    vocab = ["Hello world", "", " ", "<s>special</s> [CLS] <unk> <pad>", "caf\u00e9 NFC"]
    out["vocab_encoder"] = ("VocabEncoder", {}, False,
                            lambda: [*_strings_const(vocab), opset15.constant(np.arange(10, 15, dtype=np.int32)),
                                     opset15.constant(np.array(-1, dtype=np.int32))])
    trie = [bytes([b]).decode("latin-1") for b in range(1)] + ["He", "Hello", "world", "ll", "\u00e9"]
    out["trie_tokenizer"] = ("TrieTokenizer", {}, True, lambda: _trie_inputs(trie))
    return out


def _trie_inputs(words):
    from openvino import opset15
    tokens = [bytes([b]) for b in range(256)] + [w.encode("utf-8") for w in words[1:]]
    _, _, begins, ends, chars = decomposed(tokens)
    return [opset15.constant(begins), opset15.constant(ends), opset15.constant(chars),
            opset15.constant(np.arange(len(tokens), dtype=np.int32))]


def build(name, spec, out: Path, core) -> dict:
    import openvino as ov
    from openvino import opset15
    from openvino_tokenizers import _get_factory
    op_type, attrs, ragged, extra = spec
    names = ["ragged_begins", "ragged_ends", "begins", "ends", "chars"] if ragged else ["begins", "ends", "chars"]
    params = [opset15.parameter([-1], ov.Type.u8 if n == "chars" else ov.Type.i32, name=n) for n in names]
    sources = [p.output(0) for p in params]
    if op_type == "CharsToBytes":  # its input is byte-level text: the battery through BytesToChars
        sources = _get_factory().create("BytesToChars", sources).outputs()[:5]
    if op_type == "RaggedToSparse":  # rows of several elements: the battery's words
        sources = _get_factory().create("RegexSplit", sources + [_u8_const(r"\s+").output(0)],
                                        {"behaviour": "remove"}).outputs()[:2]
    node = _get_factory().create(op_type, sources + [o.output(0) for o in extra()], attrs)
    model = ov.Model([opset15.result(o) for o in node.outputs()], params, name)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, folder / "model.xml")
    compiled = core.compile_model(str(folder / "model.xml"), "CPU", CPU_CONFIG)
    valid_only = op_type in REGEX_OPS or op_type == "RaggedToSparse"  # the latter after a RegexSplit
    arrays = decomposed(VALID if valid_only else STRINGS)
    inputs = list(arrays if ragged else arrays[2:])
    results = compiled.create_infer_request().infer(inputs)
    outputs = [_entry(np.asarray(results[port])) for port in compiled.outputs]
    return {"op": op_type, "attributes": dict(attrs.items()), "ragged": ragged, "valid_utf8_only": valid_only,
            "outputs": outputs}


def build_sp_stream(out: Path, core) -> dict:
    """SentencepieceStreamDetokenizer on a SentencePiece BPE model with byte fallback trained here, fed every id
    and some beyond the vocabulary."""
    import tempfile

    import openvino as ov
    import sentencepiece as spm
    from make_tokenizer_corpus import CORPUS
    from openvino import opset15
    from openvino_tokenizers import _get_factory
    with tempfile.TemporaryDirectory() as work:
        text = Path(work) / "corpus.txt"
        text.write_text("\n".join(CORPUS), encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=f"{work}/sp", model_type="bpe",
                                       vocab_size=480, byte_fallback=True, character_coverage=1.0,
                                       normalization_rule_name="identity", minloglevel=2, num_threads=1)
        model_bytes = Path(f"{work}/sp.model").read_bytes()
    ids = opset15.parameter([-1, -1], ov.Type.i32, name="ids")
    node = _get_factory().create("SentencepieceStreamDetokenizer", [_u8_const(model_bytes).output(0), ids.output(0)])
    folder = out / "sentencepiece_stream_detokenizer"
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(ov.Model([opset15.result(o) for o in node.outputs()], [ids], "stream"), folder / "model.xml")
    rows = np.stack([np.arange(0, 240), np.arange(240, 480), np.resize([5, 500, 300, 7, 480, 260], 240)])
    rows = rows.astype(np.int32)
    compiled = core.compile_model(str(folder / "model.xml"), "CPU", CPU_CONFIG)
    results = compiled.create_infer_request().infer([rows])
    return {"op": "SentencepieceStreamDetokenizer", "attributes": {}, "ragged": False, "valid_utf8_only": False,
            "inputs": [_entry(rows)], "outputs": [_entry(np.asarray(results[port])) for port in compiled.outputs]}


def _entry(value: np.ndarray) -> dict:
    return {"type": str(value.dtype), "shape": list(value.shape),
            "data": _b64(value) if value.dtype == np.uint8 else value.reshape(-1).astype(np.int64).tolist()
            if value.dtype != np.bool_ else value.reshape(-1).astype(int).tolist()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/data/tokenizer_ops"))
    args = parser.parse_args(argv)
    import openvino as ov
    import openvino_tokenizers
    core = ov.Core()
    core.add_extension(openvino_tokenizers._ext_path)
    out = Path(args.out)
    expected = {"strings": [_b64(np.frombuffer(s, dtype=np.uint8)) for s in STRINGS],
                "valid_utf8": [_is_utf8(s) for s in STRINGS], "cases": {}}
    for name, spec in cases().items():
        try:
            expected["cases"][name] = build(name, spec, out, core)
            print(f"{name}: ok")
        except Exception as exc:  # noqa: BLE001 - reported; the other cases still run
            print(f"{name}: FAILED {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
    expected["cases"]["sentencepiece_stream_detokenizer"] = build_sp_stream(out, core)
    (out / "cases.json").write_text(json.dumps(expected, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
