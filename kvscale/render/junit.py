"""JUnit XML for CI systems: one test case per attention layer and check, plus model-level cases.

The document has the shape every JUnit consumer reads (Jenkins, GitLab, Azure, the GitHub test
reporters), the one of Ant's ``junit-10`` schema::

    testsuites(name, tests, failures, errors, skipped, time)
      testsuite(name, tests, failures, errors, skipped, time, timestamp)
        properties/property(name, value)
        testcase(classname, name, time)
          failure(message, type) | error(message, type) | skipped(message) | system-out

* classname is the layer name (``model.layers.0.self_attn.attn``), or ``checkpoint`` for model
  level checks; name is the check (``CHECKS``). Every problem code belongs to exactly one check.
* A case fails when one of its problems fails the run under the policy; so the report has
  failures exactly when ``kvscale inspect`` exits 1. Problems that do not fail (warnings without
  ``--strict``, allowed codes) are listed in the case's ``system-out``.
* A case is skipped when the check does not apply to the layer (no scale tensor to validate,
  not a per-head layer, an unquantized KV cache).
* A checkpoint that cannot be read becomes one ``checkpoint-readable`` case with an ``error``.

Everything checkpoint-controlled passes through ``xml_text``: XML 1.0 cannot hold most control
characters at all (not even as character references), so they are written as visible escapes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvscale._version import __version__
from kvscale.core.inspect import ScaleReport
from kvscale.engine.base import ResolvedLayer, Rule
from kvscale.policy import Policy
from kvscale.problems import CATALOGUE, Problem
from kvscale.render.escape import sanitize

MODEL_CLASSNAME = "checkpoint"


@dataclass(frozen=True)
class Check:
    name: str
    level: str  # "layer" or "model"
    question: str
    codes: tuple[str, ...]


CHECKS: tuple[Check, ...] = (
    Check(
        "engine-loads",
        "layer",
        "Does the engine load this layer's scales?",
        ("layer-refused", "unloadable-kv-tensor", "ignored-kv-tensor"),
    ),
    Check(
        "kv-scales-present",
        "layer",
        "Do calibrated k and v scales reach this layer?",
        ("default-scale-used", "scale-missing", "scales-not-loaded"),
    ),
    Check(
        "scale-names",
        "layer",
        "Is every scale tensor named so that the engine maps it to this layer, once?",
        (
            "unmapped-scale-name",
            "dropped-by-architecture",
            "legacy-kv-scale",
            "duplicate-scale-source",
        ),
    ),
    Check(
        "values-valid",
        "layer",
        "Is every scale the engine uses a positive, finite, normal number in its dtype?",
        (
            "scale-zero",
            "scale-negative",
            "scale-nan",
            "scale-infinite",
            "scale-subnormal",
            "scale-overflow",
            "scale-underflow",
        ),
    ),
    Check(
        "values-exact",
        "layer",
        "Does the engine use exactly the value stored on disk?",
        ("precision-lost", "unusual-scale-dtype"),
    ),
    Check(
        "values-calibrated",
        "layer",
        "Do the scales look calibrated rather than default 1.0?",
        ("scale-equals-default", "uncalibrated-q-prob"),
    ),
    Check(
        "per-head-layout",
        "layer",
        "Does a per-head layer hold one scale per kv head?",
        ("per-head-truncated", "per-head-broadcast"),
    ),
    Check(
        "checkpoint-readable",
        "model",
        "Can the checkpoint be read (files, headers, index, config)?",
        (),
    ),
    Check(
        "attention-layers-found",
        "model",
        "Are there attention layers to check?",
        ("no-attention-layers",),
    ),
    Check(
        "coverage",
        "model",
        "Do all attention layers carry KV scales, as the config declares?",
        ("coverage-gap", "declared-scheme-no-scales"),
    ),
    Check(
        "quant-config",
        "model",
        "Does the quantization config make the engine use the scales?",
        (
            "scales-unused",
            "scales-without-quant-config",
            "unknown-quant-method",
            "scales-in-cache",
            "layers-kept-unquantized",
            "skip-entry-matches-nothing",
            "v-scale-unused",
        ),
    ),
    Check(
        "files-consistent",
        "model",
        "Do the shards and the index agree?",
        ("index-missing-tensor", "duplicate-tensor"),
    ),
    Check(
        "engine-behaviour",
        "model",
        "Does the engine (and the chosen attention backend) use the scales it loads as written?",
        (
            "kv-scheme-ignored",
            "zero-scale-replaced",
            "per-head-refused",
            "host-device-disagree",
            "scales-on-unquantized-cache",
            "scales-ignored-by-backend",
            "shared-cache-scale-mismatch",
            "per-head-collapsed",
            "format-overridden-by-backend",
            "misleading-engine-log",
            "scales-never-used",
            "backend-refuses-scale",
            "backend-unsupported-dtype",
            "no-in-tree-backend",
            "nvfp4-convention-unknown",
            "nvfp4-block-scales-out-of-range",
        ),
    ),
    # Reported by `kvscale normalize`, not by inspect: no test case in inspect's JUnit report.
    Check(
        "normalizable",
        "normalize",
        "Can kvscale normalize write this layer's scales explicitly and reproduce the engine?",
        (
            "invalid-scale-value",
            "unsafe-tensor-name",
            "unmappable-name",
            "no-loadable-name",
            "name-collision",
            "layer-skipped",
            "kept-as-is",
            "kv-dtype-promoted",
            "name-repaired",
            "json-scales-disagree",
            "sglang-json-incomplete",
            "default-made-explicit",
            "fnuz-specific-copy",
            "no-kv-scale-parameters",
            "file-not-copied",
        ),
    ),
    # Reported by `kvscale calibrate`.
    Check(
        "calibratable",
        "calibrate",
        "Can kvscale calibrate compute and write this layer's scales from the model's activations?",
        (
            "fewer-tokens-than-asked",
            "layer-not-calibrated",
            "nonfinite-activations",
            "scales-replaced",
            "calibrated-scales-not-loaded",
        ),
    ),
)
CHECKS_BY_NAME: Mapping[str, Check] = {c.name: c for c in CHECKS}
LAYER_CHECKS: tuple[str, ...] = tuple(c.name for c in CHECKS if c.level == "layer")
MODEL_CHECKS: tuple[str, ...] = tuple(c.name for c in CHECKS if c.level == "model")
CODE_CHECK: Mapping[str, str] = {code: c.name for c in CHECKS for code in c.codes}
OTHER_CHECK = "other"
"""Where a code missing from CHECKS would go (a test keeps CHECKS complete)."""


def check_of(code: str) -> str:
    return CODE_CHECK.get(code, OTHER_CHECK)


# XML 1.0 Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
def _xml_char_ok(ch: str) -> bool:
    code = ord(ch)
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def xml_text(value: object) -> str:
    """Text XML 1.0 can carry: control, format and surrogate characters become ``\\xNN``
    escapes (``sanitize``), and anything else outside the XML Char range is escaped too."""
    text = sanitize(value)
    if all(_xml_char_ok(ch) for ch in text):
        return text
    return "".join(ch if _xml_char_ok(ch) else f"\\u{ord(ch):04x}" for ch in text)


def _problem_line(p: Problem, policy: Policy) -> str:
    where = f"{p.layer}: " if p.layer else ""
    if policy.fails(p):
        verdict = "fails the run"
    elif policy.allowed(p):
        verdict = "allowed by policy"
    else:
        verdict = "does not fail the run"
    return f"{p.severity.value} {p.code} ({verdict}): {where}{p.message}"


def _skip_reason(check: str, layer: ResolvedLayer, report: ScaleReport) -> str | None:
    """Why a check does not apply to a layer that has no problems for it (None: it applies)."""
    has_sources = bool(layer.sources) or bool(layer.shadowed)
    if check == "kv-scales-present":
        if layer.rule is Rule.UNQUANTIZED:
            return (
                f"the KV cache is not quantized (kv_cache_dtype {report.kv_cache_dtype}): "
                "the engine uses no KV scales"
            )
        if layer.rule is Rule.ERROR:
            return "the engine refuses this layer (see engine-loads)"
    if check in ("scale-names", "values-valid", "values-exact", "values-calibrated"):
        if not has_sources:
            return "no scale tensor for this layer in the checkpoint"
    if check == "per-head-layout" and layer.rule is not Rule.PER_HEAD:
        return f"not a per-head layer (rule {layer.rule.value})"
    return None


def _testcase(
    parent: ET.Element,
    classname: str,
    name: str,
    problems: Sequence[Problem],
    policy: Policy,
    skip_reason: str | None,
) -> tuple[bool, bool]:
    """Append one testcase; returns (failed, skipped)."""
    case = ET.SubElement(
        parent, "testcase", {"classname": xml_text(classname), "name": name, "time": "0"}
    )
    failing = [p for p in problems if policy.fails(p)]
    if failing:
        failure = ET.SubElement(
            case,
            "failure",
            {
                "message": xml_text("; ".join(f"{p.code}: {p.message}" for p in failing)),
                "type": ",".join(dict.fromkeys(p.code for p in failing)),
            },
        )
        body: list[str] = []
        for p in failing:
            body.append(xml_text(_problem_line(p, policy)))
            entry = CATALOGUE.get(p.code)
            if entry is not None:
                body.append(xml_text(f"  fix: {entry.fix}"))
        failure.text = "\n".join(body)
    elif not problems and skip_reason is not None:
        ET.SubElement(case, "skipped", {"message": xml_text(skip_reason)})
        return False, True
    passing = [p for p in problems if not policy.fails(p)]
    if passing:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(xml_text(_problem_line(p, policy)) for p in passing)
    return bool(failing), False


def _properties(suite: ET.Element, items: Mapping[str, object]) -> None:
    props = ET.SubElement(suite, "properties")
    for key, value in items.items():
        if value is None:
            continue
        ET.SubElement(props, "property", {"name": key, "value": xml_text(value)})


def _finish(suite: ET.Element, tests: int, failures: int, errors: int, skipped: int) -> None:
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))


def _suite_element(checkpoint: str, duration: float, timestamp: str | None) -> ET.Element:
    attrs = {"name": xml_text(f"kvscale inspect {checkpoint}"), "time": f"{duration:.3f}"}
    if timestamp is not None:
        attrs["timestamp"] = timestamp
    return ET.Element("testsuite", attrs)


def junit_suite(
    report: ScaleReport,
    policy: Policy,
    *,
    duration: float = 0.0,
    timestamp: str | None = None,
    policy_file: str | None = None,
) -> ET.Element:
    """One ``testsuite`` for an inspected checkpoint."""
    suite = _suite_element(report.checkpoint, duration, timestamp)
    _properties(
        suite,
        {
            "kvscale_version": __version__,
            "checkpoint": report.checkpoint,
            "quant_method": report.quant_method or "none",
            "engine_path": report.engine_path.value,
            "kv_cache_dtype": report.kv_cache_dtype,
            "platform": report.platform,
            "model_dtype": report.model_dtype,
            "strict": str(policy.strict).lower(),
            "fail_on": ",".join(sorted(policy.fail_on)) or None,
            "allow": ",".join(sorted(policy.allow)) or None,
            "policy_file": policy_file,
        },
    )
    layer_names = {layer.name for layer in report.layers}
    by_case: dict[tuple[str, str], list[Problem]] = defaultdict(list)
    for p in report.problems:
        check = check_of(p.code)
        owners = [name for name in dict.fromkeys((p.layer, *p.layers)) if name in layer_names]
        for owner in owners or [MODEL_CLASSNAME]:
            by_case[(owner, check)].append(p)

    tests = failures = skipped = 0

    def add(classname: str, check: str, skip: str | None) -> None:
        nonlocal tests, failures, skipped
        failed, was_skipped = _testcase(
            suite, classname, check, by_case.pop((classname, check), []), policy, skip
        )
        tests += 1
        failures += failed
        skipped += was_skipped

    for check in MODEL_CHECKS:
        add(MODEL_CLASSNAME, check, None)
    # Layer-level codes reported without a layer (or for a name that is not an attention
    # layer of this model) still get a case, at model level, under their own check.
    for classname, check in sorted(k for k in by_case if k[0] == MODEL_CLASSNAME):
        add(classname, check, None)
    for layer in report.layers:
        for check in LAYER_CHECKS:
            add(layer.name, check, _skip_reason(check, layer, report))
    _finish(suite, tests, failures, 0, skipped)
    return suite


def junit_error_suite(
    checkpoint: str,
    message: str,
    error_type: str,
    *,
    duration: float = 0.0,
    timestamp: str | None = None,
) -> ET.Element:
    """A checkpoint that could not be read: one ``checkpoint-readable`` case with an error."""
    suite = _suite_element(checkpoint, duration, timestamp)
    _properties(suite, {"kvscale_version": __version__, "checkpoint": checkpoint})
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": MODEL_CLASSNAME, "name": "checkpoint-readable", "time": "0"},
    )
    error = ET.SubElement(case, "error", {"message": xml_text(message), "type": error_type})
    error.text = xml_text(message)
    _finish(suite, 1, 0, 1, 0)
    return suite


def junit_document(suites: Sequence[ET.Element]) -> bytes:
    """The ``testsuites`` root around the given suites, as UTF-8 XML bytes."""
    root = ET.Element("testsuites", {"name": "kvscale"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time = 0.0
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        time += float(suite.get("time", "0"))
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{time:.3f}")
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
