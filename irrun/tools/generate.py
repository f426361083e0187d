"""Greedy decoding for a decoder LLM folder as optimum-intel exports it (openvino_model.xml + config.json).

The model is fed the way optimum-intel feeds it, from its input names: `input_ids`, plus `attention_mask`
(ones over past + new tokens), `position_ids` and `cache_position` (positions of the new tokens), `beam_idx`
(identity: batch 1) and `token_type_ids` (zeros) when the model takes them. A stateful export keeps its KV
cache in variables, carried by a session; a stateless one (`stateful=False`) takes `past_key_values.*`
inputs and returns `present.*` outputs, which are fed back here.

    result = generate("path/to/folder", [1, 2, 3], max_new_tokens=8)
    result.tokens                  # the new token ids (greedy; stops after an end-of-sequence id)

With `against=OpenVINODecoder(folder)`, OpenVINO runs side by side and each step records the max logit
difference and whether both choose the same token (the irrun token is the one fed back)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import InputError

MODEL_XML = "openvino_model.xml"
TOKENIZER_XML = "openvino_tokenizer.xml"
PAST_PREFIX, PRESENT_PREFIX = "past_key_values", "present"


@dataclass(frozen=True)
class GenerationConfig:
    """What config.json (and generation_config.json, which wins) say about decoding."""

    vocab_size: int | None
    eos_token_ids: frozenset[int]

    @classmethod
    def read(cls, folder: Path) -> "GenerationConfig":
        config = _read_json(folder / "config.json", required=True)
        generation = _read_json(folder / "generation_config.json", required=False) or {}
        eos = generation.get("eos_token_id", config.get("eos_token_id"))
        eos_ids = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        vocab = config.get("vocab_size")
        if vocab is None and isinstance(config.get("text_config"), dict):
            vocab = config["text_config"].get("vocab_size")
        if not all(isinstance(i, int) for i in eos_ids) or (vocab is not None and not isinstance(vocab, int)):
            raise InputError(f"{folder / 'config.json'}: eos_token_id and vocab_size must be integers")
        return cls(vocab, frozenset(eos_ids))


def _read_json(path: Path, required: bool) -> dict | None:
    if not path.exists():
        if required:
            raise InputError(f"{path} does not exist (an optimum-intel export folder has one)")
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} does not hold a JSON object")
    return data


@dataclass(frozen=True)
class InputSpec:
    name: str
    dtype: np.dtype
    shape: tuple | None  # None dims: dynamic


def _past_name_to_present(name: str) -> str:
    return PRESENT_PREFIX + name[len(PAST_PREFIX):]


class StepFeeder:
    """Builds each step's inputs for batch 1 from the model's input names, and carries an explicit KV cache
    for stateless exports."""

    BUILT = ("input_ids", "attention_mask", "position_ids", "cache_position", "beam_idx", "token_type_ids")

    def __init__(self, inputs: list[InputSpec], where: str):
        self.inputs = inputs
        names = [spec.name for spec in inputs]
        if "input_ids" not in names:
            raise InputError(f"{where}: the model has no input_ids input (inputs: {', '.join(names)}); "
                             f"`generate` needs a decoder LLM")
        unknown = [n for n in names if n not in self.BUILT and not n.startswith(PAST_PREFIX)]
        if unknown:
            raise InputError(f"{where}: `generate` cannot build the model's input {unknown[0]!r} (it builds "
                             f"{', '.join(self.BUILT)} and past_key_values.*; seq2seq decoders need their "
                             f"encoder's outputs)")
        self.reset()

    def reset(self) -> None:
        self.length = 0
        self.past = {spec.name: self._empty_past(spec) for spec in self.inputs if spec.name.startswith(PAST_PREFIX)}

    @staticmethod
    def _empty_past(spec: InputSpec) -> np.ndarray:
        if spec.shape is None:
            raise InputError(f"input {spec.name!r} has a dynamic rank; cannot start an empty KV cache")
        dims = [(1 if i == 0 else 0) if d is None else d for i, d in enumerate(spec.shape)]
        return np.zeros(dims, dtype=spec.dtype)

    def feeds(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        count = ids.shape[1]
        positions = np.arange(self.length, self.length + count)
        values = {"input_ids": ids, "attention_mask": np.ones((1, self.length + count)),
                  "position_ids": positions[None], "cache_position": positions, "beam_idx": np.zeros(1),
                  "token_type_ids": np.zeros((1, count))}
        feeds = {}
        for spec in self.inputs:
            feeds[spec.name] = self.past[spec.name] if spec.name in self.past else \
                values[spec.name].astype(spec.dtype)
        return feeds

    def advance(self, count: int, outputs: dict[str, np.ndarray]) -> None:
        self.length += count
        for name in self.past:
            present = _past_name_to_present(name)
            if present not in outputs:
                raise InputError(f"the model has input {name!r} but no output {present!r} to carry it")
            self.past[name] = outputs[present]


def _logits(outputs: dict[str, np.ndarray], where: str) -> np.ndarray:
    """The last position's logits, [vocab], from the `logits` output ([1, T, vocab] or [1, vocab])."""
    if "logits" not in outputs:
        raise InputError(f"{where}: the model has no `logits` output (outputs: {', '.join(outputs)})")
    logits = outputs["logits"]
    if logits.ndim not in (2, 3) or logits.shape[0] != 1:
        raise InputError(f"{where}: logits of shape {list(logits.shape)}, expected [1, tokens, vocab]")
    return logits.reshape(-1, logits.shape[-1])[-1]


