"""Build tests/data/tokenizers: small tokenizer/detokenizer IRs from openvino-tokenizers, with OpenVINO's outputs.

    python tools/make_tokenizer_corpus.py [--only bpe_bytelevel,wordpiece] [--out tests/data/tokenizers]
    python tools/make_tokenizer_corpus.py --llm [--llm-out tests/data/tokenizer_llm]
    python tools/make_tokenizer_corpus.py --seq2seq [--seq2seq-out tests/data/tokenizer_seq2seq]

Needs tokenizers, sentencepiece, transformers, openvino and openvino-tokenizers; no network. Each tokenizer is
trained in-process on CORPUS, wrapped as a transformers tokenizer and converted with
openvino_tokenizers.convert_tokenizer in several variants. The --llm and --seq2seq folders keep their tokenizer IRs, configs and expected.json; their
model IRs are tests/data/llm/<source>'s (tests assemble the folder). Each variant folder holds openvino_tokenizer.xml/.bin,
openvino_detokenizer.xml/.bin (when the variant has one) and expected.json: the battery of strings (BATTERY),
OpenVINO's tokenizer outputs for each string alone and for the battery but its long string as one batch, the detokenizer's
text for each string's ids, and the Hugging Face tokenizer's ids and text for comparison (`hf_*`).
The WordPiece and Unigram trainers of `tokenizers` are not reproducible run to run (their vocabularies come out
in another order), so a rebuild gives other, equally valid, files.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

CPU_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "1"}

CORPUS = [
    "The quick brown fox jumps over the lazy dog. Hello world, this is a test of the tokenizer.",
    "Héllo wörld! Café, naïve, résumé and façade are French words; jalapeño is Spanish.",
    "Grüße aus München: die Straße ist groß, und Äpfel, Öl und Übermut sind schön.",
    "İstanbul'da ılık bir gün. IŞIK ve ışık; Iğdır, çiçek, şeker, öğretmen.",
    "你好，世界。这是一个中文分词测试，我们在北京学习自然语言处理。",
    "東京は日本の首都です。カタカナとひらがなと漢字を使います。",
    "مرحبا بالعالم. هذه جملة عربية للاختبار.",
    "שלום עולם. זהו משפט בעברית לבדיקה.",
    "Emoji: 👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 😀😃😄 ❤️",
    "Numbers 12345 and 3.14159, dates 2026-11-26, code: def f(x): return x**2",
    "    indented    text\twith\ttabs\nand\nnewlines   ",
    "Combining: e\u0301 a\u0308 o\u0302 n\u0303 and precomposed é ä ô ñ.",
] * 8

BATTERY = [
    "Hello world",
    "Héllo wörld, café naïve résumé",
    "Grüße aus München, Straße ÄÖÜ",
    "İstanbul ılık IŞIK Iğdır",
    "你好世界，中文分词测试",
    "東京は日本の首都です。カタカナ ひらがな",
    "مرحبا بالعالم",
    "שלום עולם",
    "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 😀",
    "caf\u00e9 NFC",
    "cafe\u0301 NFD",
    "a\u0323\u0302 a\u0302\u0323 stacked",
    "a   b\t\tc\n\nd  ",
    "   leading and trailing   ",
    "ctrl\x00a\x07b\x1bc\x7fd",
    "",
    " ",
    "<s>special</s> [CLS] <unk> <pad>",
    "Numbers 12345 3.14159 x**2",
    ("The quick brown fox jumps over the lazy dog; Grüße, 東京, 👍🏽. " * 40)[:2000],
]
# Battery strings whose ids are long: the truncation variants cut them.
MAX_LENGTH = 8

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


# ---------------------------------------------------------------- tokenizers

def _fast(tok, **special):
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special)


def bpe_bytelevel():
    """GPT-2 style: byte-level pre-tokenizer with its regex, BPE, <s> $A </s>."""
    import tokenizers as tk
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=420, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tk.processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    return _fast(tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def bpe_llama3():
    """Llama-3 / Qwen style: a Split pre-tokenizer with a PCRE pattern, then byte-level without its regex."""
    import tokenizers as tk
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.Sequence([
        tk.pre_tokenizers.Split(tk.Regex(LLAMA3_SPLIT), behavior="isolated"),
        tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(vocab_size=450, special_tokens=["<|begin_of_text|>", "<|end_of_text|>"],
                                  initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tk.processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", 0)])
    return _fast(tok, bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>", pad_token="<|end_of_text|>")


def bpe_suffix():
    """CLIP style: lower-cased, whitespace/punctuation pre-tokenizer, BPE with an end-of-word suffix </w>."""
    import tokenizers as tk
    tok = tk.Tokenizer(tk.models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = tk.normalizers.Sequence([tk.normalizers.NFC(), tk.normalizers.Lowercase()])
    tok.pre_tokenizer = tk.pre_tokenizers.Whitespace()
    tok.decoder = tk.decoders.BPEDecoder(suffix="</w>")
    trainer = tk.trainers.BpeTrainer(vocab_size=600, special_tokens=["<pad>", "<unk>", "<start>", "<end>"],
                                     end_of_word_suffix="</w>")
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tk.processors.TemplateProcessing(
        single="<start> $A <end>", pair="<start> $A <end> $B <end>", special_tokens=[("<start>", 2), ("<end>", 3)])
    return _fast(tok, bos_token="<start>", eos_token="<end>", pad_token="<pad>", unk_token="<unk>")


def wordpiece():
    """BERT uncased: BertNormalizer (lower case, strip accents, CJK spacing), BertPreTokenizer, WordPiece."""
    import tokenizers as tk
    tok = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tk.normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    tok.decoder = tk.decoders.WordPiece()
    trainer = tk.trainers.WordPieceTrainer(vocab_size=500, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tk.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    from transformers import BertTokenizerFast
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                             cls_token="[CLS]", mask_token="[MASK]")


def _sentencepiece_model(model_type, work, vocab_size, **extra):
    import sentencepiece as spm
    text = Path(work) / "corpus.txt"
    text.write_text("\n".join(CORPUS), encoding="utf-8")
    prefix = str(Path(work) / f"sp_{model_type}")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=prefix, model_type=model_type, vocab_size=vocab_size,
                                   character_coverage=1.0, pad_id=0, unk_id=1, bos_id=2, eos_id=3,
                                   minloglevel=2, num_threads=1, **extra)
    return prefix + ".model"


def sp_unigram(work):
    """SentencePiece Unigram (T5/XLNet style) through the Hugging Face fast tokenizer converted from it."""
    from transformers import LlamaTokenizer
    model = _sentencepiece_model("unigram", work, 200, normalization_rule_name="identity")
    return LlamaTokenizer(vocab_file=model, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                          add_bos_token=True, add_eos_token=False, legacy=False)


def sp_unigram_fast(work):
    """The SentencePiece Unigram model through transformers' fast T5 tokenizer (its precompiled character map as
    an input of CharsMapNormalization, then UnigramTokenizer)."""
    from transformers import T5TokenizerFast
    model = _sentencepiece_model("unigram", work, 200)
    return T5TokenizerFast(vocab_file=model, extra_ids=0, eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                           from_slow=True)


def sp_bpe(work):
    """SentencePiece BPE with byte fallback (Llama-2 style)."""
    from transformers import LlamaTokenizer
    model = _sentencepiece_model("bpe", work, 500, byte_fallback=True, normalization_rule_name="identity")
    return LlamaTokenizer(vocab_file=model, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                          add_bos_token=True, add_eos_token=False, legacy=False)


def sp_bpe_fast(work):
    """The same SentencePiece BPE model through transformers' fast (tokenizers) conversion of it."""
    from transformers import LlamaTokenizerFast
    model = _sentencepiece_model("bpe", work, 500, byte_fallback=True)
    return LlamaTokenizerFast(vocab_file=model, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                              eos_token="</s>", add_bos_token=True, add_eos_token=False, legacy=False,
                              from_slow=True)


