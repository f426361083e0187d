"""Text in, text out: irrun.text and `irrun generate --prompt` on a tiny llama folder with tokenizer IRs, against
openvino_genai.LLMPipeline's committed text (tests/data/tokenizer_llm, written by
tools/make_tokenizer_corpus.py --llm), and on tiny T5/BART folders against optimum-intel's (tokenizer_seq2seq).
The data folders hold the tokenizer IRs; each test folder is assembled from them and the model IRs of
tests/data/llm/<source>. Needs neither OpenVINO nor openvino-genai."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import irrun
from irrun.cli.main import cli

FOLDER = Path(__file__).parent / "data" / "tokenizer_llm"
SEQ2SEQ = Path(__file__).parent / "data" / "tokenizer_seq2seq"
EXPECTED = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))
CASES = EXPECTED["cases"]


def _assemble(data_folder: Path, target: Path) -> Path:
    """The export folder: the source model's files and the data folder's tokenizer IRs and configs."""
    source = Path(__file__).parent.parent / json.loads((data_folder / "expected.json").read_text())["source"]
    target.mkdir(parents=True, exist_ok=True)
    for path in (*source.glob("openvino_*model.*"), *data_folder.iterdir()):
        shutil.copy(path, target / path.name)
    return target


@pytest.fixture(scope="module")
def llm_folder(tmp_path_factory):
    return _assemble(FOLDER, tmp_path_factory.mktemp("llm"))


@pytest.fixture(scope="module")
def seq2seq_folders(tmp_path_factory):
    return {arch: _assemble(SEQ2SEQ / arch, tmp_path_factory.mktemp(arch)) for arch in ("t5", "bart")}


def _case_id(case):
    return f"{case['prompt'][:12]!r}-{'chat' if case['apply_chat_template'] else 'plain'}"


@pytest.fixture(scope="module")
def tokenizer():
    return irrun.text.Tokenizer(FOLDER)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_prompt_ids_match_llmpipeline(tokenizer, case):
    if case["apply_chat_template"]:
        assert tokenizer.apply_chat_template(case["prompt"]) == case["templated"]
    assert tokenizer.prompt_ids(case["prompt"], case["apply_chat_template"]) == case["prompt_ids"]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_generated_text_matches_llmpipeline(llm_folder, case):
    text = irrun.text.generate(llm_folder, case["prompt"], case["max_new_tokens"], case["apply_chat_template"])
    assert text == case["text"]


def test_cli_prints_llmpipeline_text_and_a_newline(llm_folder):
    case = next(c for c in CASES if c["apply_chat_template"] and c["prompt"])
    result = CliRunner().invoke(cli, ["generate", str(llm_folder), "--prompt", case["prompt"], "--max-new-tokens",
                                      str(case["max_new_tokens"])])
    assert result.exit_code == 0, result.output
    assert result.stdout == case["text"] + "\n"


def test_cli_without_chat_template(llm_folder):
    case = next(c for c in CASES if not c["apply_chat_template"] and c["prompt"])
    result = CliRunner().invoke(cli, ["generate", str(llm_folder), "--prompt", case["prompt"], "--no-chat-template",
                                      "--max-new-tokens", str(case["max_new_tokens"])])
    assert result.exit_code == 0, result.output
    assert result.stdout == case["text"] + "\n"


@pytest.mark.parametrize("args", [[], ["--ids", "1,2", "--prompt", "hi"]])
def test_cli_needs_exactly_one_prompt_form(args):
    result = CliRunner().invoke(cli, ["generate", str(FOLDER), *args])
    assert result.exit_code != 0
    assert len(result.output.strip().splitlines()) == 1
    assert "--prompt TEXT or as --ids" in result.output


@pytest.mark.parametrize("case", EXPECTED["encode"], ids=lambda c: f"{c['text']!r}-{c['add_special_tokens']}")
def test_encode_with_and_without_special_tokens_like_genai(tokenizer, case):
    assert tokenizer.encode(case["text"], add_special_tokens=case["add_special_tokens"]) == case["ids"]


@pytest.mark.parametrize("case", EXPECTED["decode"], ids=lambda c: f"{c['ids'][:3]}-{c['skip_special_tokens']}")
def test_decode_with_and_without_skipping_special_tokens_like_genai(tokenizer, case):
    assert tokenizer.decode(case["ids"], skip_special_tokens=case["skip_special_tokens"]) == case["text"]


def test_module_functions(tokenizer):
    assert irrun.text.tokenize(FOLDER, "Hello world") == tokenizer.encode("Hello world")
    assert irrun.text.detokenize(FOLDER, tokenizer.encode("Hello world")) == "Hello world"


SEQ2SEQ_CASES = [(arch, case) for arch in ("t5", "bart")
                 for case in json.loads((SEQ2SEQ / arch / "expected.json").read_text(encoding="utf-8"))["cases"]]


@pytest.mark.parametrize(("arch", "case"), SEQ2SEQ_CASES, ids=lambda v: v if isinstance(v, str) else repr(v["prompt"]))
def test_seq2seq_matches_optimum_intel(seq2seq_folders, arch, case):
    """The tiny random T5 and BART give degenerate text (T5 repeats its pad id, BART stops at once): the ids
    are compared too."""
    from irrun.tools.seq2seq import generate_seq2seq

    folder = seq2seq_folders[arch]
    assert irrun.text.Tokenizer(folder).encode(case["prompt"]) == case["openvino_prompt_ids"]
    # optimum-intel tokenizes with the Hugging Face tokenizer; the generated ids from its prompt ids:
    assert generate_seq2seq(folder, case["prompt_ids"], case["max_new_tokens"]) == case["generated_ids"][1:]
    assert irrun.text.generate(folder, case["prompt"], case["max_new_tokens"]) == case["text"]


def test_cli_generates_from_a_seq2seq_folder(seq2seq_folders):
    _, case = SEQ2SEQ_CASES[0]
    result = CliRunner().invoke(cli, ["generate", str(seq2seq_folders["t5"]), "--prompt", case["prompt"],
                                      "--max-new-tokens", str(case["max_new_tokens"])])
    assert result.exit_code == 0, result.output
    assert result.stdout == case["text"] + "\n"
