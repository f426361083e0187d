"""The op base class and the registry: (type, spec version) -> the one class that defines that op."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import InvalidAttributeError, ShapeError
from ..ir.types import ElementType
from .attrs import REQUIRED, Attr, SpecValueError
from .missing_attrs import UNKNOWN, openvino_reads_missing

Shape = tuple  # of int (static) or None (dynamic); a None shape means dynamic rank


@dataclass(frozen=True)
class TensorInfo:
    """What is known of a tensor before running: shape, element type, and its value when constant."""

    shape: Shape | None
    type: ElementType
    value: np.ndarray | None = None
    # Shape arithmetic whose value is partly known (ShapeOf of a partly dynamic shape, Gather, Concat): each
    # element, flattened, an int or None. Only the checker fills it (irrun/ops/partial.py).
    partial: tuple | None = None
    # the output of a Constant layer itself (OpenVINO reads some values only from those); not part of equality
    literal: bool = field(default=False, compare=False)

    def __init__(self, shape, type, value=None, partial=None, literal=False):  # noqa: A002 (the field's name)
        # what the dataclass would write, without its frozen __init__'s object.__setattr__ per field (three times
        # slower: a run infers thousands of value-dependent steps)
        fields = self.__dict__
        fields["shape"], fields["type"], fields["value"], fields["partial"], fields["literal"] = \
            shape, type, value, partial, literal

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and None not in self.shape


@dataclass(frozen=True)
class Context:
    """What ops may need beyond their attributes: the model file, its weights, the memory budget, and the
    engine's body runner (`graph(doc, context)`, `model(graph, budget, parameter_infos)`) that Loop, If and
    TensorIterator build and run their bodies with."""

    file: str | None = None
    weights: object = None
    budget: object = None
    bodies: object = None


class Op:
    """One op version. Subclasses declare Attr fields, `infer` and `run`."""

    type: ClassVar[str]
    version: ClassVar[int]
    num_inputs: ClassVar[tuple[int, int]] = (1, 1)
    attributes: ClassVar[dict[str, Attr]] = {}
    foldable: ClassVar[bool] = True  # may be computed at load when all its inputs are constant
    # Outputs nothing reads in this run: an op may return None for them instead of computing them.
    unused_outputs: frozenset = frozenset()
    # Attribute values the spec forbids, read as OpenVINO reads them (attr.value.spec: the runtime refuses them).
    spec_notes: list[str] = []

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.attributes = {
            name: value for klass in reversed(cls.__mro__) for name, value in vars(klass).items()
            if isinstance(value, Attr)
        }

    def __init__(self, values: dict, context: Context, layer=None):
        self.__dict__.update(values)
        self.context = context
        self.layer = layer

    @classmethod
    def bind(cls, layer, context: Context) -> tuple["Op", list[str]]:
        """Parse the layer's <data> into an op instance; returns it and the unknown attribute names."""
        values, consumed, spec_notes = {}, set(), []
        for name, attr in cls.attributes.items():
            present = [n for n in attr.xml_names if n in layer.attrs]
            if not present:
                read = openvino_reads_missing(cls.type, cls.version, name) if attr.default is REQUIRED else UNKNOWN
                if read is None:
                    raise InvalidAttributeError(f"required attribute '{name}' is missing (OpenVINO reads the "
                                                f"file with a default irrun does not take)", rule="attr.value.spec")
                if read is not UNKNOWN:
                    values[name] = attr.parse(read)
                    spec_notes.append(f"required attribute '{name}' is missing (OpenVINO reads {read})")
                    continue
                if attr.default is REQUIRED:
                    raise InvalidAttributeError(f"required attribute '{name}' is missing", rule="attr.missing")
                values[name] = attr.default
                continue
            consumed.update(present)
            text = layer.attrs[present[0]]
            try:
                values[name] = attr.parse(text)
            except SpecValueError as exc:
                values[name] = exc.value
                spec_notes.append(f"attribute '{present[0]}': {exc}")
            except ValueError as exc:
                raise InvalidAttributeError(f"attribute '{present[0]}': {exc}", rule="attr.value") from None
        unknown = [name for name in layer.attrs if name not in consumed]
        op = cls(values, context, layer)
        op.spec_notes = spec_notes
        return op, unknown

    def check_inputs(self, count: int) -> None:
        low, high = self.num_inputs
        if not low <= count <= high:
            expected = str(low) if low == high else f"{low} to {high}"
            raise ShapeError(f"has {count} inputs, expects {expected}", rule="port.count")

    def check_output_count(self, count: int) -> None:
        """Ops whose output count comes from data (Split, VariadicSplit) may not exceed the layer's ports."""
        declared = len(self.layer.outputs) if self.layer is not None else None
        if declared is not None and count > declared:
            raise ShapeError(f"would produce {count} outputs; the layer declares {declared} output ports",
                             rule="port.count")

    def reserve(self, nbytes: int, what: str) -> None:
        """Check a kernel's temporary allocation against the memory budget before making it."""
        if self.context.budget is not None:
            self.context.budget.check(int(nbytes), what)

    def infer(self, inputs: list[TensorInfo]) -> list[TensorInfo]:
        raise NotImplementedError

    def run(self, inputs: list[np.ndarray], in_infos: list[TensorInfo], out_infos: list[TensorInfo]) -> list[np.ndarray]:
        """Compute the outputs; the infos are what inference gave for these inputs (static shapes)."""
        raise NotImplementedError


def same_buffer(in_infos, out_infos, port: int = 0) -> bool:
    """Output 0 can live in input `port`'s array: same shape and storage dtype."""
    a, b = in_infos[port], out_infos[0]
    return a.shape is not None and tuple(a.shape) == tuple(b.shape) and a.type.storage == b.type.storage


class ValueDependentOp(Op):
    """An op whose output shapes depend on its input values (NMS-style selections): `infer` computes the
    outputs whenever every input value is known (at run time it is handed the actual arrays), and `run`
    returns them."""

    def run(self, inputs, in_infos, out_infos):
        if all(info.value is not None for info in out_infos):
            return [np.asarray(info.value) for info in out_infos]
        infos = [TensorInfo(a.shape, i.type, a) for a, i in zip(inputs, in_infos)]
        return [np.asarray(info.value) for info in self.infer(infos)]


REGISTRY: dict[tuple[str, int], type[Op]] = {}


def op(type_name: str, version: int):
    """Register a class as the definition of op `type_name`-`version`."""

    def register(cls):
        key = (type_name, version)
        if key in REGISTRY:
            raise RuntimeError(f"{type_name}-{version} is defined twice")
        cls.type, cls.version = key
        REGISTRY[key] = cls
        return cls

    return register


def lookup(type_name: str, version: int | None) -> type[Op] | None:
    return REGISTRY.get((type_name, version))


# Ops of OpenVINO extensions (layers with version="extension"), keyed by type: they have no opset version.
EXTENSION_REGISTRY: dict[str, type[Op]] = {}


def extension_op(type_name: str):
    """Register a class as the definition of the extension op `type_name`."""

    def register(cls):
        if type_name in EXTENSION_REGISTRY:
            raise RuntimeError(f"extension op {type_name} is defined twice")
        cls.type, cls.version = type_name, None
        EXTENSION_REGISTRY[type_name] = cls
        return cls

    return register


def supported_ops() -> list[tuple[str, int]]:
    return sorted(REGISTRY)
