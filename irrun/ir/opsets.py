"""Which op version a layer's (type, opset name) selects, with OpenVINO's legacy names and special cases."""
from __future__ import annotations

from .opset_tables import OPSETS

LEGACY_NAMES = {"relu": "Relu", "prelu": "PRelu", "softmax": "Softmax"}

# OpenVINO reads these (opset name, type) pairs from another opset.
_OPSET_OVERRIDES = {
    ("opset1", "MVN"): "opset2",
    ("opset1", "ROIPooling"): "opset2",
    ("opset1", "ReorgYolo"): "opset2",
}
# Listed in OpenVINO's opset headers, refused by its IR reader.
_READER_REFUSES = {("opset2", "Xor"), ("opset3", "Xor")}
_EXPERIMENTAL_OPSETS = ("experimental", "extension")
_EXPERIMENTAL_TYPES = ("GRUCell", "RNNCell", "Proposal")

# The spec names an op version after the first opset that holds it (C++ ov::op::v0::Gelu is Gelu-2).
_SPEC_VERSION = {}
for _opset in sorted(OPSETS, key=lambda name: int(name[5:])):
    for _type, _namespace in OPSETS[_opset].items():
        _SPEC_VERSION.setdefault((_type, _namespace), int(_opset[5:]))

# Op versions whose OpenVINO C++ class carries another version than the opset that first lists it (beyond the
# v0 classes of opset1): ov::op::v3::ScatterNDUpdate first appears in opset4, so the spec and irrun call it
# ScatterNDUpdate-4. Each is only OpenVINO's naming of one op, not a missing version.
CLASS_VERSIONS = {(_type, _version): _namespace for (_type, _namespace), _version in _SPEC_VERSION.items()
                  if _namespace not in (0, _version)}


def openvino_class_note(type_name: str, version: int | None) -> str | None:
    """"OpenVINO's v3 class" for ScatterNDUpdate-4 and the like; None where the versions agree."""
    namespace = CLASS_VERSIONS.get((type_name, version))
    return None if namespace is None else f"OpenVINO's v{namespace} class"


def first_listed(type_name: str) -> str:
    """", first listed in opset4 (OpenVINO's v3 class)" for a known type; "" for an unknown one."""
    versions = sorted(v for (t, _), v in _SPEC_VERSION.items() if t == type_name)
    if not versions:
        return ""
    note = openvino_class_note(type_name, versions[0])
    return f" (first listed in opset{versions[0]}{', ' + note if note else ''})"


# Canonical spelling of every known type, keyed by its lower-case form.
_CANONICAL = {name.lower(): name for table in OPSETS.values() for name in table}


def canonical_type(type_name: str) -> str:
    """Types match case-insensitively, except that a weights-backed constant is spelled exactly `Const`:
    OpenVINO refuses `const` and reads `Constant` without its data."""
    if type_name == "Const":
        return "Constant"
    key = type_name.lower()
    if key == "const":
        return type_name
    return LEGACY_NAMES.get(key) or _CANONICAL.get(key, type_name)


def resolve(type_name: str, opset: str) -> tuple[str, int | None]:
    """(canonical type, spec op version), the version None when the opset does not contain the type."""
    op_type = canonical_type(type_name)
    if op_type.lower() == "constant" and type_name != "Const":
        return type_name, None
    opset = opset.strip()
    if opset in _EXPERIMENTAL_OPSETS and (op_type.startswith("ExperimentalDetectron") or op_type in _EXPERIMENTAL_TYPES):
        opset = "opset6"
    if (opset, op_type) in _READER_REFUSES:
        return op_type, None
    opset = _OPSET_OVERRIDES.get((opset, op_type), opset)
    namespace = OPSETS.get(opset, {}).get(op_type)
    return op_type, None if namespace is None else _SPEC_VERSION[(op_type, namespace)]


def is_known_opset(opset: str) -> bool:
    return opset in OPSETS or opset in _EXPERIMENTAL_OPSETS


def opset_op_versions() -> dict[tuple[str, int], list[str]]:
    """Every (type, spec op version) OpenVINO's opsets name, with the opsets that hold it, in opset order."""
    held: dict[tuple[str, int], list[str]] = {}
    for opset in sorted(OPSETS, key=lambda name: int(name[5:])):
        for op_type, namespace in OPSETS[opset].items():
            if (opset, op_type) not in _READER_REFUSES:
                held.setdefault((op_type, _SPEC_VERSION[(op_type, namespace)]), []).append(opset)
    return held
