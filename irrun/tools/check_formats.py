"""`irrun check` reports as CI tools read them: SARIF 2.1.0 (code scanning, editors) and JUnit XML.

SARIF places each result on the line of its layer's `<layer>` element, so a viewer opens the model file
at the layer; JUnit has one test case per file and one failure per error.
"""
from __future__ import annotations

import os
from pathlib import Path

from lxml import etree

from .. import __version__
from ..ir.xml import MAX_XML_BYTES, _parser
from .check import ERROR, Report
from .rule_classes import CLASS_NAMES, rule_class

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def layer_lines(path: str) -> dict[str, int]:
    """The line of each top-level `<layer>` element by layer id (empty when the file cannot be read)."""
    try:
        if os.path.getsize(path) > MAX_XML_BYTES:
            return {}
        root = etree.parse(path, _parser()).getroot()
    except (OSError, etree.XMLSyntaxError):
        return {}
    return {layer.get("id"): layer.sourceline for layer in root.iterfind("layers/layer")}


def _uri(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    if relative.startswith(".."):
        return Path(path).resolve().as_uri()
    return Path(relative).as_posix()


def _rule_descriptor(rule: str) -> dict:
    kind = rule_class(rule)
    text = f"{rule}: {CLASS_NAMES[kind.kind]}" + (f" ({kind.reason})" if kind.reason else "")
    return {"id": rule, "shortDescription": {"text": text},
            "properties": {"class": kind.kind}}


def sarif(reports: list[Report]) -> dict:
    """One SARIF run with every diagnostic of every report."""
    rules: dict[str, int] = {}
    results = []
    for report in reports:
        lines = layer_lines(report.file) if any(d.layer for d in report.diagnostics) else {}
        for d in report.diagnostics:
            index = rules.setdefault(d.rule, len(rules))
            location: dict = {"physicalLocation": {"artifactLocation": {"uri": _uri(report.file)}}}
            if d.layer is not None:
                line = lines.get(d.layer.id)
                if line:
                    location["physicalLocation"]["region"] = {"startLine": line}
                location["logicalLocations"] = [{"name": d.layer.name, "fullyQualifiedName": str(d.layer),
                                                 "kind": "element"}]
            message = d.text(report.file).split(f"{d.rule}: ", 1)[-1]
            results.append({"ruleId": d.rule, "ruleIndex": index, "level": d.severity,
                            "message": {"text": message}, "locations": [location],
                            "properties": {k: v for k, v in d.to_dict().items() if k not in ("message", "rule")}})
    driver = {"name": "irrun", "version": __version__,
              "rules": [_rule_descriptor(rule) for rule in rules]}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}


def junit(reports: list[Report]) -> str:
    """JUnit XML: a test case per file, a <failure> per error; warnings go to the case's system-out."""
    failures = sum(not r.conformant for r in reports)
    suites = etree.Element("testsuites", name="irrun check", tests=str(len(reports)), failures=str(failures))
    suite = etree.SubElement(suites, "testsuite", name="irrun check", tests=str(len(reports)),
                             failures=str(failures), errors="0", skipped="0")
    for report in reports:
        case = etree.SubElement(suite, "testcase", classname="irrun.check", name=report.file)
        for d, line in zip(report.diagnostics, report.lines()):
            if d.severity == ERROR:
                failure = etree.SubElement(case, "failure", type=d.rule, message=line)
                failure.text = line
        warnings = [line for d, line in zip(report.diagnostics, report.lines()) if d.severity != ERROR]
        if warnings:
            etree.SubElement(case, "system-out").text = "\n".join(warnings)
    return etree.tostring(suites, encoding="unicode", pretty_print=True)
