#!/usr/bin/env python3
"""Checks specs/protocol-declaration-v1.schema.json against the declarations.

Every specs/protocols/*.json and examples/protocols/*.json must validate (and
cite only requirements it lists), a few valid declarations built here must
validate too (encodings the seeds do not use), and broken variants built here
must be rejected. One line per check; exit 1 on any failure, 2 when a tool
is missing. Needs the jsonschema package (pip install jsonschema).
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("check-declaration-schema: needs the jsonschema package (pip install jsonschema)", file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "specs", "protocol-declaration-v1.schema.json")
failures = 0


def report(ok, name, detail=""):
    global failures
    if not ok:
        failures += 1
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))


def refuse_duplicates(pairs):
    # json.load keeps the last of a repeated name silently; PD-FILE-3 refuses it.
    names = [k for k, _ in pairs]
    for k in names:
        if names.count(k) > 1:
            raise ValueError("member %r is repeated" % k)
    return dict(pairs)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=refuse_duplicates)


def describe(e):
    where = "/".join(str(p) for p in e.absolute_path) or "(top)"
    return "%s: %s" % (where, e.message[:120])


def leaves(error):
    # oneOf/anyOf keep the branches' errors in context; the leaves say which rule failed.
    if error.context:
        for c in error.context:
            yield from leaves(c)
    else:
        yield error


def first_error(validator, document):
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return describe(errors[0]) if errors else None


def expected_error(validator, document, path, keyword, mentions):
    """The first leaf error at or under path, of keyword, whose message mentions `mentions`, else None."""
    for error in validator.iter_errors(document):
        for leaf in leaves(error):
            if list(leaf.absolute_path)[:len(path)] == path and leaf.validator == keyword and mentions in leaf.message:
                return leaf
    return None


def cited(node, out):
    """Every "requirement" value in the declaration, except inside the requirements list."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "requirement" and isinstance(v, str):
                out.append(v)
            elif k != "requirements":
                cited(v, out)
    elif isinstance(node, list):
        for v in node:
            cited(v, out)
    return out


def check_citations(name, doc):
    # PD-REQ-2 and -3, which JSON Schema cannot say.
    listed = [r["id"] for r in doc.get("requirements", [])]
    repeated = sorted({i for i in listed if listed.count(i) > 1})
    report(not repeated, name + " requirement IDs unique", ", ".join(repeated))
    if "requirements" in doc:
        missing = sorted(set(cited(doc, [])) - set(listed))
        report(not missing, name + " cites only listed requirements", ", ".join(missing))


def main():
    schema = load(SCHEMA)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        report(True, "schema is valid draft 2020-12")
    except jsonschema.SchemaError as e:
        report(False, "schema is valid draft 2020-12", e.message[:200])
        return
    validator = jsonschema.Draft202012Validator(schema)

    seeds = {}
    files = sorted(glob.glob(os.path.join(ROOT, "specs", "protocols", "*.json")))
    files += sorted(glob.glob(os.path.join(ROOT, "examples", "protocols", "*.json")))
    report(bool(files), "declarations found", "%d files" % len(files))
    for path in files:
        rel = os.path.relpath(path, ROOT)
        try:
            doc = load(path)
        except ValueError as e:
            report(False, rel + " is JSON", str(e))
            continue
        error = first_error(validator, doc)
        report(error is None, rel + " validates", error or "")
        name_ok = doc.get("name") == os.path.basename(path)[:-len(".json")]
        report(name_ok, rel + " is named for its file", "" if name_ok else "name %r" % doc.get("name"))
        check_citations(rel, doc)
        seeds[os.path.basename(path)[:-len(".json")]] = doc

    for name, doc in valid_variants():
        error = first_error(validator, doc)
        report(error is None, "accepts " + name, error or "")

    base = {k: seeds[k] for k in ("motionlink-v1", "keepcalm-json", "attitude-stream") if k in seeds}
    if len(base) < 3:
        report(False, "broken variants", "need the three seed declarations in specs/protocols")
    else:
        for name, doc, path, keyword, mentions in broken_variants(base):
            # Rejected, and by the rule meant: a variant must not pass for an unrelated reason.
            leaf = expected_error(validator, doc, path, keyword, mentions)
            if leaf is not None:
                report(True, "rejects " + name, "(" + describe(leaf) + ")")
            else:
                other = first_error(validator, doc)
                report(False, "rejects " + name, "accepted" if other is None else "rejected elsewhere: " + other)

    # The parser agrees with the schema: it accepts what the schema accepts and refuses, with
    # FILE:LINE:COLUMN and exit 65, what the schema refuses (KINETRACE=path/to/kinetrace, when given).
    kinetrace = os.environ.get("KINETRACE")
    if kinetrace:
        with tempfile.TemporaryDirectory(prefix="kinetrace-declarations-") as tmp:
            def check(doc):
                path = os.path.join(tmp, "d.json")
                with open(path, "w") as f:
                    json.dump(doc, f, indent=2, ensure_ascii=False)
                run = subprocess.run([kinetrace, "protocol", "check", path], capture_output=True, text=True, timeout=60)
                return run.returncode, run.stderr.strip()
            for name, doc in valid_variants():
                status, err = check(doc)
                report(status == 0, "kinetrace accepts " + name, err)
            if len(base) == 3:
                for name, doc, _, _, _ in broken_variants(base):
                    status, err = check(doc)
                    placed = re.match(r"^kinetrace: error: .*d\.json:\d+:\d+: ", err) is not None and "\n" not in err
                    report(status == 65 and placed, "kinetrace refuses " + name, "exit %d: %s" % (status, err[:160]))

    print("check-declaration-schema: %s" % ("all checks passed" if failures == 0 else "%d failed" % failures))


