"""Inputs for debugging runs: input shape overrides, random inputs for what was not given."""
from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from ..errors import InputError
from ..ops.shapes import parse_partial_shape


_SHAPE_ITEM = re.compile(r"\s*([^\[\],]*?)\s*\[([^\]]*)\]\s*(?:,|$)")


def parse_shape_overrides(texts: Iterable[str]) -> dict[str | None, tuple[int, ...]]:
    """benchmark_app's `-shape` syntax: "input[1,3,224,224]", "a[1,3],b[2,8]" or "[1,3,8,8]" (no name:
    every input not named elsewhere). Dims are static ints. Raises InputError."""
    overrides: dict[str | None, tuple[int, ...]] = {}
    for text in texts:
        position = 0
        text = text.strip()
        if not text:
            raise InputError("--shape: empty value; expected NAME[d0,d1,...]")
        while position < len(text):
            match = _SHAPE_ITEM.match(text, position)
            if not match or match.end() == position:
                raise InputError(f"--shape {text!r}: expected NAME[d0,d1,...] (e.g. input[1,3,224,224])")
            name, dims_text = match.group(1) or None, match.group(2).strip()
            try:
                dims = tuple(int(d) for d in dims_text.split(",")) if dims_text else ()
            except ValueError:
                raise InputError(f"--shape {text!r}: dims must be non-negative integers; '?' and ranges are "
                                 f"for the model's declared shape, an override is static") from None
            if any(d < 0 for d in dims):
                raise InputError(f"--shape {text!r}: negative dim")
            if name in overrides:
                raise InputError(f"--shape: {name or 'the unnamed shape'} is given twice")
            overrides[name] = dims
            position = match.end()
    return overrides


def declared_shape(model, layer_id: str):
    """The Parameter's declared shape as (low, high) bounds (None: any rank) and its text."""
    node = model.graph.nodes[layer_id]
    text = node.layer.attrs.get("shape", "")
    try:
        bounds = parse_partial_shape(text)
    except ValueError:
        bounds = node.op.shape if node.op is not None else None
    return bounds, "[" + text.strip().strip("[]") + "]" if bounds is not None else "[...]"


def _fits(dims, bounds) -> bool:
    return bounds is None or (len(dims) == len(bounds) and all(
        low <= d and (high is None or d <= high) for d, (low, high) in zip(dims, bounds)))


def resolve_input_shapes(model, overrides: dict, given=()) -> tuple[dict[str, tuple], list[str]]:
    """The shape each input gets: its override, else its declared shape with every dynamic dim set to its
    lower bound (at least 1, at most its upper bound). An unnamed override applies to every input not named
    by another one and not in `given` (inputs given with values). Returns {input name: shape} and notes saying where a
    dynamic dim was chosen. Raises InputError for an unknown name, a misfit or an unresolvable dynamic rank."""
    by_name = {}
    for desc in model.inputs:
        for name in desc.names:
            by_name.setdefault(name, desc.name)
    named = {}
    for key, dims in overrides.items():
        if key is None:
            continue
        if key not in by_name:
            raise InputError(f"--shape names {key!r}, which is no model input "
                             f"(inputs: {', '.join(d.name for d in model.inputs)})")
        if by_name[key] in named:
            raise InputError(f"--shape gives input {by_name[key]!r} twice")
        named[by_name[key]] = dims
    shapes, notes = {}, []
    for desc, layer_id in zip(model.inputs, model.graph.parameters):
        bounds, declared = declared_shape(model, layer_id)
        dims = named.get(desc.name, None if desc.name in given else overrides.get(None))
        if desc.name in given and dims is None:
            continue
        if dims is not None:
            if not _fits(dims, bounds):
                raise InputError(f"--shape {desc.name}{_dims(dims)} does not fit the declared shape {declared} "
                                 f"of input {desc.name!r}")
            shapes[desc.name] = tuple(dims)
            continue
        if bounds is None:
            raise InputError(f"input {desc.name!r} has a dynamic rank; give its shape with --shape "
                             f"{desc.name}[d0,d1,...]")
        chosen = tuple(low if low == high else (min(max(low, 1), high) if high is not None else max(low, 1))
                       for low, high in bounds)
        if any(low != high for low, high in bounds):
            notes.append(f"input {desc.name!r} {declared}: using shape {_dims(chosen)} (choose with "
                         f"--shape {desc.name}[...])")
        shapes[desc.name] = chosen
    return shapes, notes


def _dims(dims) -> str:
    return "[" + ",".join(map(str, dims)) + "]"


def random_array(shape, element_type, rng: np.random.Generator) -> np.ndarray:
    """Random values for one input: floats standard normal, integers uniform in [0, 10) (safe as indices
    and sizes for small dims), booleans fair coin flips."""
    dtype = element_type.storage
    if dtype is None:
        raise InputError(f"cannot make random values of element type {element_type}")
    if element_type.is_float:
        array = rng.standard_normal(shape).astype(dtype)
        if element_type.name == "bf16":  # keep values exactly representable in bf16
            array = (array.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        return array
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(0, 10, size=shape).astype(dtype)


def fill_inputs(model, feeds: dict, *, random: bool, overrides: dict | None = None,
                seed: int | None = None) -> tuple[dict, list[str]]:
    """Complete `feeds` ({input name: array}) with random arrays for the inputs it lacks (when `random`),
    shaped by `overrides` (parse_shape_overrides) or the declared shapes; given inputs must agree with an
    override naming them. Returns the feeds and notes for the user."""
    overrides = overrides or {}
    feeds = named_feeds(model, feeds)
    shapes, notes = resolve_input_shapes(model, overrides, given=set(feeds))
    rng = np.random.default_rng(seed)
    for desc, layer_id in zip(model.inputs, model.graph.parameters):
        if desc.name in feeds:
            given = np.shape(feeds[desc.name])
            if desc.name in shapes and tuple(given) != shapes[desc.name]:
                raise InputError(f"input {desc.name!r} is given with shape {_dims(given)}, but --shape says "
                                 f"{_dims(shapes[desc.name])}")
            continue
        if not random:
            continue
        feeds[desc.name] = random_array(shapes[desc.name], model.infos[(layer_id, 0)].type, rng)
    if not random:
        notes = []
    return feeds, notes


def named_feeds(model, feeds: dict) -> dict:
    """Feeds keyed by each input's main name (accepting any of its names), as the CLI binds them."""
    alias = {name: desc.name for desc in model.inputs for name in desc.names}
    return {alias.get(key, key): value for key, value in feeds.items()}