class IrrunDecoder:
    """irrun running the folder's model, through a session (state carried between steps)."""

    def __init__(self, model):
        self.model = model
        where = str(model.path)
        self.feeder = StepFeeder([InputSpec(d.name, np.dtype(_storage(d.element_type)), d.shape)
                                  for d in model.inputs], where)
        self.runner = model.session() if hasattr(model, "session") else model
        self.where = where

    def reset(self) -> None:
        self.feeder.reset()
        if hasattr(self.runner, "reset_state"):
            self.runner.reset_state()

    def step(self, ids: np.ndarray) -> np.ndarray:
        outputs = self.runner.run(self.feeder.feeds(ids))
        self.feeder.advance(ids.shape[1], outputs)
        return _logits(outputs, self.where)


def _storage(element_type: str):
    from ..ir.types import element_type as lookup

    et = lookup(element_type)
    if et is None or et.storage is None:
        raise InputError(f"input element type {element_type} cannot be fed by `generate`")
    return et.storage


class OpenVINODecoder:
    """OpenVINO's CPU plugin (f32: compare.OPENVINO_F32_CONFIG) on the same file, fed the same way."""

    def __init__(self, xml_path, threads: int = 1):
        from .compare import import_openvino, openvino_config

        ov = import_openvino()
        core = ov.Core()
        model = core.read_model(str(xml_path))
        self.compiled = core.compile_model(model, "CPU", openvino_config(threads))
        self.request = self.compiled.create_infer_request()
        specs = []
        for port in self.compiled.inputs:
            shape = port.get_partial_shape()
            dims = None if shape.rank.is_dynamic else tuple(d.get_length() if d.is_static else None for d in shape)
            specs.append(InputSpec(port.get_any_name(), np.dtype(port.get_element_type().to_dtype()), dims))
        self.where = f"{xml_path} (openvino)"
        self.feeder = StepFeeder(specs, self.where)

    def reset(self) -> None:
        self.feeder.reset()
        self.request.reset_state()

    def step(self, ids: np.ndarray) -> np.ndarray:
        results = self.request.infer(self.feeder.feeds(ids))
        outputs = {port.get_any_name(): np.array(results[port]) for port in self.compiled.outputs}
        self.feeder.advance(ids.shape[1], outputs)
        return _logits(outputs, self.where)


@dataclass
class Step:
    """One decoding step: the token irrun chose and, with a reference, the reference's token and the max
    |irrun - reference| over the step's last-position logits."""

    index: int
    fed: int                      # tokens fed this step (the prompt at step 0, then 1)
    token: int
    reference_token: int | None = None
    max_logit_diff: float | None = None

    @property
    def agree(self) -> bool | None:
        return None if self.reference_token is None else self.token == self.reference_token


@dataclass
class Generation:
    prompt: list[int]
    tokens: list[int] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    stopped_by_eos: bool = False

    @property
    def all_agree(self) -> bool:
        return all(step.agree is not False for step in self.steps)


def read_folder(folder) -> tuple[Path, GenerationConfig]:
    """The folder's decoder model path (openvino_model.xml) and its generation config."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder} is not a directory (expected an optimum-intel export folder)")
    xml = folder / MODEL_XML
    if not xml.exists():
        raise InputError(f"{folder} has no {MODEL_XML} (expected an optimum-intel decoder export)")
    return xml, GenerationConfig.read(folder)


def check_prompt(ids, vocab_size: int | None) -> list[int]:
    ids = [int(i) for i in ids]
    if not ids:
        raise InputError("the prompt is empty: give at least one token id")
    if vocab_size is not None:
        bad = [i for i in ids if not 0 <= i < vocab_size]
        if bad:
            raise InputError(f"token id {bad[0]} is outside the vocabulary [0, {vocab_size})")
    return ids


def generate(decoder, config: GenerationConfig, prompt, max_new_tokens: int, against=None,
             on_step: Callable[[Step], None] | None = None) -> Generation:
    """Greedy decoding: feed the prompt, then each chosen token, until `max_new_tokens` or an eos id.
    `decoder` and `against` have `reset()` and `step(ids [1, n] int64) -> last logits [vocab]`."""
    prompt = check_prompt(prompt, config.vocab_size)
    if max_new_tokens < 0:
        raise InputError("max_new_tokens must be at least 0")
    result = Generation(prompt)
    decoder.reset()
    if against is not None:
        against.reset()
    ids = np.array([prompt], dtype=np.int64)
    for index in range(max_new_tokens):
        logits = decoder.step(ids)
        token = int(np.argmax(logits))
        step = Step(index, ids.shape[1], token)
        if against is not None:
            reference = against.step(ids)
            if reference.shape != logits.shape:
                raise InputError(f"step {index}: irrun logits {list(logits.shape)}, openvino {list(reference.shape)}")
            step.reference_token = int(np.argmax(reference))
            step.max_logit_diff = float(np.max(np.abs(logits.astype(np.float64) - reference.astype(np.float64)),
                                               initial=0.0))
        result.steps.append(step)
        result.tokens.append(token)
        if on_step is not None:
            on_step(step)
        if token in config.eos_token_ids:
            result.stopped_by_eos = True
            break
        ids = np.array([[token]], dtype=np.int64)
    return result


def generate_folder(folder, prompt, max_new_tokens: int, against_openvino: bool = False,
                    max_memory: int | None = None, on_step=None) -> Generation:
    """`generate` on an optimum-intel folder: irrun, and OpenVINO beside it when `against_openvino`."""
    from ..engine.loader import load

    xml, config = read_folder(folder)
    prompt = check_prompt(prompt, config.vocab_size)
    decoder = IrrunDecoder(load(xml, max_memory=max_memory))
    reference = OpenVINODecoder(xml) if against_openvino else None
    return generate(decoder, config, prompt, max_new_tokens, reference, on_step)
