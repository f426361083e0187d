"""Greedy decoding for an encoder-decoder folder as optimum-intel exports it (T5, BART): openvino_encoder_model.xml
and a stateful openvino_decoder_model.xml, with config.json and generation_config.json.

The encoder runs once on the prompt ids; the decoder starts from decoder_start_token_id and is fed its chosen
token each step (its KV cache in variables, carried by a session), with the encoder's hidden states and mask,
until max_new_tokens or an end-of-sequence id: transformers' greedy `generate` with no logits processors, which
is what optimum-intel's OVModelForSeq2SeqLM runs for these configs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from .generate import GenerationConfig, _read_json, check_prompt

ENCODER_XML, DECODER_XML = "openvino_encoder_model.xml", "openvino_decoder_model.xml"


def is_seq2seq(folder) -> bool:
    folder = Path(folder)
    return (folder / ENCODER_XML).exists() and (folder / DECODER_XML).exists()


def decoder_start_token_id(folder: Path) -> int:
    config = _read_json(folder / "config.json", required=True)
    generation = _read_json(folder / "generation_config.json", required=False) or {}
    start = generation.get("decoder_start_token_id", config.get("decoder_start_token_id"))
    if not isinstance(start, int):
        raise InputError(f"{folder}: no integer decoder_start_token_id in generation_config.json or config.json")
    return start


def _feeds(model, values: dict) -> dict:
    """The values the model takes, by input name, in its input types; an input not built here is an error."""
    feeds = {}
    for desc in model.inputs:
        if desc.name not in values:
            raise InputError(f"{model.path}: `generate` cannot build the input {desc.name!r} (it builds "
                             f"{', '.join(values)}; stateless seq2seq decoders are not supported)")
        feeds[desc.name] = values[desc.name]
    return feeds


def generate_seq2seq(folder, prompt, max_new_tokens: int, max_memory: int | None = None) -> list[int]:
    """The new token ids (the decoder start excluded) greedy decoding gives for the prompt ids."""
    from ..engine.loader import load

    folder = Path(folder)
    config = GenerationConfig.read(folder)
    prompt = check_prompt(prompt, config.vocab_size)
    encoder = load(folder / ENCODER_XML, max_memory=max_memory)
    decoder = load(folder / DECODER_XML, max_memory=max_memory)
    ids = np.array([prompt], dtype=np.int64)
    mask = np.ones_like(ids)
    encoded = encoder.run(_feeds(encoder, {"input_ids": ids, "attention_mask": mask}))
    if "last_hidden_state" not in encoded:
        raise InputError(f"{folder / ENCODER_XML} has no last_hidden_state output")
    hidden = encoded["last_hidden_state"]
    session = decoder.session()
    token, tokens = decoder_start_token_id(folder), []
    for _ in range(max_new_tokens):
        outputs = session.run(_feeds(decoder, {
            "input_ids": np.array([[token]], dtype=np.int64), "decoder_input_ids": np.array([[token]], dtype=np.int64),
            "encoder_hidden_states": hidden, "encoder_attention_mask": mask, "attention_mask": mask,
            "beam_idx": np.zeros(1, dtype=np.int32)}))
        if "logits" not in outputs:
            raise InputError(f"{folder / DECODER_XML} has no logits output")
        token = int(np.argmax(np.asarray(outputs["logits"]).reshape(-1, outputs["logits"].shape[-1])[-1]))
        tokens.append(token)
        if token in config.eos_token_ids:
            break
    return tokens
