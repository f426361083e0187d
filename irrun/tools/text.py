"""Text in, text out for an exported folder: its tokenizer IRs (openvino_tokenizer.xml, openvino_detokenizer.xml,
as openvino-tokenizers converts them) around greedy generation, with openvino_genai.LLMPipeline's choices.

    tokenizer = irrun.text.Tokenizer("path/to/folder")
    tokenizer.encode("Hello")                          # token ids, special tokens added
    tokenizer.decode([1, 2, 3])                        # text, special tokens skipped
    irrun.text.generate("path/to/folder", "Hello", max_new_tokens=8)

LLMPipeline.generate(prompt) renders the chat template stored in the tokenizer's rt_info (when there is one and
apply_chat_template is on, its default) for one user message with the generation prompt, tokenizes that without
adding special tokens (else the prompt itself with them), decodes greedily until max_new_tokens or an
end-of-sequence id, and detokenizes the new tokens skipping special tokens. Turning special tokens off the way
openvino_genai does (it rewrites the IRs when it loads them) is done here by settings of the CombineSegments and
VocabDecoder ops of the loaded models. Templates are rendered with jinja2's sandbox, as Hugging Face renders
them (openvino_genai uses minja, a C++ reimplementation, and swaps some known templates for simplified ones).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import InputError
from .compare import OPENVINO_F32_CONFIG
from .generate import TOKENIZER_XML, generate_folder
from ..ir.xml import _parser

DETOKENIZER_XML = "openvino_detokenizer.xml"
# CombineSegments inputs fed by these op types carry the text; the other segments are special tokens (the rule
# openvino_genai's MakeAddSpecialTokensSatateful applies).
_TEXT_SEGMENT_SOURCES = {1: ("Add", "Truncate"), 0: ("Subtract",)}


def read_rt_info(xml_path) -> dict[str, str]:
    """The <rt_info> entries of an IR file (name -> value text) that have a value."""
    root = etree.fromstring(Path(xml_path).read_bytes(), _parser())
    section = root.find("rt_info")
    if section is None:
        return {}
    return {child.tag: child.get("value") for child in section if child.get("value") is not None}


class Tokenizer:
    """The folder's tokenizer and detokenizer IRs, run by irrun."""

    def __init__(self, folder, max_memory: int | None = None):
        from ..engine.loader import load

        self.folder = Path(folder)
        tokenizer_xml = self.folder / TOKENIZER_XML
        if not tokenizer_xml.exists():
            raise InputError(f"{self.folder} has no {TOKENIZER_XML} (export it with openvino-tokenizers installed)")
        self.tokenizer = load(tokenizer_xml, max_memory=max_memory)
        detokenizer_xml = self.folder / DETOKENIZER_XML
        self.detokenizer = load(detokenizer_xml, max_memory=max_memory) if detokenizer_xml.exists() else None
        self.rt_info = read_rt_info(tokenizer_xml)
        self.chat_template = self.rt_info.get("chat_template") or None
        self._combine = _ops_of(self.tokenizer, "CombineSegments")
        self._special_segments = [_special_segments(self.tokenizer, node) for node in self._combine]

    def token_id(self, name: str) -> int | None:
        """bos_token_id, eos_token_id or pad_token_id from the tokenizer's rt_info."""
        value = self.rt_info.get(name)
        try:
            return None if value in (None, "") else int(value)
        except ValueError:
            raise InputError(f"{self.folder / TOKENIZER_XML}: rt_info {name}={value!r} is not an integer") from None

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        for node, special in zip(self._combine, self._special_segments):
            node.op.dropped_segments = frozenset() if add_special_tokens else special
        outputs = self.tokenizer.run([np.array([text], dtype=object)])
        if "input_ids" not in outputs:
            raise InputError(f"{self.folder / TOKENIZER_XML} has no input_ids output")
        ids = np.asarray(outputs["input_ids"]).reshape(-1)
        mask = outputs.get("attention_mask")
        if mask is not None:
            ids = ids[np.asarray(mask).reshape(-1).astype(bool)]
        return [int(i) for i in ids]

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        if self.detokenizer is None:
            raise InputError(f"{self.folder} has no {DETOKENIZER_XML}")
        for node in _ops_of(self.detokenizer, "VocabDecoder"):
            node.op.skip_special = skip_special_tokens
        row = np.asarray([list(ids)], dtype=np.int64).reshape(1, len(ids))
        (text,) = self.detokenizer.run([row]).values()
        value = np.asarray(text).reshape(-1)[0]
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    def token_text(self, token_id: int | None) -> str:
        return "" if token_id is None else self.decode([token_id], skip_special_tokens=False)

    def apply_chat_template(self, prompt: str) -> str:
        """The chat template rendered for one user message, with the generation prompt."""
        from ..ops.tokenizer_base import text_library

        text_library("jinja2")
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

        def raise_exception(message):
            raise TemplateError(message)

        environment.globals["raise_exception"] = raise_exception
        try:
            template = environment.from_string(self.chat_template)
            return template.render(messages=[{"role": "user", "content": prompt}], add_generation_prompt=True,
                                   bos_token=self.token_text(self.token_id("bos_token_id")),
                                   eos_token=self.token_text(self.token_id("eos_token_id")),
                                   pad_token=self.token_text(self.token_id("pad_token_id")))
        except TemplateError as exc:
            raise InputError(f"{self.folder / TOKENIZER_XML}: the chat template does not render: "
                             f"{' '.join(str(exc).split())}") from None

    def prompt_ids(self, prompt: str, apply_chat_template: bool = True) -> list[int]:
        """The ids LLMPipeline feeds for `prompt`."""
        if apply_chat_template and self.chat_template:
            return self.encode(self.apply_chat_template(prompt), add_special_tokens=False)
        return self.encode(prompt, add_special_tokens=True)