def hf_unigram():
    """A tokenizers Unigram model with Metaspace (not SentencePiece-backed)."""
    import tokenizers as tk
    tok = tk.Tokenizer(tk.models.Unigram())
    tok.normalizer = tk.normalizers.Sequence([tk.normalizers.NFKC(), tk.normalizers.Replace(r"  ", " ")])
    tok.pre_tokenizer = tk.pre_tokenizers.Metaspace()
    tok.decoder = tk.decoders.Metaspace()
    trainer = tk.trainers.UnigramTrainer(vocab_size=300, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>")
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = tk.processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", 1)])
    return _fast(tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


TOKENIZERS = {
    "bpe_bytelevel": bpe_bytelevel,
    "bpe_llama3": bpe_llama3,
    "bpe_suffix": bpe_suffix,
    "wordpiece": wordpiece,
    "sp_unigram": sp_unigram,
    "sp_unigram_fast": sp_unigram_fast,
    "sp_bpe": sp_bpe,
    "sp_bpe_fast": sp_bpe_fast,
    "hf_unigram": hf_unigram,
}

# variant name -> (convert_tokenizer options, options of the HF tokenizer call that matches it)
VARIANTS = {
    "default": ({"with_detokenizer": True}, {}),
    "no_special": ({"with_detokenizer": True, "add_special_tokens": False, "skip_special_tokens": False},
                   {"add_special_tokens": False}),
    "left_trunc": ({"with_detokenizer": False, "max_length": MAX_LENGTH}, {"truncation": True, "max_length": MAX_LENGTH}),
    "pair": ({"with_detokenizer": False, "number_of_inputs": 2}, {}),
}


# ---------------------------------------------------------------- a tiny LLM folder with tokenizers

SEED = 20261126
LLM_SOURCE = "llama"        # tests/data/llm/<this>: vocab 256, bos 1, eos 2, pad 0
LLM_CORPUS = [
    "The quick brown fox jumps over the lazy dog.", "Hello world, this is a test of the tokenizer.",
    "A small model writes random text; that is fine for a test.", "Once upon a time there was a tiny llama.",
    "What is the capital of France? Paris is the capital of France.", "User: hi! Assistant: hello, how are you?",
] * 20
LLM_CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
                     "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
LLM_PROMPTS = ["Hello world", "What is the capital of France?", "Once upon a time", "", "héllo 👍"]
LLM_MAX_NEW_TOKENS = 12
LLM_CONFIG = dict(CPU_CONFIG, KV_CACHE_PRECISION="f32", DYNAMIC_QUANTIZATION_GROUP_SIZE="0")


def llm_tokenizer(work, chat_template=True):
    """A SentencePiece BPE model with exactly the tiny LLM's 256 ids (unk 0, bos 1, eos 2), through transformers'
    fast conversion, with a chat template."""
    import sentencepiece as spm
    from transformers import LlamaTokenizerFast
    text = Path(work) / "llm_corpus.txt"
    text.write_text("\n".join(LLM_CORPUS), encoding="utf-8")
    prefix = str(Path(work) / "llm_sp")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=prefix, model_type="bpe", vocab_size=256,
                                   character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                                   minloglevel=2, num_threads=1, normalization_rule_name="identity")
    tok = LlamaTokenizerFast(vocab_file=prefix + ".model", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                             add_bos_token=True, add_eos_token=False, legacy=False, from_slow=True)
    if chat_template:
        tok.chat_template = LLM_CHAT_TEMPLATE
    return tok


def build_llm_folder(out: Path, core) -> None:
    """tests/data/llm/<LLM_SOURCE>'s model with tokenizer IRs, and LLMPipeline's text for LLM_PROMPTS."""
    import openvino as ov
    import openvino_genai
    from openvino_tokenizers import convert_tokenizer
    source = Path(__file__).resolve().parent.parent / "tests" / "data" / "llm" / LLM_SOURCE
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("openvino_model.xml", "openvino_model.bin", "config.json", "generation_config.json"):
        shutil.copy(source / name, out / name)
    with tempfile.TemporaryDirectory() as work:
        hf = llm_tokenizer(work)
        tokenizer, detokenizer = convert_tokenizer(hf, with_detokenizer=True)
    ov.save_model(tokenizer, out / "openvino_tokenizer.xml")
    ov.save_model(detokenizer, out / "openvino_detokenizer.xml")
    pipe = openvino_genai.LLMPipeline(str(out), "CPU", **LLM_CONFIG)
    genai_tokenizer = pipe.get_tokenizer()
    cases = []
    for prompt in LLM_PROMPTS:
        for chat in (True, False):
            config = pipe.get_generation_config()
            config.max_new_tokens = LLM_MAX_NEW_TOKENS
            config.apply_chat_template = chat
            text = pipe.generate(prompt, config)
            templated = genai_tokenizer.apply_chat_template([{"role": "user", "content": prompt}], True) \
                if chat else prompt
            ids = genai_tokenizer.encode(templated, add_special_tokens=not chat).input_ids.data.tolist()[0]
            cases.append({"prompt": prompt, "apply_chat_template": chat, "max_new_tokens": LLM_MAX_NEW_TOKENS,
                          "text": str(text), "templated": templated, "prompt_ids": ids})
    encodes = [{"text": text, "add_special_tokens": special,
                "ids": genai_tokenizer.encode(text, add_special_tokens=special).input_ids.data.tolist()[0]}
               for text in ("Hello world", "<s>user: hi</s>", "") for special in (True, False)]
    rows = [encodes[0]["ids"] + [2], [1, 2, 0, 5, 200, 255], list(range(3, 40))]
    decodes = [{"ids": row, "skip_special_tokens": skip,
                "text": genai_tokenizer.decode(row, skip_special_tokens=skip)} for row in rows for skip in (True, False)]
    expected = {"source": f"tests/data/llm/{LLM_SOURCE}", "chat_template": LLM_CHAT_TEMPLATE, "cases": cases,
                "encode": encodes, "decode": decodes, "openvino_genai": openvino_genai.__version__}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    del pipe
    _drop_model_files(out)
    del core


# ---------------------------------------------------------------- a tiny seq2seq folder with tokenizers

# tests/data/llm/<name> (vocab 256; t5: pad 0 = decoder start, eos 2; bart: bos 1, eos 2 = decoder start)
# -> the tokenizer built for it.
SEQ2SEQ_SOURCES = {"t5": "seq2seq_tokenizer", "bart": "llm_tokenizer"}


def seq2seq_tokenizer(work):
    """A SentencePiece Unigram model with the tiny T5's ids (pad 0, unk 1, eos 2) as a T5 fast tokenizer."""
    import sentencepiece as spm
    from transformers import T5TokenizerFast
    text = Path(work) / "seq2seq_corpus.txt"
    # Unigram training needs more distinct text than LLM_CORPUS to reach 256 pieces: seeded made-up words.
    rng = np.random.default_rng(SEED)
    syllables = ["ka", "lo", "mi", "ter", "an", "sol", "ve", "ru", "pin", "da", "os", "el", "quo", "ny", "bra"]
    words = ["".join(rng.choice(syllables, size=rng.integers(1, 4))) for _ in range(3000)]
    made_up = [" ".join(words[i:i + 12]) for i in range(0, len(words), 12)]
    text.write_text("\n".join(LLM_CORPUS + made_up), encoding="utf-8")
    prefix = str(Path(work) / "seq2seq_sp")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=prefix, model_type="unigram", vocab_size=256,
                                   character_coverage=1.0, pad_id=0, unk_id=1, eos_id=2, bos_id=-1,
                                   minloglevel=2, num_threads=1)
    return T5TokenizerFast(vocab_file=prefix + ".model", extra_ids=0, eos_token="</s>", unk_token="<unk>",
                           pad_token="<pad>", from_slow=True)


