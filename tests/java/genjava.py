#!/usr/bin/env python3
"""Java classes for the request and answer types of the engine's API.

    python3 tests/java/genjava.py api/openapi.json OUT_DIR [PACKAGE]

writes one class per object schema of the description (components, and the
inline bodies of operations, named after the operationId) into
OUT_DIR/<package path>/, for Jackson (jackson-databind 2.x). Fields are
public and named in camel case, bound to their JSON names; a field the
description requires and allows null is always written (null included);
an object that admits fields beyond its own keeps them (a map), so that a
value read and written again is the value read. Types the Java side needs
no class for (a free-form object, one of several types) are JsonNode.

A RuoYi team generating a full client would use openapi-generator or
similar (see docs/api.md); this script is what the repository's test
(api/client/java_test.go) uses to hold the description's types to what
javac and Jackson accept, with Debian's packages alone.
"""

import json
import keyword
import os
import re
import sys

JAVA_RESERVED = set("""abstract assert boolean break byte case catch char class const continue default
do double else enum extends final finally float for goto if implements import instanceof int interface
long native new package private protected public return short static strictfp super switch synchronized
this throw throws transient try void volatile while true false null""".split())


def camel(name, upper=False):
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    if not parts:
        return "value"
    out = parts[0] if not upper else parts[0][:1].upper() + parts[0][1:]
    out += "".join(p[:1].upper() + p[1:] for p in parts[1:])
    if out[0].isdigit():
        out = "_" + out
    return out + "_" if out in JAVA_RESERVED else out


class Generator:
    def __init__(self, doc, package):
        self.doc = doc
        self.package = package
        self.schemas = doc.get("components", {}).get("schemas", {})
        self.classes = {}  # name -> source
        self.pending = []  # (name, schema) to write

    def resolve(self, s):
        while isinstance(s, dict) and "$ref" in s:
            name = s["$ref"].rsplit("/", 1)[-1]
            s = self.schemas[name]
        return s

    def is_class(self, s):
        s = self.resolve(s)
        types = s.get("type")
        return isinstance(s, dict) and "properties" in s and (types in (None, "object") or types == ["object", "null"])

    def types(self, s):
        t = s.get("type")
        if t is None:
            return []
        return [t] if isinstance(t, str) else [x for x in t if x != "null"]

    def jtype(self, s, context):
        """The Java type of schema s; context names an inline class."""
        if "$ref" in s:
            name = s["$ref"].rsplit("/", 1)[-1]
            if self.is_class(s):
                self.want(name, self.schemas[name])
                return name
            return self.jtype(self.schemas[name], name)
        if "allOf" in s and len(s["allOf"]) == 1:
            return self.jtype(s["allOf"][0], context)
        alts = s.get("oneOf", s.get("anyOf"))
        if alts is not None:
            rest = [a for a in alts if a != {"type": "null"}]
            return self.jtype(rest[0], context) if len(rest) == 1 else "JsonNode"
        types = self.types(s)
        if not types and "const" in s:
            types = [{str: "string", bool: "boolean", int: "integer"}.get(type(s["const"]), "object")]
        if not types and "enum" in s and all(isinstance(v, str) for v in s["enum"]):
            types = ["string"]
        if len(types) != 1:
            return "JsonNode"
        t = types[0]
        if t == "string":
            return "String"
        if t == "integer":
            return "Long"
        if t == "number":
            return "Double"
        if t == "boolean":
            return "Boolean"
        if t == "array":
            return "List<%s>" % self.jtype(s.get("items", {}), context + "Item")
        if t == "object":
            if "properties" in s:
                self.want(context, s)
                return context
            ap = s.get("additionalProperties")
            if isinstance(ap, dict) and ap:
                return "Map<String, %s>" % self.jtype(ap, context + "Value")
            return "JsonNode"
        return "JsonNode"

    def want(self, name, s):
        if name not in self.classes:
            self.classes[name] = None
            self.pending.append((name, s))

    def write_class(self, name, s):
        required = set(s.get("required", []))
        lines = []
        for prop, ps in s.get("properties", {}).items():
            jt = self.jtype(ps, name + camel(prop, upper=True))
            rs = self.resolve(ps)
            nullable = "null" in (rs.get("type") if isinstance(rs.get("type"), list) else []) or any(
                isinstance(a, dict) and a.get("type") == "null" for a in rs.get("oneOf", [])) or jt == "JsonNode"
            if prop in required and nullable:
                lines.append("    @JsonInclude(JsonInclude.Include.ALWAYS)")
            lines.append('    @JsonProperty("%s")' % prop)
            lines.append("    public %s %s;" % (jt, camel(prop)))
        if s.get("additionalProperties") is not False:
            lines += [
                "",
                "    /** Fields beyond those described, kept as read. */",
                "    private final Map<String, JsonNode> other = new LinkedHashMap<>();",
                "    @JsonAnySetter public void set(String name, JsonNode value) { other.put(name, value); }",
                "    @JsonAnyGetter public Map<String, JsonNode> other() { return other; }",
            ]
        doc = (s.get("description") or name).replace("*/", "* /").strip().split("\n")[0]
        self.classes[name] = "\n".join([
            "package %s;" % self.package,
            "",
            "import com.fasterxml.jackson.annotation.*;",
            "import com.fasterxml.jackson.databind.JsonNode;",
            "import java.util.*;",
            "",
            "/** %s */" % doc,
            "@JsonInclude(JsonInclude.Include.NON_NULL)",
            "public class %s {" % name,
            *lines,
            "}",
            "",
        ])

    def run(self):
        for name, s in self.schemas.items():
            if self.is_class(s):
                self.want(name, s)
        for path, item in self.doc.get("paths", {}).items():
            for method, op in item.items():
                if not isinstance(op, dict) or "operationId" not in op:
                    continue
                base = camel(op["operationId"], upper=True)
                body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                if body is not None:
                    self.jtype(body, base + "Request")
                for status, r in op.get("responses", {}).items():
                    schema = r.get("content", {}).get("application/json", {}).get("schema")
                    if schema is not None and status.startswith("2"):
                        self.jtype(schema, base + "Response")
        while self.pending:
            name, s = self.pending.pop()
            self.write_class(name, s)
        return self.classes


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    package = sys.argv[3] if len(sys.argv) > 3 else "dev.blindexec.api"
    out = os.path.join(sys.argv[2], *package.split("."))
    os.makedirs(out, exist_ok=True)
    for name, src in sorted(Generator(doc, package).run().items()):
        with open(os.path.join(out, name + ".java"), "w") as f:
            f.write(src)


if __name__ == "__main__":
    main()