def valid_variants():
    """Declarations of what the seeds do not use: OSC, text, a length prefix, checks other than CRC-32."""
    osc = {
        "kinetrace_protocol": 1, "name": "osc-gyro", "version": "0.1", "summary": "OSC over UDP",
        "transport": {"kind": "udp", "default_port": 9000}, "rate_hz": 50,
        "sender_clock": {"unit": "us", "epoch": "arbitrary"},
        "messages": [
            {"kind": "gyro", "direction": "controller_to_host", "encoding": "osc", "address": "/gyro/rate",
             "arguments": [{"name": "t", "type": "i", "role": "sender_time"},
                           {"name": "x", "type": "f", "finite": True, "role": "rotation_rate.x"},
                           {"name": "y", "type": "d", "finite": True, "range": [-35, 35], "role": "rotation_rate.y"},
                           {"name": "who", "type": "s", "role": "controller_id"},
                           {"name": "on", "type": "T"}]},
            {"kind": "ping", "direction": "host_to_controller", "encoding": "osc", "address": "/ping", "arguments": [], "bundles": "refused"},
        ],
        "host": {"behaviour": "threshold", "quantity": "rotation_rate.y", "above": 3, "window": {"ms": 250, "clock": "sender"},
                 "stale": {"ignore": True}, "decision": "flick", "decision_values": ["rotation_rate.y"],
                 "reply": {"kind": "ping", "deadline_ms": 100}},
    }
    text = {
        "kinetrace_protocol": 1, "name": "csv-tilt", "version": "1", "summary": "CSV lines over TCP",
        "transport": {"kind": "tcp", "default_port": 7000, "framing": {"delimiter": "\n", "max_length": 256}},
        "rate_hz": 20,
        "vectors": [{"name": "tilt_sum", "summary": "gravity plus attitude", "sum_of": ["gravity", "attitude"]}],
        "messages": [{"kind": "tilt", "direction": "controller_to_host", "encoding": "text", "separator": ",", "max_length": 256,
                      "fields": [{"name": "tag", "type": "string", "constant": "T"},
                                 {"name": "seq", "type": "integer", "range": [0, 1000000], "role": "message_id"},
                                 {"name": "x", "type": "number", "finite": True, "role": "tilt_sum.x"}]}],
        "host": {"behaviour": "apply", "decision": "tilt", "decision_values": ["tilt_sum.x"], "requirement": "CSV-HOST-1"},
        "requirements": [{"id": "CSV-HOST-1", "level": "MUST", "text": "Apply every line."},
                         {"id": "CSV-NOTE-1", "level": "INFO", "text": "An observation."}],
    }
    prefixed = {
        "kinetrace_protocol": 1, "name": "boxed", "version": "2", "summary": "length-prefixed binary",
        "transport": {"kind": "tcp", "default_port": 7100,
                      "framing": {"length_prefix": {"width": 2, "byte_order": "big", "offset": 0, "counts_itself": False, "max_length": 64}}},
        "rate_hz": 100,
        "messages": [
            {"kind": "sample", "direction": "controller_to_host", "encoding": "binary", "byte_order": "big",
             "fields": [{"name": "magic", "type": "bytes", "length": 2, "constant": "4b54"},
                        {"name": "id", "type": "u8", "constant": 1},
                        {"name": "pad", "type": "padding", "length": 1},
                        {"name": "g", "type": "i16", "byte_order": "little", "range": [-2000, 2000]},
                        {"name": "ax", "type": "f32", "finite": True, "role": "user_acceleration.x"},
                        {"name": "sum", "type": "u8", "check": {"algorithm": "sum8", "from": 0, "to": 10}},
                        {"name": "crc", "type": "u16", "check": {"algorithm": "crc16_ccitt", "from": 0, "to": 11}}]},
            {"kind": "note", "direction": "controller_to_host", "encoding": "binary",
             "fields": [{"name": "magic", "type": "bytes", "length": 2, "constant": "4b54"},
                        {"name": "id", "type": "u8", "constant": 2},
                        {"name": "x", "type": "u8", "check": {"algorithm": "xor8", "from": 0, "to": 3}}]},
        ],
    }
    json_reply = {
        "kinetrace_protocol": 1, "name": "json-ack", "version": "1", "summary": "JSON both ways",
        "transport": {"kind": "udp", "default_port": 7200}, "rate_hz": 10,
        "sender_clock": {"unit": "ns", "epoch": "unix"},
        "messages": [
            {"kind": "move", "direction": "controller_to_host", "encoding": "json", "unknown_members": "refused", "repeated_members": "last",
             "members": [{"path": "op", "type": "string", "constant": "move"},
                         {"path": "t", "type": "integer", "role": "sender_time"},
                         {"path": "a.y", "type": "number", "role": "user_acceleration.y", "name": "ay"},
                         {"path": "n", "type": "string", "format": "uuid", "required": False, "role": "message_id"},
                         {"path": "live", "type": "boolean", "constant": True}]},
            {"kind": "ok", "direction": "host_to_controller", "encoding": "json",
             "members": [{"path": "op", "type": "string", "constant": "ok"},
                         {"path": "echo", "type": "integer", "role": "echo_time"},
                         {"path": "strength", "type": "number", "range": [0, 1]}]},
        ],
        "host": {"behaviour": "threshold", "quantity": "user_acceleration.y", "above": 0.5, "window": {"ms": 400, "clock": "sender"},
                 "stale": {"ignore": True, "resync_ms": 2000}, "decision": "jump",
                 "reply": {"kind": "ok", "deadline_ms": 50, "fields": {"strength": 1}}},
    }
    return [("an OSC declaration", osc), ("a text declaration with an own vector", text),
            ("a length-prefixed binary declaration", prefixed), ("a JSON declaration with a reply", json_reply)]