def build_seq2seq_folder(source_name: str, out: Path) -> None:
    """tests/data/llm/<source_name>'s encoder and decoder with tokenizer IRs, and optimum-intel's greedy text for
    LLM_PROMPTS."""
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer
    from optimum.intel import OVModelForSeq2SeqLM
    source = Path(__file__).resolve().parent.parent / "tests" / "data" / "llm" / source_name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in ("openvino_encoder_model.xml", "openvino_encoder_model.bin", "openvino_decoder_model.xml",
                 "openvino_decoder_model.bin", "config.json", "generation_config.json"):
        shutil.copy(source / name, out / name)
    with tempfile.TemporaryDirectory() as work:
        build = globals()[SEQ2SEQ_SOURCES[source_name]]
        hf = build(work, chat_template=False) if build is llm_tokenizer else build(work)
        tokenizer, detokenizer = convert_tokenizer(hf, with_detokenizer=True)
        import openvino_tokenizers
        core = ov.Core()
        core.add_extension(openvino_tokenizers._ext_path)
        ov_tokenizer = core.compile_model(tokenizer, "CPU", CPU_CONFIG)
        model = OVModelForSeq2SeqLM.from_pretrained(out, ov_config=LLM_CONFIG, compile=True)
        cases = []
        for prompt in LLM_PROMPTS:
            encoded = hf(prompt, return_tensors="pt")
            generated = model.generate(**encoded, max_new_tokens=LLM_MAX_NEW_TOKENS, do_sample=False, num_beams=1)
            ov_ids = _tokenizer_outputs(ov_tokenizer, [np.array([prompt])])["input_ids"][0]
            cases.append({"prompt": prompt, "max_new_tokens": LLM_MAX_NEW_TOKENS,
                          "prompt_ids": encoded["input_ids"][0].tolist(), "openvino_prompt_ids": ov_ids,
                          "generated_ids": generated[0].tolist(),
                          "text": hf.decode(generated[0], skip_special_tokens=True)})
    ov.save_model(tokenizer, out / "openvino_tokenizer.xml")
    ov.save_model(detokenizer, out / "openvino_detokenizer.xml")
    expected = {"source": f"tests/data/llm/{source_name}", "cases": cases}
    (out / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    del model
    _drop_model_files(out)


def _drop_model_files(out: Path) -> None:
    """The model IRs are those of the source folder (tests assemble the whole folder from both)."""
    for path in out.glob("openvino_*model.*"):
        path.unlink()


# ---------------------------------------------------------------- running OpenVINO

def _strings(tensor) -> list[str]:
    return [str(s) for s in np.asarray(tensor.str_data).reshape(-1)]


def _run(compiled, inputs):
    request = compiled.create_infer_request()
    result = request.infer(inputs)
    return {port.get_any_name(): result[port] for port in compiled.outputs}


def _tokenizer_outputs(compiled, inputs) -> dict | None:
    """The outputs by name; None when OpenVINO fails on the input (its BPETokenizer with an end-of-word suffix
    sizes its output by the input's bytes, which a string of one-character words overflows: an error, or with
    one thread outputs without rows)."""
    try:
        outputs = _run(compiled, inputs)
    except RuntimeError as exc:
        print(f"  openvino fails on {str(inputs)[:60]}: {' '.join(str(exc).split())[-120:]}", file=sys.stderr)
        return None
    if any(np.asarray(value).shape[:1] != (len(inputs[0]),) for value in outputs.values()):
        print(f"  openvino gives no rows for {str(inputs)[:60]} (its failed check, single-threaded)", file=sys.stderr)
        return None
    return {name: np.asarray(value).tolist() for name, value in outputs.items()}


def _detokenize(core, detok_xml, ids: list[list[int]]) -> list[str]:
    import openvino as ov
    compiled = core.compile_model(str(detok_xml), "CPU", CPU_CONFIG)
    texts = []
    for row in ids:
        request = compiled.create_infer_request()
        request.infer([np.asarray([row], dtype=np.int64).reshape(1, len(row))])
        texts.extend(_strings(request.get_output_tensor(0)))
    del ov
    return texts


def _detok_battery(hf, ids_single: list[list[int]]) -> list[list[int]]:
    """Each battery string's ids, plus id rows that exercise the decoder: every special token, ids of single
    bytes that are not valid UTF-8 alone, out-of-vocabulary ids."""
    rows = [list(r) for r in ids_single]
    vocab = len(hf.get_vocab())
    rows.append(sorted(set(hf.all_special_ids)) + rows[0])
    rows.append(list(range(min(vocab, 60))))
    rows.append(list(range(max(vocab - 40, 0), vocab)))
    rows.append([vocab + 5, 3, vocab + 100])
    rows.append([])
    return rows


# Families converted in fewer variants (their IRs hold a 240 KB character map each).
FAMILY_VARIANTS = {"sp_unigram_fast": ("default", "pair")}


def convert_variant(hf, name, variant, out: Path, core) -> dict:
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer
    options, hf_call = VARIANTS[variant]
    hf_tok = hf
    if variant == "left_trunc":
        hf_tok.padding_side, hf_tok.truncation_side = "left", "left"
    else:
        hf_tok.padding_side, hf_tok.truncation_side = "right", "right"
    converted = convert_tokenizer(hf_tok, **options)
    tokenizer, detokenizer = converted if isinstance(converted, tuple) else (converted, None)
    folder = out / name / variant
    folder.mkdir(parents=True, exist_ok=True)
    ov.save_model(tokenizer, folder / "openvino_tokenizer.xml")
    if detokenizer is not None:
        ov.save_model(detokenizer, folder / "openvino_detokenizer.xml")
    compiled = core.compile_model(str(folder / "openvino_tokenizer.xml"), "CPU", CPU_CONFIG)
    n_inputs = len(compiled.inputs)
    expected: dict = {"tokenizer": name, "variant": variant, "convert_options": options,
                      "battery": BATTERY, "inputs": n_inputs}
    if n_inputs == 1:
        expected["single"] = [_tokenizer_outputs(compiled, [np.array([s])]) for s in BATTERY]
        expected["batch"] = _tokenizer_outputs(compiled, [np.array(BATTERY[:-1])])
        expected["hf_ids"] = [hf_tok(s, **hf_call)["input_ids"] for s in BATTERY]
    else:
        firsts, seconds = BATTERY, BATTERY[:-1][::-1] + BATTERY[-1:]
        expected["pairs"] = [[a, b] for a, b in zip(firsts, seconds)]
        expected["single"] = [_tokenizer_outputs(compiled, [np.array([a]), np.array([b])])
                              for a, b in zip(firsts, seconds)]
        expected["batch"] = _tokenizer_outputs(compiled, [np.array(firsts[:-1]), np.array(seconds[:-1])])
        expected["hf_ids"] = [hf_tok(a, b)["input_ids"] for a, b in zip(firsts, seconds)]
    if detokenizer is not None:
        ids_single = [[i for i, m in zip(r["input_ids"][0], r["attention_mask"][0]) if m]
                      for r in expected["single"] if r is not None]
        rows = _detok_battery(hf_tok, ids_single)
        skip = options.get("skip_special_tokens", True)
        expected["detok_ids"] = rows
        expected["detok_text"] = _detokenize(core, folder / "openvino_detokenizer.xml", rows)
        expected["hf_text"] = [hf_tok.decode(r, skip_special_tokens=skip) if all(i < len(hf_tok) for i in r)
                               else None for r in rows]
    (folder / "expected.json").write_text(json.dumps(expected, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    return expected


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated tokenizer names")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/data/tokenizers"))
    parser.add_argument("--llm", action="store_true", help="build only the tiny LLM folder with tokenizers")
    parser.add_argument("--llm-out", default=str(Path(__file__).resolve().parent.parent / "tests/data/tokenizer_llm"))
    parser.add_argument("--seq2seq", action="store_true", help="build only the tiny seq2seq folder with tokenizers")
    parser.add_argument("--seq2seq-out",
                        default=str(Path(__file__).resolve().parent.parent / "tests/data/tokenizer_seq2seq"))
    args = parser.parse_args(argv)
    if args.seq2seq:
        for name in SEQ2SEQ_SOURCES:
            build_seq2seq_folder(name, Path(args.seq2seq_out) / name)
        return 0
    import openvino as ov
    import openvino_tokenizers
    core = ov.Core()
    core.add_extension(openvino_tokenizers._ext_path)
    if args.llm:
        build_llm_folder(Path(args.llm_out), core)
        return 0
    out = Path(args.out)
    names = [n for n in args.only.split(",") if n] or list(TOKENIZERS)
    failures = {}
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            build = TOKENIZERS[name]
            hf = build(work) if build.__code__.co_argcount else build()
            shutil.rmtree(out / name, ignore_errors=True)
            for variant in FAMILY_VARIANTS.get(name, VARIANTS):
                try:
                    convert_variant(hf, name, variant, out, core)
                    print(f"{name}/{variant}: ok")
                except Exception as exc:  # noqa: BLE001 - recorded, the other variants still run
                    failures[f"{name}/{variant}"] = f"{type(exc).__name__}: {exc}"
                    print(f"{name}/{variant}: FAILED {exc}", file=sys.stderr)
    if failures:
        (out / "failures.json").write_text(json.dumps(failures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