def _ops_of(model, op_type: str) -> list:
    return [node for node in model.graph.nodes.values() if node.ref.type == op_type and node.op is not None]


def _special_segments(model, node) -> frozenset[int]:
    """Segments of a CombineSegments layer that hold special tokens, not the text."""
    special = set()
    for segment in range((len(node.inputs) - 1) // 3):
        sources = {port: model.graph.nodes[node.inputs[3 * segment + port][0]].ref.type
                   for port in (0, 1) if node.inputs[3 * segment + port] is not None}
        if not any(sources.get(port) in types for port, types in _TEXT_SEGMENT_SOURCES.items()):
            special.add(segment)
    return frozenset(special)


def tokenize(folder, text: str, add_special_tokens: bool = True) -> list[int]:
    return Tokenizer(folder).encode(text, add_special_tokens)


def detokenize(folder, ids, skip_special_tokens: bool = True) -> str:
    return Tokenizer(folder).decode(ids, skip_special_tokens)


def generate(folder, prompt: str, max_new_tokens: int, apply_chat_template: bool = True,
             max_memory: int | None = None) -> str:
    """The text LLMPipeline(folder).generate(prompt, max_new_tokens=...) gives with greedy decoding; for an
    encoder-decoder folder, optimum-intel's greedy generate on the tokenized prompt, decoded skipping special
    tokens."""
    from .seq2seq import generate_seq2seq, is_seq2seq

    tokenizer = Tokenizer(folder, max_memory=max_memory)
    if is_seq2seq(folder):
        tokens = generate_seq2seq(folder, tokenizer.encode(prompt), max_new_tokens, max_memory=max_memory)
    else:
        ids = tokenizer.prompt_ids(prompt, apply_chat_template)
        tokens = generate_folder(folder, ids, max_new_tokens, max_memory=max_memory).tokens
    return tokenizer.decode(tokens, skip_special_tokens=True)


def openvino_genai_text(folder, prompt: str, max_new_tokens: int, apply_chat_template: bool = True) -> str:
    """openvino_genai.LLMPipeline's greedy text for the same folder (f32 CPU settings), for --against openvino."""
    from .seq2seq import is_seq2seq

    if is_seq2seq(folder):
        raise InputError(f"{folder}: --against openvino runs LLMPipeline, which takes decoder folders only")
    try:
        import openvino_genai
    except ImportError:
        raise InputError("--against openvino with --prompt needs the openvino-genai package "
                         "(pip install openvino-genai)") from None
    pipe = openvino_genai.LLMPipeline(str(folder), "CPU", **OPENVINO_F32_CONFIG)
    config = pipe.get_generation_config()
    config.max_new_tokens = max_new_tokens
    config.apply_chat_template = apply_chat_template
    return str(pipe.generate(prompt, config))