def broken_variants(base):
    """(what is wrong, document, where the schema must object, the keyword that fails there, text its message holds)."""
    out = []
    valid = dict(valid_variants())

    def variant(what, seed, change, path, keyword, mentions=""):
        doc = copy.deepcopy(base[seed] if seed in base else valid[seed])
        change(doc)
        out.append((what, doc, path, keyword, mentions))

    ml, kc, at, osc = "motionlink-v1", "keepcalm-json", "attitude-stream", "an OSC declaration"
    frame = lambda d: d["messages"][0]
    f = ["messages", 0, "fields"]
    m = ["messages", 0, "members"]
    variant("an unknown top-level member", ml, lambda d: d.update(rate=10), [], "additionalProperties", "rate")
    variant("an unknown field member (a typo)", ml, lambda d: frame(d)["fields"][1].update(finit=True), f + [1], "additionalProperties", "finit")
    variant("an unknown type name", ml, lambda d: frame(d)["fields"][1].update(type="float32"), f + [1, "type"], "enum")
    variant("a role with a bad axis", ml, lambda d: frame(d)["fields"][1].update(role="user_acceleration.w"), f + [1, "role"], "pattern")
    variant("a motion role on an integer field", ml, lambda d: frame(d)["fields"].insert(7, {"name": "g", "type": "u16", "role": "gravity.x"}), f + [7, "type"], "enum")
    variant("port 0", ml, lambda d: d["transport"].update(default_port=0), ["transport", "default_port"], "minimum")
    variant("a name with upper case", ml, lambda d: d.update(name="MotionLink-v1"), ["name"], "pattern")
    variant("no messages", ml, lambda d: d.pop("messages"), [], "required", "messages")
    variant("an empty message list", ml, lambda d: d.update(messages=[]), ["messages"], "minItems")
    variant("framing on UDP", ml, lambda d: d["transport"].update(framing={"fixed_length": 36}), ["transport"], "not")
    variant("TCP without framing", at, lambda d: d["transport"].pop("framing"), ["transport"], "required", "framing")
    variant("a length prefix 3 bytes wide", at, lambda d: d["transport"].update(framing={"length_prefix": {"width": 3, "byte_order": "big", "max_length": 64}}),
            ["transport", "framing", "length_prefix", "width"], "enum")
    variant("language version 2", ml, lambda d: d.update(kinetrace_protocol=2), ["kinetrace_protocol"], "const")
    variant("rate 0 Hz", ml, lambda d: d.update(rate_hz=0), ["rate_hz"], "minimum")
    variant("a CRC-32 in a u16", ml, lambda d: frame(d)["fields"][7].update(type="u16"), f + [7, "type"], "const")
    variant("bytes without a length", ml, lambda d: frame(d)["fields"].append({"name": "tail", "type": "bytes"}), f + [8], "required", "length")
    variant("a constant on a float", ml, lambda d: frame(d)["fields"][1].update(constant=1), f + [1], "not")
    variant("a u8 constant of 256", ml, lambda d: frame(d)["fields"].append({"name": "tag", "type": "u8", "constant": 256}), f + [8, "constant"], "maximum")
    variant("a multi-byte field with no byte order", ml, lambda d: frame(d).pop("byte_order"), f + [0], "required", "byte_order")
    variant("sender_time without a sender clock", ml, lambda d: d.pop("sender_clock"), [], "required", "sender_clock")
    variant("a sender clock without sender_time", kc, lambda d: d.update(sender_clock={"unit": "ms", "epoch": "unix"}), [], "not")
    variant("two own vectors", kc, lambda d: d["vectors"].append({"name": "other", "summary": "x", "sum_of": ["gravity"]}), ["vectors"], "maxItems")
    variant("an own vector named like a standard one", kc, lambda d: d["vectors"][0].update(name="gravity"), ["vectors", 0, "name"], "not")
    variant("a JSON format on a number", kc, lambda d: d["messages"][0]["members"][3].update(format="uuid"), m + [3], "not")
    variant("a JSON path of 9 names", kc, lambda d: d["messages"][0]["members"][3].update(path="a.b.c.d.e.f.g.h.i"), m + [3, "path"], "pattern")
    variant("a JSON kind mixed with a binary kind", ml, lambda d: d["messages"].append(copy.deepcopy(base[kc]["messages"][0])), ["messages", 2, "encoding"], "const")
    variant("17 message kinds", ml, lambda d: d.update(messages=[dict(frame(d), kind="k%d" % i) for i in range(17)]), ["messages"], "maxItems")
    variant("a kind named unknown", ml, lambda d: frame(d).update(kind="unknown"), ["messages", 0, "kind"], "not")
    variant("a stale rule on the arrival clock", kc, lambda d: d["host"].update(stale={"ignore": True}), ["host"], "not")
    variant("an apply host without decision_values", at, lambda d: d["host"].pop("decision_values"), ["host"], "required", "decision_values")
    variant("a reply on an apply host", at, lambda d: d["host"].update(reply={"kind": "attitude", "deadline_ms": 10}), ["host"], "additionalProperties", "reply")
    variant("a reply field set to a string", ml, lambda d: d["host"]["reply"]["fields"].update(intensity="1"), ["host", "reply", "fields", "intensity"], "type")
    variant("a requirement level that is not a key word or INFO", ml, lambda d: d["requirements"][0].update(level="MUSTN'T"), ["requirements", 0, "level"], "enum")
    variant("a lower-case requirement ID", ml, lambda d: frame(d).update(requirement="ml-valid-1"), ["messages", 0, "requirement"], "pattern")
    variant("an OSC address with a wildcard", osc, lambda d: frame(d).update(address="/gyro/*"), ["messages", 0, "address"], "pattern")
    variant("an OSC string argument with a range", osc, lambda d: frame(d)["arguments"][3].update(range=[0, 1]), ["messages", 0, "arguments", 3], "not")
    variant("an upper-case hex constant", "a length-prefixed binary declaration", lambda d: frame(d)["fields"][0].update(constant="4B54"),
            f + [0, "constant"], "pattern")
    return out


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
